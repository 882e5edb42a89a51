//! Text Odyssey did not write (a model's answer, tool arguments and results, file names,
//! bundle descriptions, command output) made safe to show a person.
//!
//! A terminal acts on some characters instead of drawing them: ESC starts sequences that
//! clear the screen, recolour text, set the window title or write the clipboard (OSC 52);
//! `\r` returns to the start of the line so later text overwrites earlier text; the
//! bidirectional overrides and isolates reorder what is drawn ("Trojan Source"). Shown raw,
//! such text can make a person approve `ls -la` while `rm -rf ~` runs. Here every such
//! character becomes a visible escape (`\x1b`, `\r`, `\u202e`), so what is shown is what
//! the text holds.
//!
//! The server computes the display form of approval requests with these rules and the
//! CLI renders everything it did not produce with them, so both show the same thing.
//! Backslashes are left as they are: a text may spell `\x1b` itself, which is why callers
//! also say when a text [contains control characters](has_controls).

use std::borrow::Cow;

/// The characters shown as escapes, as inclusive ranges. Newline and tab are not here:
/// they lay text out without hiding any of it ([`escape_line`] shows them too).
const HIDDEN: [(char, char); 5] = [
    // C0 controls before tab: NUL, BEL, backspace, ...
    ('\u{0}', '\u{8}'),
    // C0 controls after newline: vertical tab, form feed, carriage return, ESC, ...
    ('\u{b}', '\u{1f}'),
    // DEL and the C1 controls (among them the one-character CSI and OSC, U+009B, U+009D).
    ('\u{7f}', '\u{9f}'),
    // Bidirectional embeddings and overrides: LRE, RLE, PDF, LRO, RLO.
    ('\u{202a}', '\u{202e}'),
    // Bidirectional isolates: LRI, RLI, FSI, PDI.
    ('\u{2066}', '\u{2069}'),
];

/// Whether the terminal would act on `c` instead of drawing it (newline and tab aside).
pub fn is_control(c: char) -> bool {
    HIDDEN
        .iter()
        .any(|&(first, last)| (first..=last).contains(&c))
}

/// Whether `text` holds any character [`escape`] shows as an escape.
pub fn has_controls(text: &str) -> bool {
    text.chars().any(is_control)
}

/// `text` with every control character (newline and tab aside) shown as an escape:
/// `\r` for a carriage return, `\xNN` for the other ASCII controls (`\x1b` for ESC, `\x7f`
/// for DEL), `\uNNNN` for C1 controls and bidirectional overrides (`\u202e`). Text with
/// none is returned as it is.
pub fn escape(text: &str) -> Cow<'_, str> {
    escape_where(text, is_control)
}

/// [`escape`], and newlines and tabs as `\n` and `\t` too: the text on one line, for a
/// table cell or a one-line summary.
pub fn escape_line(text: &str) -> Cow<'_, str> {
    escape_where(text, |c| c == '\n' || c == '\t' || is_control(c))
}

fn escape_where(text: &str, shown: impl Fn(char) -> bool) -> Cow<'_, str> {
    let Some(start) = text.find(&shown) else {
        return Cow::Borrowed(text);
    };
    let mut escaped = String::with_capacity(text.len() + 8);
    escaped.push_str(&text[..start]);
    for c in text[start..].chars() {
        if shown(c) {
            push_escape(&mut escaped, c);
        } else {
            escaped.push(c);
        }
    }
    Cow::Owned(escaped)
}

