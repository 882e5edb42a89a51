//! Small text rules shared by the file tools, so Read, Edit and Grep agree on what a text
//! file is and how long lines are cut.

/// How much of a file's start is looked at to tell binary from text (as git and grep do).
pub(crate) const SNIFF_BYTES: usize = 8 * 1024;

/// Whether `bytes` (a file's start) looks binary: it holds a NUL byte within its first
/// [`SNIFF_BYTES`]. Text in the encodings models work with never does.
pub(crate) fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(SNIFF_BYTES)].contains(&0)
}

/// `line` cut to at most `max_chars` characters, with a marker saying how much was cut, so
/// one minified line cannot fill the model's context.
pub(crate) fn clip_line(line: &str, max_chars: usize) -> String {
    match crate::text::char_prefix(line, max_chars) {
        None => line.to_owned(),
        Some(kept) => {
            let rest = line[kept.len()..].chars().count();
            format!("{kept}… [{rest} more characters]")
        }
    }
}

/// A line without its line ending (`\n` or `\r\n`).
pub(crate) fn trim_eol(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
}

/// Sizes as people read them.
pub(crate) fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}
