//! The normalized chat history shared by every provider: what a turn said, which tools it
//! called and what they answered.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// A tool call requested by the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as the model sent them: a JSON document, possibly malformed.
    pub arguments: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    #[serde(default)]
    pub content: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// On tool messages: the call this result answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// On tool messages: whether the tool failed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// On assistant messages: reasoning state the provider needs back on later requests.
    /// Absent from messages recorded before it existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasoning_state: Vec<ReasoningState>,
    /// On tool messages: images the tool returned, for models that take images. The
    /// content already describes each one (type and size), so a model that does not take
    /// images still reads what it was given. Never part of an event sent to clients.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ChatImage>,
}

/// An image a tool returned: an allowed media type and bytes checked to be of that type
/// (see `tools::images`), kept in base64 as every provider's wire format takes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatImage {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub mime_type: String,
    /// The image's bytes, standard base64 with padding.
    pub data: String,
}

impl ChatImage {
    /// The image as a `data:` URL, the form OpenAI's formats take.
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.mime_type, self.data)
    }

    /// The size of the image's bytes (not of their base64).
    pub fn byte_len(&self) -> usize {
        let padding = self.data.bytes().rev().take_while(|b| *b == b'=').count();
        (self.data.len() / 4 * 3).saturating_sub(padding)
    }
}

/// Reasoning a provider hands out opaquely and requires back verbatim, such as
/// Anthropic's signed `thinking` blocks: with extended thinking on, a tool call's result is
/// refused unless the thinking that led to the call comes back with it. The runtime stores
/// it with the assistant message and never looks inside; each wire format sends back only
/// the state it produced itself, so a session that switches providers stays valid.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReasoningState {
    /// The wire format that produced it, e.g. `anthropic`.
    pub format: String,
    /// The provider's own representation (for Anthropic: the content block as received).
    pub data: serde_json::Value,
}

impl ChatMessage {
    pub fn user(content: impl Into<String>) -> Self {
        Self::text(Role::User, content)
    }

    pub fn system(content: impl Into<String>) -> Self {
        Self::text(Role::System, content)
    }

    pub fn assistant(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self {
            tool_calls,
            ..Self::text(Role::Assistant, content)
        }
    }

    pub fn tool_result(
        call_id: impl Into<String>,
        content: impl Into<String>,
        is_error: bool,
    ) -> Self {
        Self {
            tool_call_id: Some(call_id.into()),
            is_error,
            ..Self::text(Role::Tool, content)
        }
    }

    fn text(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            is_error: false,
            reasoning_state: Vec::new(),
            images: Vec::new(),
        }
    }
}

/// Tokens used by one or more model calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TokenUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_input_tokens: u64,
    pub reasoning_tokens: u64,
    pub total_tokens: u64,
}

impl TokenUsage {
    pub fn is_zero(&self) -> bool {
        *self == Self::default()
    }
}

impl std::ops::AddAssign for TokenUsage {
    /// Saturates: counts come from providers and from logs on disk, and a total that
    /// wrapped around would read as a small spend against a token budget (or, with overflow
    /// checks, panic while a session is opened).
    fn add_assign(&mut self, other: Self) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cached_input_tokens = self
            .cached_input_tokens
            .saturating_add(other.cached_input_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(other.reasoning_tokens);
        self.total_tokens = self.total_tokens.saturating_add(other.total_tokens);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_recorded_before_reasoning_state_still_load_and_new_ones_omit_it_when_empty() {
        let old = r#"{"role":"assistant","content":"hi","tool_calls":[{"id":"c1","name":"LS","arguments":"{}"}]}"#;
        let message: ChatMessage = serde_json::from_str(old).expect("old message loads");
        assert!(message.reasoning_state.is_empty());
        assert_eq!(message.tool_calls.len(), 1);
        let written =
            serde_json::to_string(&ChatMessage::assistant("hi", Vec::new())).expect("serializes");
        assert!(!written.contains("reasoning_state"), "{written}");
    }

    /// Found with the `event_log` fuzz target: a log whose turns report near-`u64::MAX`
    /// usage made opening the session overflow.
    #[test]
    fn usage_totals_saturate() {
        let huge = TokenUsage {
            input_tokens: u64::MAX - 1,
            output_tokens: 1,
            cached_input_tokens: u64::MAX,
            reasoning_tokens: 0,
            total_tokens: u64::MAX,
        };
        let mut total = huge;
        total += huge;
        assert_eq!(total.input_tokens, u64::MAX);
        assert_eq!(total.output_tokens, 2);
        assert_eq!(total.cached_input_tokens, u64::MAX);
        assert_eq!(total.total_tokens, u64::MAX);
    }

    #[test]
    fn reasoning_state_round_trips() {
        let message = ChatMessage {
            reasoning_state: vec![ReasoningState {
                format: "anthropic".into(),
                data: serde_json::json!({ "type": "thinking", "thinking": "t", "signature": "s" }),
            }],
            ..ChatMessage::assistant("", Vec::new())
        };
        let text = serde_json::to_string(&message).expect("serializes");
        let back: ChatMessage = serde_json::from_str(&text).expect("loads");
        assert_eq!(back, message);
    }
}
