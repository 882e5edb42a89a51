//! What file bodies become in recorded arguments: their size and digest. Enough to tell
//! two calls apart or check a file against a call, never the text itself (file bodies can
//! hold secrets, and they would bloat every session log).

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// `{"bytes": N, "sha256": "<hex>"}` of a text argument. A value of another type (a bad
/// call) is summarized by its JSON text, so nothing of it is recorded either.
pub(crate) fn text_summary(value: &Value) -> Value {
    let text = match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    json!({
        "bytes": text.len(),
        "sha256": hex::encode(Sha256::digest(text.as_bytes())),
    })
}

/// `arguments` with each of `fields` replaced by its [`text_summary`]. Arguments that are
/// not an object are replaced whole: they cannot be a valid call and may hold anything.
pub(crate) fn summarize_fields(arguments: &Value, fields: &[&str]) -> Value {
    let Some(object) = arguments.as_object() else {
        return json!({ "invalid_arguments": text_summary(arguments) });
    };
    let mut out = object.clone();
    for field in fields {
        if let Some(value) = out.get_mut(*field) {
            *value = text_summary(value);
        }
    }
    Value::Object(out)
}
