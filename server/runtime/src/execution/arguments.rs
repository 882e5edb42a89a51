//! Tool-call arguments as a model wrote them, bounded before they reach an event. Events
//! carry parsed arguments as a protobuf `Struct`, and decoders refuse deep nesting (Python's
//! past about 33 JSON levels, prost's past 100 messages): one hostile call nested 120 levels
//! deep made every subscriber's stream fail. So arguments nested deeper than
//! [`MAX_DEPTH`] or longer than [`MAX_BYTES`] are refused before anything is recorded: the
//! call does not run, its events and the turn's record hold a note instead, and the model
//! gets an error result naming the limit.

/// Deepest nesting of objects and arrays accepted (`{"a": 1}` is 1 level).
pub const MAX_DEPTH: usize = 20;
/// Largest arguments accepted, as the model's JSON text.
pub const MAX_BYTES: usize = 256 * 1024;

/// What stands in for refused arguments in the turn's record (and what the model is
/// reminded it sent): an empty object, valid for every provider's wire format.
pub const REFUSED_PLACEHOLDER: &str = "{}";

/// Why `raw` (a tool call's arguments) is refused, or `None` when it is within bounds.
/// Malformed JSON is not refused here: the tool set answers it as such, and it is recorded
/// as text, which every decoder reads.
pub fn refusal(raw: &str) -> Option<String> {
    if raw.len() > MAX_BYTES {
        return Some(format!(
            "the arguments are {} bytes long; the limit is {MAX_BYTES} bytes ({} KiB): \
             send smaller arguments",
            raw.len(),
            MAX_BYTES / 1024
        ));
    }
    let depth = depth(raw);
    (depth > MAX_DEPTH).then(|| {
        format!(
            "the arguments nest objects and arrays {depth} levels deep; the limit is \
             {MAX_DEPTH} levels: send flatter arguments"
        )
    })
}

/// The deepest nesting of `{` and `[` in a JSON text, strings skipped. Counted on the
/// text, so a document too deep for the parser is measured all the same.
fn depth(raw: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for byte in raw.bytes() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `{"a": {"a": … 1 …}}`, `levels` objects deep.
    fn nested(levels: usize) -> String {
        format!("{}1{}", "{\"a\":".repeat(levels), "}".repeat(levels))
    }

    #[test]
    fn depth_counts_objects_and_arrays_outside_strings() {
        assert_eq!(depth("1"), 0);
        assert_eq!(depth("{}"), 1);
        assert_eq!(depth(r#"{"a": [1, {"b": []}]}"#), 4);
        assert_eq!(depth(r#"{"a": "{{{[[[", "b": "\"{"}"#), 1);
        assert_eq!(depth(&nested(120)), 120);
    }

    /// Issue 11 item 5: arguments deeper than 20 levels or larger than 256 KiB are refused,
    /// naming the limit; the deepest and the largest allowed are not.
    #[test]
    fn arguments_beyond_the_limits_are_refused_naming_them() {
        assert_eq!(refusal(&nested(MAX_DEPTH)), None);
        let deep = refusal(&nested(120)).expect("refused");
        assert!(
            deep.contains("120 levels") && deep.contains("limit is 20"),
            "{deep}"
        );
        assert!(refusal(&nested(MAX_DEPTH + 1)).is_some());

        let at_limit = format!("{{\"text\": \"{}\"}}", "x".repeat(MAX_BYTES - 12));
        assert_eq!(at_limit.len(), MAX_BYTES);
        assert_eq!(refusal(&at_limit), None);
        let large = format!("{{\"text\": \"{}\"}}", "x".repeat(MAX_BYTES));
        let message = refusal(&large).expect("refused");
        assert!(message.contains("262144 bytes (256 KiB)"), "{message}");

        assert_eq!(
            refusal("not json {"),
            None,
            "malformed is answered elsewhere"
        );
    }
}
