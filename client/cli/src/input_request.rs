//! Requests for input (approvals of kind INPUT: an MCP server asks a person for the fields
//! of a schema): how `approvals` shows them, and the answer `approve` sends, given with
//! `--answer JSON` or asked field by field on the terminal.

use std::io::BufRead;

use odyssey_api::v1 as pb;
use serde_json::Value;

use super::error::CliError;
use super::json::struct_to_json;

pub(crate) fn is_input(a: &pb::Approval) -> bool {
    a.kind == pb::ApprovalKind::Input as i32
}

/// The fields a request asks for, one per line: `name (string, required): description`.
pub(crate) fn fields(a: &pb::Approval) -> Vec<String> {
    let schema = a
        .requested_schema
        .as_ref()
        .map(struct_to_json)
        .unwrap_or(Value::Null);
    let required = required(&schema);
    properties(&schema)
        .iter()
        .map(|(name, property)| {
            let mut line = format!("{} ({}", visible(name), kind(property));
            if required.contains(&name.as_str()) {
                line.push_str(", required");
            }
            line.push(')');
            if let Some(text) = property
                .get("description")
                .or_else(|| property.get("title"))
                .and_then(Value::as_str)
            {
                line.push_str(&format!(": {}", visible(text)));
            }
            line
        })
        .collect()
}

/// The message and the fields, indented: what a person reads before answering.
pub(crate) fn block(a: &pb::Approval, indent: &str) -> String {
    let mut lines = vec![format!(
        "{indent}{}",
        odyssey_visible::escape_line(&a.display)
    )];
    for field in fields(a) {
        lines.push(format!("{indent}  - {field}"));
    }
    lines.join("\n")
}

/// `run` and an MCP server's request for input of the turn it follows: `--auto-deny`
/// declines it; otherwise it is left to `odyssey approve --answer` (or `deny`), and how to
/// answer is printed, with the fields asked. (`--auto-approve` has no answer to give.)
pub(crate) async fn respond(
    client: &odyssey_client::OdysseyClient,
    auto: super::approval::AutoAnswer,
    server: &str,
    output: &mut super::output::Output<'_>,
    request: &pb::HumanInputRequested,
) -> Result<(), CliError> {
    let asked = pb::Approval {
        kind: pb::ApprovalKind::Input as i32,
        display: request.display.clone(),
        requested_schema: request.requested_schema.clone(),
        ..Default::default()
    };
    let id = odyssey_visible::escape_line(&request.request_id);
    let server_name = odyssey_visible::escape_line(&request.server);
    if auto.auto_deny {
        writeln!(
            output.err,
            "? MCP server {server_name} asks for input — declined (--auto-deny):\n{}",
            block(&asked, "    ")
        )?;
        return match client
            .resolve_input(&request.request_id, pb::HumanInputAction::Decline, None)
            .await
        {
            Ok(_) => Ok(()),
            // Answered elsewhere, timed out or cancelled meanwhile: the turn goes on.
            Err(e) if e.code() == Some(tonic::Code::FailedPrecondition) => Ok(()),
            Err(e) => Err(e.into()),
        };
    }
    let program = if server == super::DEFAULT_SERVER {
        "odyssey".to_owned()
    } else {
        format!("odyssey --server {server}")
    };
    writeln!(
        output.err,
        "? MCP server {server_name} asks for input (request {id}):\n{}\n  \
         the turn waits until someone answers:\n    \
         {program} approve {id} --answer '{{...}}'   (a JSON object of the fields)\n    \
         {program} deny {id}                        (declines; --cancel cancels)",
        block(&asked, "    ")
    )?;
    Ok(())
}

/// `--answer` as the API's Struct: it must be a JSON object.
pub(crate) fn parse_answer(text: &str) -> Result<prost_types::Struct, CliError> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(to_struct(map)),
        Ok(_) => Err(CliError::Usage(
            "--answer must be a JSON object of the requested fields".into(),
        )),
        Err(e) => Err(CliError::Usage(format!("--answer is not JSON: {e}"))),
    }
}

