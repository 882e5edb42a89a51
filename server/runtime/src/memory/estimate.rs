//! A cheap token estimate, used to size the history window against a model's context
//! window without a tokenizer.
//!
//! Text counts one token per four bytes of UTF-8, rounded up: close for English prose and
//! code under the BPE tokenizers of OpenAI, Anthropic and Google, and an overestimate for
//! most other Latin-script text. Scripts that take three bytes per character (CJK) come
//! out lower than the truth, which is why callers keep a safety margin of the window
//! free (see `window`). Each message adds [`MESSAGE_OVERHEAD`] tokens for its role and
//! framing, each tool call [`TOOL_CALL_OVERHEAD`], each tool definition
//! [`TOOL_SPEC_OVERHEAD`]: about what the chat formats spend on them.
//!
//! Cost is linear in the bytes estimated; the session history caches each turn's figure,
//! so a turn's window costs one addition per prior turn.

use crate::chat::ChatMessage;
use crate::provider::ToolSpec;

/// Tokens for a message's role marker and framing.
pub const MESSAGE_OVERHEAD: u64 = 4;
/// Tokens for a tool call's framing (type, id field), beyond its name and arguments.
pub const TOOL_CALL_OVERHEAD: u64 = 4;
/// Tokens for a tool definition's framing, beyond its JSON.
pub const TOOL_SPEC_OVERHEAD: u64 = 8;
/// Tokens of an image a tool returned, whatever its size: about what Anthropic charges
/// for the largest image it takes unscaled (~1.15 megapixels), more than OpenAI's
/// high-detail tiles of a typical screenshot and Gemini's 258 per image.
pub const IMAGE_TOKENS: u64 = 1600;

/// Tokens of plain text: one per four bytes, rounded up.
pub fn text_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// Tokens of one chat message, framing included.
pub fn message_tokens(message: &ChatMessage) -> u64 {
    let calls: u64 = message
        .tool_calls
        .iter()
        .map(|call| {
            TOOL_CALL_OVERHEAD
                + text_tokens(&call.id)
                + text_tokens(&call.name)
                + text_tokens(&call.arguments)
        })
        .sum();
    let call_id = message.tool_call_id.as_deref().map_or(0, text_tokens);
    let images = IMAGE_TOKENS * message.images.len() as u64;
    MESSAGE_OVERHEAD + text_tokens(&message.content) + calls + call_id + images
}

/// Tokens of a sequence of messages.
pub fn messages_tokens(messages: &[ChatMessage]) -> u64 {
    messages.iter().map(message_tokens).sum()
}

/// Tokens of the tool definitions sent with every call.
pub fn tools_tokens(tools: &[ToolSpec]) -> u64 {
    tools
        .iter()
        .map(|tool| {
            TOOL_SPEC_OVERHEAD
                + text_tokens(&tool.name)
                + text_tokens(&tool.description)
                + text_tokens(&tool.parameters.to_string())
        })
        .sum()
}

/// Tokens of a system prompt (one message).
pub fn system_tokens(system_prompt: &str) -> u64 {
    if system_prompt.is_empty() {
        0
    } else {
        MESSAGE_OVERHEAD + text_tokens(system_prompt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::ToolCall;

    #[test]
    fn text_is_a_quarter_of_its_bytes_rounded_up() {
        assert_eq!(text_tokens(""), 0);
        assert_eq!(text_tokens("abc"), 1);
        assert_eq!(text_tokens("abcd"), 1);
        assert_eq!(text_tokens("abcde"), 2);
        assert_eq!(text_tokens(&"x".repeat(4000)), 1000);
        // Bytes, not characters: "é" is two bytes.
        assert_eq!(text_tokens("éééé"), 2);
    }

    #[test]
    fn messages_add_their_framing_calls_and_ids() {
        assert_eq!(message_tokens(&ChatMessage::user("")), MESSAGE_OVERHEAD);
        assert_eq!(
            message_tokens(&ChatMessage::user("x".repeat(40))),
            MESSAGE_OVERHEAD + 10
        );
        let call = ToolCall {
            id: "call_1".into(),
            name: "Read".into(),
            arguments: r#"{"path":"README.md"}"#.into(),
        };
        let assistant = ChatMessage::assistant("", vec![call]);
        assert_eq!(
            message_tokens(&assistant),
            MESSAGE_OVERHEAD + TOOL_CALL_OVERHEAD + 2 + 1 + 5
        );
        let result = ChatMessage::tool_result("call_1", "x".repeat(8), false);
        assert_eq!(message_tokens(&result), MESSAGE_OVERHEAD + 2 + 2);
        assert_eq!(
            messages_tokens(&[assistant.clone(), result.clone()]),
            message_tokens(&assistant) + message_tokens(&result)
        );
    }

    #[test]
    fn tools_and_system_prompts_count_their_text() {
        let tool = ToolSpec {
            name: "Read".into(),
            description: "Reads a file.".into(),
            parameters: serde_json::json!({ "type": "object" }),
        };
        assert_eq!(tools_tokens(&[tool]), TOOL_SPEC_OVERHEAD + 1 + 4 + 5);
        assert_eq!(system_tokens(""), 0);
        assert_eq!(system_tokens("You are a test agent."), MESSAGE_OVERHEAD + 6);
    }
}
