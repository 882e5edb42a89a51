//! `$skill-name` mentions in the user's input.
//!
//! Free text is messy, so extraction is tolerant: a mention may sit in parentheses or
//! quotes or end a sentence (`use $pdf.`), and trailing `.`, `-`, `_` are dropped until a
//! known name is found. It is also careful: names are matched exactly (skill names are
//! lowercase, so a shell variable such as `$HOME` never matches), a `$` glued to a word
//! (`US$5`) or escaped (`\$pdf`) is no mention, and unknown names are ignored.

/// The known skills mentioned in `input`, in order of first mention, each once.
pub fn mentioned_skills(input: &str, known: impl Fn(&str) -> bool) -> Vec<String> {
    let bytes = input.as_bytes();
    let mut found: Vec<String> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'$' {
            i += 1;
            continue;
        }
        let glued = i > 0 && (bytes[i - 1] == b'\\' || bytes[i - 1].is_ascii_alphanumeric());
        let start = i + 1;
        let end = start
            + bytes[start..]
                .iter()
                .take_while(|b| is_name_byte(**b))
                .count();
        i = end.max(start);
        if glued || end == start {
            continue;
        }
        // Name bytes are ASCII, so both ends are character boundaries.
        let mut candidate = &input[start..end];
        loop {
            if known(candidate) {
                if !found.iter().any(|f| f == candidate) {
                    found.push(candidate.to_owned());
                }
                break;
            }
            match candidate.strip_suffix(['.', '-', '_']) {
                Some(shorter) if !shorter.is_empty() => candidate = shorter,
                _ => break,
            }
        }
    }
    found
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'_')
}
