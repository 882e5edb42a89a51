//! The Responses API request body (`POST {base_url}/responses`).
//!
//! Shape: <https://platform.openai.com/docs/api-reference/responses/create>. The system
//! prompt is `instructions`; the conversation is `input` items: messages by role, each
//! assistant tool call a `function_call` item and each tool result a
//! `function_call_output` item, paired by `call_id` (its output a list of `input_text`
//! and `input_image` parts when it has images for a model that takes them). Nothing is stored on OpenAI's side
//! (`store: false`): every call sends the whole history, as with chat completions.

use serde_json::{Map, Value, json};

use crate::chat::{ChatMessage, Role};
use crate::provider::{ModelRequest, ToolSpec, takes_images};

/// Body keys `extra_body` may not replace: they decide what we send and how we parse the
/// answer.
const PROTECTED_KEYS: [&str; 4] = ["model", "input", "stream", "instructions"];

/// Builds the JSON body for `request`.
pub(super) fn body(request: &ModelRequest) -> Value {
    let model = &request.model;
    let mut body = Map::new();
    body.insert("model".into(), Value::String(model.name.clone()));
    body.insert("stream".into(), Value::Bool(true));
    body.insert("store".into(), Value::Bool(false));
    if !request.system_prompt.is_empty() {
        body.insert(
            "instructions".into(),
            Value::String(request.system_prompt.clone()),
        );
    }
    let images = takes_images(model);
    let input: Vec<Value> = request
        .messages
        .iter()
        .flat_map(|message| items(message, images))
        .collect();
    body.insert("input".into(), Value::Array(input));
    if !request.tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(request.tools.iter().map(tool).collect()),
        );
    }
    for (ours, theirs) in [
        ("temperature", "temperature"),
        ("top_p", "top_p"),
        ("max_tokens", "max_output_tokens"),
    ] {
        if let Some(value) = model.config_value(ours).filter(|v| !v.is_null()) {
            body.insert(theirs.into(), value.clone());
        }
    }
    if let Some(effort) = model.config_str("reasoning_effort") {
        // `summary: auto` is what makes reasoning visible: the API never streams the raw
        // chain of thought, only summaries of it, and only when asked.
        body.insert(
            "reasoning".into(),
            json!({ "effort": effort, "summary": "auto" }),
        );
    }
    if let Some(Value::Object(extra)) = model.config_value("extra_body") {
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

/// The input items of one message.
fn items(message: &ChatMessage, images: bool) -> Vec<Value> {
    match message.role {
        Role::System => vec![json!({ "role": "system", "content": message.content })],
        Role::User => vec![json!({ "role": "user", "content": message.content })],
        Role::Assistant => {
            let text = (!message.content.is_empty())
                .then(|| json!({ "role": "assistant", "content": message.content }));
            let calls = message.tool_calls.iter().map(|call| {
                json!({
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": call.arguments,
                })
            });
            text.into_iter().chain(calls).collect()
        }
        // The format has no error flag: a failed tool's output already says so.
        Role::Tool => vec![json!({
            "type": "function_call_output",
            "call_id": message.tool_call_id.as_deref().unwrap_or_default(),
            "output": tool_output(message, images),
        })],
    }
}

/// A tool's output: its text, or with `images` and images to send, its text and images
/// as input parts.
fn tool_output(message: &ChatMessage, images: bool) -> Value {
    if !images || message.images.is_empty() {
        return Value::String(message.content.clone());
    }
    let text = json!({ "type": "input_text", "text": message.content });
    let images = message
        .images
        .iter()
        .map(|image| json!({ "type": "input_image", "image_url": image.data_url() }));
    Value::Array(std::iter::once(text).chain(images).collect())
}

/// Tools are declared non-strict: strict mode (the Responses API default) demands
/// schemas with every property required and `additionalProperties: false`, which tool
/// schemas written for chat completions rarely have.
fn tool(tool: &ToolSpec) -> Value {
    json!({
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
        "strict": false,
    })
}
