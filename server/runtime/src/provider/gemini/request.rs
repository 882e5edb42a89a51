//! The `generateContent` request body.
//!
//! Shape: <https://ai.google.dev/api/generate-content>. The system prompt (and any system
//! message in the history) goes to `systemInstruction`; the conversation to `contents`,
//! with `model` for the assistant role. Gemini pairs a function result with its call by
//! function name, so each tool result is sent as a `functionResponse` part carrying the
//! name of the call it answers, in a `user` turn. Adjacent turns of the same role are
//! merged, because Gemini expects the roles to alternate. A tool result's images follow
//! its `functionResponse` as `inlineData` parts of the same turn.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use crate::chat::{ChatMessage, Role};
use crate::provider::{ModelRequest, ToolSpec, takes_images};

/// Joins a tool call id and the thought signature of its `functionCall` part (see the
/// decoder): the id is the only field that carries it back to the next request.
pub(super) const SIGNATURE_SEPARATOR: &str = "#sig:";

/// JSON-schema keywords Gemini's `Schema` (an OpenAPI 3.0 subset) rejects with a 400.
/// Tool schemas written for other providers use them freely; dropping them only loosens
/// the description of the arguments, which the tool validates itself anyway.
pub(super) const UNSUPPORTED_SCHEMA_KEYS: [&str; 11] = [
    "$schema",
    "$id",
    "$ref",
    "$defs",
    "$comment",
    "definitions",
    "additionalProperties",
    "unevaluatedProperties",
    "patternProperties",
    "const",
    "examples",
];

/// Body keys `extra_body` may not replace: they decide what we send.
const PROTECTED_KEYS: [&str; 3] = ["contents", "systemInstruction", "tools"];

/// Builds the JSON body for `request`.
pub(super) fn body(request: &ModelRequest) -> Value {
    let mut body = Map::new();
    let system: Vec<&str> = std::iter::once(request.system_prompt.as_str())
        .chain(
            request
                .messages
                .iter()
                .filter(|m| m.role == Role::System)
                .map(|m| m.content.as_str()),
        )
        .filter(|text| !text.is_empty())
        .collect();
    if !system.is_empty() {
        body.insert(
            "systemInstruction".into(),
            json!({ "parts": [{ "text": system.join("\n\n") }] }),
        );
    }
    body.insert(
        "contents".into(),
        Value::Array(contents(&request.messages, takes_images(&request.model))),
    );
    if !request.tools.is_empty() {
        let declarations: Vec<Value> = request.tools.iter().map(declaration).collect();
        body.insert(
            "tools".into(),
            json!([{ "functionDeclarations": declarations }]),
        );
    }
    let config = generation_config(request);
    if !config.is_empty() {
        body.insert("generationConfig".into(), Value::Object(config));
    }
    if let Some(Value::Object(extra)) = request.model.config_value("extra_body") {
        for (key, value) in extra {
            if PROTECTED_KEYS.contains(&key.as_str()) {
                tracing::warn!(key = %key, "model config extra_body may not replace this request field; ignored");
                continue;
            }
            body.insert(key.clone(), value.clone());
        }
    }
    Value::Object(body)
}

/// The conversation as Gemini turns, same-role neighbours merged.
fn contents(messages: &[ChatMessage], images: bool) -> Vec<Value> {
    let mut names: HashMap<&str, &str> = HashMap::new();
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, parts) = match message.role {
            Role::System => continue,
            Role::User => ("user", vec![json!({ "text": message.content })]),
            Role::Assistant => {
                let mut parts = Vec::new();
                if !message.content.is_empty() {
                    parts.push(json!({ "text": message.content }));
                }
                for call in &message.tool_calls {
                    names.insert(call.id.as_str(), call.name.as_str());
                    parts.push(function_call(&call.id, &call.name, &call.arguments));
                }
                if parts.is_empty() {
                    continue;
                }
                ("model", parts)
            }
            Role::Tool => {
                let id = message.tool_call_id.as_deref().unwrap_or_default();
                let name = names.get(id).copied().unwrap_or(id);
                let key = if message.is_error { "error" } else { "content" };
                let response = json!({
                    "functionResponse": { "name": name, "response": { key: message.content } }
                });
                let images = message.images.iter().filter(|_| images).map(|image| {
                    json!({ "inlineData": { "mimeType": image.mime_type, "data": image.data } })
                });
                ("user", std::iter::once(response).chain(images).collect())
            }
        };
        match turns.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(parts),
            _ => turns.push((role, parts)),
        }
    }
    turns
        .into_iter()
        .map(|(role, parts)| json!({ "role": role, "parts": parts }))
        .collect()
}

