//! Error messages without the text they quote. serde's messages quote the values they
//! refuse (`invalid type: string "…", expected u64`), and the values in session logs and
//! memory files are prompts and answers: such a message may reach the server log and a
//! quarantine reason only with the quotes emptied.

/// `text` with every double-quoted string (backslash escapes honoured) replaced by `"…"`.
pub fn without_quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '"' {
            out.push(c);
            continue;
        }
        out.push_str("\"…\"");
        let mut escaped = false;
        for inner in chars.by_ref() {
            match inner {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => break,
                _ => {}
            }
        }
    }
    out
}

/// A JSON error as it may be logged: its kind and position, and no quoted value.
pub fn json_error(error: &serde_json::Error) -> String {
    without_quoted(&error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_values_are_emptied_and_the_rest_kept() {
        assert_eq!(
            without_quoted(
                r#"invalid type: string "my \"secret\" prompt", expected u64 at line 1 column 30"#
            ),
            r#"invalid type: string "…", expected u64 at line 1 column 30"#
        );
        assert_eq!(without_quoted("missing field `seq`"), "missing field `seq`");
        assert_eq!(without_quoted(r#"cut "open"#), r#"cut "…""#);
    }

    #[test]
    fn json_errors_lose_the_values_they_quote() {
        let error = serde_json::from_str::<u64>(r#""the user's words""#).unwrap_err();
        let shown = json_error(&error);
        assert!(!shown.contains("user's words"), "{shown}");
        assert!(shown.contains("invalid type"), "{shown}");
    }
}
