//! What an `allow_always` decision is remembered for.

use serde_json::Value;

use crate::permissions::rules::BASH_TOOL;

/// What `allow_always` is remembered for: for Bash the exact command string (not its
/// timeout), for other tools the exact arguments.
pub(super) fn argument_key(tool: &str, arguments: &Value) -> String {
    if tool == BASH_TOOL
        && let Some(command) = arguments.get("command").and_then(Value::as_str)
    {
        return command.to_owned();
    }
    canonical_json(arguments)
}

/// JSON with object keys sorted, so equal arguments give equal keys whatever their order.
fn canonical_json(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let body: Vec<String> = entries
                .into_iter()
                .map(|(k, v)| format!("{}:{}", Value::String(k.clone()), canonical_json(v)))
                .collect();
            format!("{{{}}}", body.join(","))
        }
        Value::Array(items) => {
            let body: Vec<String> = items.iter().map(canonical_json).collect();
            format!("[{}]", body.join(","))
        }
        other => other.to_string(),
    }
}