/// A `functionCall` part. Arguments that are not a JSON object (a model's malformed
/// output, kept verbatim in the history) are wrapped so the request stays valid.
fn function_call(id: &str, name: &str, arguments: &str) -> Value {
    let args = match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(args)) => Value::Object(args),
        _ if arguments.trim().is_empty() => json!({}),
        _ => json!({ "arguments": arguments }),
    };
    let mut part = json!({ "functionCall": { "name": name, "args": args } });
    if let Some((_, signature)) = id.split_once(SIGNATURE_SEPARATOR) {
        part["thoughtSignature"] = Value::String(signature.to_owned());
    }
    part
}

fn declaration(tool: &ToolSpec) -> Value {
    let mut declaration = json!({ "name": tool.name, "description": tool.description });
    let parameters = clean_schema(&tool.parameters);
    // Gemini refuses an OBJECT schema without properties; a tool without arguments simply
    // declares no parameters.
    let has_properties = parameters
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    if has_properties {
        declaration["parameters"] = parameters;
    }
    declaration
}

/// A copy of `schema` without [`UNSUPPORTED_SCHEMA_KEYS`], recursively through
/// `properties`, `items` and `anyOf`, with a nullable type list (`["string", "null"]`,
/// which Gemini rejects) turned into its `nullable: true` form.
pub(super) fn clean_schema(schema: &Value) -> Value {
    let Value::Object(object) = schema else {
        return schema.clone();
    };
    let mut clean = Map::new();
    for (key, value) in object {
        if UNSUPPORTED_SCHEMA_KEYS.contains(&key.as_str()) {
            continue;
        }
        let value = match key.as_str() {
            "properties" => match value {
                Value::Object(properties) => Value::Object(
                    properties
                        .iter()
                        .map(|(name, schema)| (name.clone(), clean_schema(schema)))
                        .collect(),
                ),
                other => other.clone(),
            },
            "items" => clean_schema(value),
            "anyOf" | "oneOf" => match value {
                Value::Array(options) => Value::Array(options.iter().map(clean_schema).collect()),
                other => other.clone(),
            },
            "type" => match value {
                Value::Array(types) => {
                    if types.iter().any(|t| t == "null") {
                        clean.insert("nullable".into(), Value::Bool(true));
                    }
                    types
                        .iter()
                        .find(|t| *t != "null")
                        .cloned()
                        .unwrap_or_else(|| Value::String("string".into()))
                }
                other => other.clone(),
            },
            _ => value.clone(),
        };
        // Gemini knows `anyOf` only.
        let key = if key == "oneOf" {
            "anyOf"
        } else {
            key.as_str()
        };
        clean.insert(key.to_owned(), value);
    }
    Value::Object(clean)
}

/// `temperature`, `top_p`, `max_tokens` and `reasoning_effort` in Gemini's names.
fn generation_config(request: &ModelRequest) -> Map<String, Value> {
    let model = &request.model;
    let mut config = Map::new();
    for (ours, theirs) in [
        ("temperature", "temperature"),
        ("top_p", "topP"),
        ("max_tokens", "maxOutputTokens"),
    ] {
        if let Some(value) = model.config_value(ours).filter(|v| !v.is_null()) {
            config.insert(theirs.into(), value.clone());
        }
    }
    if let Some(effort) = model.config_str("reasoning_effort") {
        config.insert("thinkingConfig".into(), thinking_config(effort));
    }
    config
}

/// OpenAI-style effort as a Gemini thinking budget (tokens). `none`/`minimal` turn thinking
/// off where the model allows it; an unknown word lets the model decide (`-1`, dynamic).
/// Thoughts are asked for (`includeThoughts`) so they reach the session as reasoning.
fn thinking_config(effort: &str) -> Value {
    let budget: i64 = match effort.trim().to_ascii_lowercase().as_str() {
        "none" | "minimal" => 0,
        "low" => 1024,
        "medium" => 8192,
        "high" => 24576,
        _ => -1,
    };
    json!({ "thinkingBudget": budget, "includeThoughts": budget != 0 })
}
