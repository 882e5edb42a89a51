//! The chat-completions request body.
//!
//! Shape: <https://platform.openai.com/docs/api-reference/chat/create>. Providers that
//! copy this API (DeepSeek, OpenRouter, vLLM, Ollama, ...) accept the same body; their
//! extensions go through the model config's `extra_body`.
//!
//! A tool message holds text only, so the images of tool results travel in a user message
//! right after the tool messages answering one assistant message: each call's images
//! under a line naming the call, as `image_url` parts with `data:` URLs.

use serde_json::{Map, Value, json};

use crate::chat::{ChatMessage, Role};
use crate::model::ModelSpec;
use crate::provider::{ModelRequest, ProviderError, ToolSpec, takes_images};

/// Model config keys copied into the body as they are.
const PASSTHROUGH_KEYS: [&str; 4] = ["temperature", "max_tokens", "top_p", "reasoning_effort"];

/// Body keys `extra_body` may not replace: they decide what we send and how we parse the
/// answer, so overriding them would break the call rather than tune it.
const PROTECTED_KEYS: [&str; 4] = ["model", "messages", "stream", "stream_options"];

/// Builds the JSON body for `request`.
pub(super) fn body(request: &ModelRequest) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), Value::String(request.model.name.clone()));
    body.insert("stream".into(), Value::Bool(true));
    body.insert("stream_options".into(), json!({ "include_usage": true }));
    body.insert("messages".into(), Value::Array(messages(request)));
    if !request.tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(request.tools.iter().map(tool).collect()),
        );
    }
    for key in PASSTHROUGH_KEYS {
        if let Some(value) = request.model.config_value(key).filter(|v| !v.is_null()) {
            body.insert(key.into(), value.clone());
        }
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

/// The system prompt first, then the conversation, each run of tool results followed by
/// their images when the model takes images.
fn messages(request: &ModelRequest) -> Vec<Value> {
    let images = takes_images(&request.model);
    let mut out = Vec::with_capacity(request.messages.len() + 1);
    if !request.system_prompt.is_empty() {
        out.push(json!({ "role": "system", "content": request.system_prompt }));
    }
    // The image parts of the tool results since the last message of another role.
    let mut parts: Vec<Value> = Vec::new();
    for chat in &request.messages {
        if chat.role != Role::Tool && !parts.is_empty() {
            out.push(images_message(std::mem::take(&mut parts)));
        }
        out.push(message(chat));
        if images && chat.role == Role::Tool && !chat.images.is_empty() {
            parts.push(json!({
                "type": "text",
                "text": format!(
                    "The images returned by tool call {}:",
                    chat.tool_call_id.as_deref().unwrap_or_default()
                ),
            }));
            parts.extend(chat.images.iter().map(
                |image| json!({ "type": "image_url", "image_url": { "url": image.data_url() } }),
            ));
        }
    }
    if !parts.is_empty() {
        out.push(images_message(parts));
    }
    out
}

fn images_message(parts: Vec<Value>) -> Value {
    json!({ "role": "user", "content": parts })
}

fn message(message: &ChatMessage) -> Value {
    match message.role {
        Role::System => json!({ "role": "system", "content": message.content }),
        Role::User => json!({ "role": "user", "content": message.content }),
        Role::Assistant if message.tool_calls.is_empty() => {
            json!({ "role": "assistant", "content": message.content })
        }
        Role::Assistant => {
            let calls: Vec<Value> = message
                .tool_calls
                .iter()
                .map(|call| {
                    json!({
                        "id": call.id,
                        "type": "function",
                        "function": { "name": call.name, "arguments": call.arguments },
                    })
                })
                .collect();
            // OpenAI wants `null`, not "", for an assistant turn that only calls tools.
            let content = (!message.content.is_empty()).then(|| message.content.clone());
            json!({ "role": "assistant", "content": content, "tool_calls": calls })
        }
        // The wire format has no error flag: a failed tool's content already says so.
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": message.tool_call_id.as_deref().unwrap_or_default(),
            "content": message.content,
        }),
    }
}

fn tool(tool: &ToolSpec) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    })
}

/// Which OpenAI API a model is called through (model config `api`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Api {
    ChatCompletions,
    /// Recommended by OpenAI for reasoning models: it streams reasoning summaries.
    Responses,
}

/// The values of the model config's `api`.
const API_NAMES: [&str; 2] = ["chat_completions", "responses"];

impl Api {
    /// `validate_config` refuses unknown values, so anything else here is the default.
    pub fn of(spec: &ModelSpec) -> Self {
        match spec.config_str("api") {
            Some("responses") => Self::Responses,
            _ => Self::ChatCompletions,
        }
    }
}

/// Checks the types of the config values this format passes through, so a typo in a
/// bundle fails at install time instead of as a provider 400 mid-session.
pub(crate) fn validate_config(spec: &ModelSpec) -> Result<(), ProviderError> {
    let check = |key: &str, ok: fn(&Value) -> bool, expected: &str| match spec.config_value(key) {
        Some(value) if !value.is_null() && !ok(value) => Err(ProviderError::invalid_model(
            spec.to_string(),
            format!("config `{key}` must be {expected}"),
        )),
        _ => Ok(()),
    };
    check("temperature", Value::is_number, "a number")?;
    check("top_p", Value::is_number, "a number")?;
    check("max_tokens", Value::is_u64, "a non-negative integer")?;
    check("reasoning_effort", Value::is_string, "a string")?;
    check("api_version", Value::is_string, "a string")?;
    check("extra_body", Value::is_object, "a JSON object")?;
    check("images", Value::is_boolean, "true or false")?;
    check(
        "api",
        |v| v.as_str().is_some_and(|api| API_NAMES.contains(&api)),
        "`chat_completions` or `responses`",
    )
}