fn push_escape(out: &mut String, c: char) {
    match c {
        '\r' => out.push_str("\\r"),
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        c if c.is_ascii() => out.push_str(&format!("\\x{:02x}", u32::from(c))),
        c => out.push_str(&format!("\\u{:04x}", u32::from(c))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        for text in [
            "",
            "ls -la",
            "naïve café ✓ 日本語",
            "a\\x1b b",
            "two\nlines\tand tab",
        ] {
            assert!(
                matches!(escape(text), Cow::Borrowed(t) if t == text),
                "{text:?}"
            );
            assert!(!has_controls(text), "{text:?}");
        }
    }

    #[test]
    fn escape_sequences_cannot_reach_the_terminal() {
        // CSI: clear the screen, recolour; OSC 0: the title; OSC 52: the clipboard.
        assert_eq!(
            escape("before \x1b[2J\x1b[31mRED\x1b]0;TITLE\x07 after"),
            "before \\x1b[2J\\x1b[31mRED\\x1b]0;TITLE\\x07 after"
        );
        assert_eq!(
            escape("\x1b]52;c;cm0gLXJmIH4=\x1b\\"),
            "\\x1b]52;c;cm0gLXJmIH4=\\x1b\\"
        );
        // The single-character CSI and OSC of C1 (U+009B, U+009D).
        assert_eq!(
            escape("\u{9b}2J\u{9d}0;t\u{9c}"),
            "\\u009b2J\\u009d0;t\\u009c"
        );
    }

    #[test]
    fn a_carriage_return_cannot_overwrite_the_line() {
        assert_eq!(
            escape("rm -rf ~/important \r\x1b[2Kls -la"),
            "rm -rf ~/important \\r\\x1b[2Kls -la"
        );
    }

    #[test]
    fn bidi_overrides_and_isolates_are_shown() {
        assert_eq!(escape("invoice\u{202e}fdp.exe"), "invoice\\u202efdp.exe");
        for c in [
            '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{2066}', '\u{2069}',
        ] {
            assert!(is_control(c), "{c:?}");
        }
        // Marks and ordinary right-to-left text are drawn as they are.
        for c in [
            '\u{200e}', '\u{200f}', 'א', '\u{2065}', '\u{206a}', '\u{2029}',
        ] {
            assert!(!is_control(c), "{c:?}");
        }
    }

    #[test]
    fn every_control_has_its_escape() {
        let cases = [
            ('\u{0}', "\\x00"),
            ('\u{7}', "\\x07"),
            ('\u{8}', "\\x08"),
            ('\u{b}', "\\x0b"),
            ('\u{c}', "\\x0c"),
            ('\r', "\\r"),
            ('\u{1b}', "\\x1b"),
            ('\u{1f}', "\\x1f"),
            ('\u{7f}', "\\x7f"),
            ('\u{80}', "\\u0080"),
            ('\u{85}', "\\u0085"),
            ('\u{9f}', "\\u009f"),
            ('\u{202e}', "\\u202e"),
            ('\u{2068}', "\\u2068"),
        ];
        for (c, shown) in cases {
            assert_eq!(escape(&c.to_string()), shown, "{c:?}");
            assert!(has_controls(&format!("a{c}b")), "{c:?}");
        }
        // Everything in the ranges is escaped, and the neighbours are not.
        for &(first, last) in &HIDDEN {
            for c in first..=last {
                assert!(escape(&c.to_string()).starts_with('\\'), "{c:?}");
            }
        }
        for c in [' ', '~', '\u{a0}', '\u{2029}', '\u{206a}'] {
            assert_eq!(escape(&c.to_string()), c.to_string(), "{c:?}");
        }
    }

    #[test]
    fn newlines_and_tabs_stay_unless_the_text_must_fit_one_line() {
        assert_eq!(escape("a\n\tb\r\n"), "a\n\tb\\r\n");
        assert_eq!(escape_line("a\n\tb\r\n"), "a\\n\\tb\\r\\n");
        assert_eq!(escape_line("one line"), "one line");
        assert!(!has_controls("a\n\tb"));
    }

    #[test]
    fn escaping_twice_changes_nothing_more() {
        let text = "x\x1b[2K\ry\u{202e}z\u{9b}\n";
        let once = escape(text).into_owned();
        assert_eq!(escape(&once), once);
        let line = escape_line(text).into_owned();
        assert_eq!(escape_line(&line), line);
        assert!(!has_controls(&once));
    }
}
