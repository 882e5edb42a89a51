//! The Messages API request body.
//!
//! Shape: <https://docs.anthropic.com/en/api/messages>. The normalized history maps onto it
//! with four twists: signed thinking blocks kept with an assistant message go back in
//! front of it; the system prompt is a top-level field, not a message; tool calls are
//! `tool_use` content blocks of the assistant message; and tool results are `tool_result`
//! blocks of a *user* message. Consecutive messages that end up with the same role are
//! merged, because the API wants user and assistant turns to alternate (several tool
//! results answering one assistant message must travel in one user message). A tool
//! result with images carries them as `image` blocks of its content, beside its text.

use serde_json::{Map, Value, json};

use crate::chat::{ChatMessage, Role};
use crate::provider::{ModelRequest, ToolSpec, takes_images};

/// `max_tokens` is required by the API; this is what every current Claude model can
/// produce, so a model config without one still works everywhere.
const DEFAULT_MAX_TOKENS: u64 = 4096;

/// The smallest thinking budget the API accepts.
const MIN_THINKING_BUDGET: u64 = 1024;

/// Body keys `extra_body` may not replace: they decide what we send and how we parse it.
const PROTECTED_KEYS: [&str; 4] = ["model", "messages", "stream", "system"];

/// Builds the JSON body for `request`.
pub(super) fn body(request: &ModelRequest) -> Value {
    let config = &request.model;
    let budget = config
        .config_str("reasoning_effort")
        .and_then(thinking_budget);
    let configured_max = config.config_value("max_tokens").and_then(Value::as_u64);
    let max_tokens = configured_max
        .unwrap_or(DEFAULT_MAX_TOKENS + budget.unwrap_or(0))
        .max(1);
    let mut body = Map::new();
    body.insert("model".into(), Value::String(config.name.clone()));
    body.insert("max_tokens".into(), Value::from(max_tokens));
    body.insert("stream".into(), Value::Bool(true));
    let system = system_prompt(request);
    if !system.is_empty() {
        body.insert("system".into(), Value::String(system));
    }
    body.insert(
        "messages".into(),
        Value::Array(messages(&request.messages, takes_images(config))),
    );
    if !request.tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(request.tools.iter().map(tool).collect()),
        );
    }
    for key in ["temperature", "top_p"] {
        if let Some(value) = config.config_value(key).filter(|v| !v.is_null()) {
            body.insert(key.into(), value.clone());
        }
    }
    // The budget must stay below max_tokens; one that no longer fits the API's minimum is
    // dropped rather than turned into a certain 400.
    if let Some(budget) = budget.map(|b| b.min(max_tokens.saturating_sub(1))) {
        if budget >= MIN_THINKING_BUDGET {
            body.insert(
                "thinking".into(),
                json!({ "type": "enabled", "budget_tokens": budget }),
            );
        } else {
            tracing::warn!(model = %config, max_tokens, "max_tokens too small for extended thinking; thinking disabled");
        }
    }
    if let Some(Value::Object(extra)) = config.config_value("extra_body") {
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

/// Extended-thinking budget for a `reasoning_effort`, using OpenAI's effort names so one
/// model config reads the same for every provider: `low` is the API's minimum, `medium` a
/// few pages, `high` a long deliberation. `none`/`minimal` (and unknown values) disable
/// thinking.
fn thinking_budget(effort: &str) -> Option<u64> {
    match effort.to_ascii_lowercase().as_str() {
        "low" => Some(MIN_THINKING_BUDGET),
        "medium" => Some(4096),
        "high" => Some(16384),
        _ => None,
    }
}

/// The agent's system prompt, followed by any system messages of the history: the API has
/// no system role inside `messages`.
fn system_prompt(request: &ModelRequest) -> String {
    std::iter::once(request.system_prompt.as_str())
        .chain(
            request
                .messages
                .iter()
                .filter(|m| m.role == Role::System)
                .map(|m| m.content.as_str()),
        )
        .filter(|text| !text.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The conversation as alternating user/assistant messages of content blocks.
fn messages(history: &[ChatMessage], images: bool) -> Vec<Value> {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in history {
        let (role, blocks) = match message.role {
            Role::System => continue,
            Role::User => ("user", text_block(&message.content).into_iter().collect()),
            Role::Assistant => ("assistant", assistant_blocks(message)),
            Role::Tool => ("user", vec![tool_result(message, images)]),
        };
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((last_role, last_blocks)) if *last_role == role => last_blocks.extend(blocks),
            _ => out.push((role, blocks)),
        }
    }
    out.into_iter()
        .map(|(role, content)| json!({ "role": role, "content": content }))
        .collect()
}

/// The API refuses empty text blocks.
fn text_block(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({ "type": "text", "text": text }))
}

/// Thinking first, as the API produced it, then text and tool calls. Thinking blocks go
/// back verbatim (signature included), and only those this wire produced: the API refuses
/// a tool result whose assistant turn lost its thinking, and ignores thinking of turns
/// before the last.
fn assistant_blocks(message: &ChatMessage) -> Vec<Value> {
    let thinking = message
        .reasoning_state
        .iter()
        .filter(|state| state.format == super::REASONING_FORMAT)
        .map(|state| state.data.clone());
    let calls = message.tool_calls.iter().map(|call| {
        json!({
            "type": "tool_use",
            "id": call.id,
            "name": call.name,
            "input": tool_input(&call.arguments),
        })
    });
    thinking
        .chain(text_block(&message.content))
        .chain(calls)
        .collect()
}

/// `input` must be an object. Arguments the model sent malformed were already answered
/// with a tool error; replaying them as `{}` keeps the history acceptable to the API.
fn tool_input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(value @ Value::Object(_)) => value,
        _ => Value::Object(Map::new()),
    }
}

/// A tool's result: its text, or with `images` and images to send, a list of its text
/// block and its `image` blocks.
fn tool_result(message: &ChatMessage, images: bool) -> Value {
    let content = if images && !message.images.is_empty() {
        let blocks = text_block(&message.content)
            .into_iter()
            .chain(message.images.iter().map(|image| {
                json!({
                    "type": "image",
                    "source": {
                        "type": "base64",
                        "media_type": image.mime_type,
                        "data": image.data,
                    },
                })
            }));
        Value::Array(blocks.collect())
    } else {
        Value::String(message.content.clone())
    };
    json!({
        "type": "tool_result",
        "tool_use_id": message.tool_call_id.as_deref().unwrap_or_default(),
        "content": content,
        "is_error": message.is_error,
    })
}

fn tool(tool: &ToolSpec) -> Value {
    json!({
        "name": tool.name,
        "description": tool.description,
        "input_schema": tool.parameters,
    })
}
