//! The little Markdown reading bundles need: YAML front matter, the first heading and the
//! first paragraph. Deliberately line-based: SKILL.md and README files are read for a name
//! and a one-line description, not rendered.

/// The result of looking for `---` front matter at the top of a document.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FrontMatter<'a> {
    /// The document does not start with a `---` line.
    Absent,
    /// The YAML between the fences and the body after the closing fence.
    Present { yaml: &'a str, body: &'a str },
    /// A `---` opening line without a closing one.
    Unclosed,
}

/// Splits `---\n<yaml>\n---\n<body>`. The closing fence may also be `...`, as YAML allows.
pub(crate) fn split_front_matter(text: &str) -> FrontMatter<'_> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = strip_line(text, "---") else {
        return FrontMatter::Absent;
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let trimmed = line.trim_end_matches(['\n', '\r']);
        if trimmed == "---" || trimmed == "..." {
            return FrontMatter::Present {
                yaml: &rest[..offset],
                body: &rest[offset + line.len()..],
            };
        }
        offset += line.len();
    }
    FrontMatter::Unclosed
}

/// `text` without its first line when that line is exactly `fence`.
fn strip_line<'a>(text: &'a str, fence: &str) -> Option<&'a str> {
    let rest = text.strip_prefix(fence)?;
    rest.strip_prefix("\r\n")
        .or_else(|| rest.strip_prefix('\n'))
}

/// The text of the first `#` heading and the lines after it.
pub(crate) fn first_heading(text: &str) -> Option<(String, &str)> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        offset += line.len();
        let trimmed = line.trim();
        if trimmed.starts_with('#') {
            let title = trimmed.trim_start_matches('#').trim();
            if !title.is_empty() {
                return Some((title.to_owned(), &text[offset..]));
            }
        }
    }
    None
}

/// The first paragraph that is not a heading, its lines joined with spaces.
pub(crate) fn first_paragraph(text: &str) -> String {
    let mut lines: Vec<&str> = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim();
        let ends_paragraph = trimmed.is_empty() || trimmed.starts_with('#');
        if ends_paragraph && !lines.is_empty() {
            break;
        }
        if !ends_paragraph {
            lines.push(trimmed);
        }
    }
    lines.join(" ")
}

/// Shortens `text` to at most `max` characters, on a character boundary, marking the cut.
pub(crate) fn truncate(text: String, max: usize) -> String {
    match crate::text::char_prefix(&text, max) {
        None => text,
        Some(kept) => format!("{}{}", kept.trim_end(), crate::text::CUT_MARK),
    }
}