/// Asks each field on `err`, reading the answers from `input`; an empty line leaves the
/// field out (the server says if it was required).
pub(crate) fn prompt(
    a: &pb::Approval,
    input: &mut dyn BufRead,
    err: &mut dyn std::io::Write,
) -> Result<prost_types::Struct, CliError> {
    let schema = a
        .requested_schema
        .as_ref()
        .map(struct_to_json)
        .unwrap_or(Value::Null);
    writeln!(err, "{}", odyssey_visible::escape_line(&a.display))?;
    let required = required(&schema);
    let mut answer = serde_json::Map::new();
    for (name, property) in properties(&schema) {
        let choices = choices(&property);
        let mut ask = format!("{} ({}", visible(&name), kind(&property));
        if required.contains(&name.as_str()) {
            ask.push_str(", required");
        }
        ask.push(')');
        if !choices.is_empty() {
            ask.push_str(&format!(" [{}]", choices.join(", ")));
        }
        loop {
            write!(err, "{ask}: ")?;
            err.flush()?;
            let mut line = String::new();
            if input.read_line(&mut line)? == 0 {
                return Err(CliError::Usage(
                    "the input ended before every field was answered".into(),
                ));
            }
            let line = line.trim();
            if line.is_empty() {
                break;
            }
            match value_of(&property, line) {
                Some(value) => {
                    answer.insert(name.clone(), value);
                    break;
                }
                None => writeln!(err, "  that is not a valid {}; try again", kind(&property))?,
            }
        }
    }
    Ok(to_struct(answer))
}

fn properties(schema: &Value) -> Vec<(String, Value)> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

fn required(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn kind(property: &Value) -> String {
    let base = property
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("value");
    match (base, property.get("format").and_then(Value::as_str)) {
        ("array", _) => "choices, comma-separated".to_owned(),
        (base, Some(format)) => format!("{base}, {}", visible(format)),
        (base, None) => base.to_owned(),
    }
}

fn choices(property: &Value) -> Vec<String> {
    let of = |schema: &Value| -> Vec<String> {
        if let Some(list) = schema.get("enum").and_then(Value::as_array) {
            return list.iter().filter_map(Value::as_str).map(visible).collect();
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(list) = schema.get(key).and_then(Value::as_array) {
                return list
                    .iter()
                    .filter_map(|c| c.get("const").and_then(Value::as_str))
                    .map(visible)
                    .collect();
            }
        }
        Vec::new()
    };
    match property.get("items") {
        Some(items) => of(items),
        None => of(property),
    }
}

/// A typed line as the property's type, or `None` when it is not one.
fn value_of(property: &Value, line: &str) -> Option<Value> {
    match property.get("type").and_then(Value::as_str) {
        Some("integer") => line.parse::<i64>().ok().map(Value::from),
        Some("number") => line
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number),
        Some("boolean") => match line.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Some(Value::Bool(true)),
            "n" | "no" | "false" => Some(Value::Bool(false)),
            _ => None,
        },
        Some("array") => Some(Value::Array(
            line.split(',')
                .map(|s| Value::String(s.trim().to_owned()))
                .filter(|v| v.as_str().is_some_and(|s| !s.is_empty()))
                .collect(),
        )),
        _ => Some(Value::String(line.to_owned())),
    }
}

fn visible(text: &str) -> String {
    odyssey_visible::escape_line(text).into_owned()
}

fn to_struct(map: serde_json::Map<String, Value>) -> prost_types::Struct {
    prost_types::Struct {
        fields: map.into_iter().map(|(k, v)| (k, to_value(v))).collect(),
    }
}

fn to_value(value: Value) -> prost_types::Value {
    use prost_types::value::Kind;
    let kind = match value {
        Value::Null => Kind::NullValue(0),
        Value::Bool(b) => Kind::BoolValue(b),
        Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => Kind::StringValue(s),
        Value::Array(items) => Kind::ListValue(prost_types::ListValue {
            values: items.into_iter().map(to_value).collect(),
        }),
        Value::Object(map) => Kind::StructValue(to_struct(map)),
    };
    prost_types::Value { kind: Some(kind) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> pb::Approval {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Your name"},
                "age": {"type": "integer"},
                "ok": {"type": "boolean"},
            },
            "required": ["name"],
        });
        let Value::Object(schema) = schema else {
            unreachable!()
        };
        pb::Approval {
            kind: pb::ApprovalKind::Input as i32,
            display: "Who are you?".into(),
            requested_schema: Some(to_struct(schema)),
            ..Default::default()
        }
    }

    #[test]
    fn a_request_shows_its_fields_and_prompts_for_each() {
        let a = request();
        assert_eq!(
            fields(&a),
            vec![
                "age (integer)",
                "name (string, required): Your name",
                "ok (boolean)"
            ]
        );
        let mut input = std::io::Cursor::new("old\n36\nAda\nyes\n");
        let mut err = Vec::new();
        let answer = prompt(&a, &mut input, &mut err).unwrap();
        assert_eq!(
            struct_to_json(&answer),
            serde_json::json!({"age": 36, "name": "Ada", "ok": true})
        );
        let asked = String::from_utf8(err).unwrap();
        assert!(asked.contains("not a valid integer; try again"), "{asked}");
        assert!(parse_answer("[1]").is_err());
        assert!(parse_answer("{\"name\": \"Ada\"}").is_ok());
    }
}
