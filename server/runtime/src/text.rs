//! Shortening text for messages, events and prompts, always on a character boundary (never
//! inside a UTF-8 sequence), with a mark where it was cut.

/// The mark left where text was cut.
pub const CUT_MARK: char = '…';

/// The first `max` characters of `text`, or `None` when it has no more than that.
pub fn char_prefix(text: &str, max: usize) -> Option<&str> {
    text.char_indices().nth(max).map(|(cut, _)| &text[..cut])
}

/// `text` cut to at most `max` characters, [`CUT_MARK`] marking the cut.
pub fn shorten(text: &str, max: usize) -> String {
    match char_prefix(text, max) {
        Some(prefix) => format!("{prefix}{CUT_MARK}"),
        None => text.to_owned(),
    }
}

/// The longest prefix of `text` of at most `max` bytes that ends on a character boundary.
pub fn byte_prefix(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_count_characters_and_keep_them_whole() {
        assert_eq!(shorten("héllo", 2), "hé…");
        assert_eq!(shorten("héllo", 5), "héllo");
        assert_eq!(char_prefix("ab", 2), None);
        assert_eq!(byte_prefix("héllo", 2), "h");
        assert_eq!(byte_prefix("héllo", 3), "hé");
        assert_eq!(byte_prefix("hi", 10), "hi");
    }
}
