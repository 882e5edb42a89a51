//! From Messages API stream events to [`ModelDelta`]s.
//!
//! Text and thinking pass through as they arrive. A `tool_use` block's input arrives as
//! `input_json_delta` fragments that only parse together, so it is assembled per block
//! index and released when the block stops. A thinking block is also kept whole, with the
//! `signature_delta` that closes it (and a `redacted_thinking` block as it came): the API
//! wants them back verbatim after a tool call, so each leaves as [`ReasoningState`] when it
//! stops. Usage is split over `message_start` (input and cache tokens) and `message_delta`
//! (cumulative output tokens) and sent once, at `message_stop`.

use std::collections::{HashMap, VecDeque};

use serde::Deserialize;
use serde_json::Value;

use crate::chat::{ReasoningState, TokenUsage};
use crate::provider::call::{Decoder, Flow, parse_data};
use crate::provider::{ModelDelta, ProviderError};

/// The decoding state of one model call.
pub(super) struct EventDecoder {
    provider: String,
    /// Open `tool_use` blocks by content-block index.
    tools: HashMap<u64, PartialToolUse>,
    /// Open `thinking` and `redacted_thinking` blocks by content-block index.
    thinking: HashMap<u64, PartialThinking>,
    thinking_blocks: usize,
    usage: WireUsage,
    finished: bool,
}

/// A thinking block being received, to be sent back as it came.
enum PartialThinking {
    Thinking { text: String, signature: String },
    Redacted { data: String },
}

impl PartialThinking {
    /// The block as the API wants it back; `None` for a thinking block without a
    /// signature, which the API would refuse (and does not need).
    fn into_state(self) -> Option<ReasoningState> {
        let data = match self {
            Self::Thinking { signature, .. } if signature.is_empty() => return None,
            Self::Thinking { text, signature } => {
                serde_json::json!({ "type": "thinking", "thinking": text, "signature": signature })
            }
            Self::Redacted { data } => {
                serde_json::json!({ "type": "redacted_thinking", "data": data })
            }
        };
        Some(ReasoningState {
            format: super::REASONING_FORMAT.to_owned(),
            data,
        })
    }
}

struct PartialToolUse {
    id: String,
    name: String,
    /// The `input` of `content_block_start` (normally `{}`), used when no deltas follow.
    initial: Value,
    json: String,
}

impl Decoder for EventDecoder {
    /// Decodes one SSE `data` payload, appending the deltas it completes to `out`.
    /// The payload's own `type` decides, so a missing `event:` line does not matter.
    fn on_data(
        &mut self,
        data: &str,
        out: &mut VecDeque<ModelDelta>,
    ) -> Result<Flow, ProviderError> {
        let Some(event) = parse_data::<Event>(data, "event").map_err(|m| self.protocol(m))? else {
            return Ok(Flow::Continue);
        };
        match event {
            Event::MessageStart { message } => self.usage.merge(message.usage),
            Event::ContentBlockStart {
                index,
                content_block,
            } => self.on_block_start(index, content_block, out),
            Event::ContentBlockDelta { index, delta } => self.on_block_delta(index, delta, out)?,
            Event::ContentBlockStop { index } => self.on_block_stop(index, out)?,
            Event::MessageDelta { usage } => self.usage.merge(usage),
            Event::MessageStop => {
                self.finished = true;
                out.push_back(ModelDelta::Usage(self.usage.total()));
                return Ok(Flow::Done);
            }
            Event::Error { error } => {
                return Err(ProviderError::Unavailable {
                    provider: self.provider.clone(),
                    message: error.message(),
                    retry_after: None,
                });
            }
            Event::Ping | Event::Unknown => {}
        }
        Ok(Flow::Continue)
    }

    /// The stream closed. Without `message_stop` the answer was cut off, and passing it on
    /// as complete would let the turn act on half a thought.
    fn on_end(&mut self, _out: &mut VecDeque<ModelDelta>) -> Result<(), ProviderError> {
        if self.finished {
            return Ok(());
        }
        Err(ProviderError::Unavailable {
            provider: self.provider.clone(),
            message: "the stream ended before the model finished its answer".into(),
            retry_after: None,
        })
    }
}

impl EventDecoder {
    pub fn new(provider: &str) -> Self {
        Self {
            provider: provider.to_owned(),
            tools: HashMap::new(),
            thinking: HashMap::new(),
            thinking_blocks: 0,
            usage: WireUsage::default(),
            finished: false,
        }
    }

    fn on_block_start(&mut self, index: u64, block: ContentBlock, out: &mut VecDeque<ModelDelta>) {
        match block {
            ContentBlock::Text { text } => push_text(out, ModelDelta::Text, text),
            ContentBlock::Thinking {
                thinking,
                signature,
            } => {
                if self.thinking_blocks > 0 {
                    out.push_back(ModelDelta::ReasoningBreak);
                }
                self.thinking_blocks += 1;
                self.thinking.insert(
                    index,
                    PartialThinking::Thinking {
                        text: thinking.clone(),
                        signature,
                    },
                );
                push_text(out, ModelDelta::Reasoning, thinking);
            }
            ContentBlock::RedactedThinking { data } => {
                self.thinking
                    .insert(index, PartialThinking::Redacted { data });
            }
            ContentBlock::ToolUse { id, name, input } => {
                self.tools.insert(
                    index,
                    PartialToolUse {
                        id,
                        name,
                        initial: input,
                        json: String::new(),
                    },
                );
            }
            ContentBlock::Other => {}
        }
    }

    fn on_block_delta(
        &mut self,
        index: u64,
        delta: BlockDelta,
        out: &mut VecDeque<ModelDelta>,
    ) -> Result<(), ProviderError> {
        match delta {
            BlockDelta::TextDelta { text } => push_text(out, ModelDelta::Text, text),
            BlockDelta::ThinkingDelta { thinking } => {
                if let Some(PartialThinking::Thinking { text, .. }) = self.thinking.get_mut(&index)
                {
                    text.push_str(&thinking);
                }
                push_text(out, ModelDelta::Reasoning, thinking)
            }
            BlockDelta::SignatureDelta { signature } => {
                if let Some(PartialThinking::Thinking {
                    signature: kept, ..
                }) = self.thinking.get_mut(&index)
                {
                    kept.push_str(&signature);
                }
            }
            BlockDelta::InputJsonDelta { partial_json } => match self.tools.get_mut(&index) {
                Some(tool) => tool.json.push_str(&partial_json),
                None => {
                    return Err(self.protocol(format!(
                        "input_json_delta for content block {index}, which is not a tool_use block"
                    )));
                }
            },
            BlockDelta::Other => {}
        }
        Ok(())
    }

    fn on_block_stop(
        &mut self,
        index: u64,
        out: &mut VecDeque<ModelDelta>,
    ) -> Result<(), ProviderError> {
        if let Some(state) = self
            .thinking
            .remove(&index)
            .and_then(PartialThinking::into_state)
        {
            out.push_back(ModelDelta::ReasoningState(state));
        }
        let Some(tool) = self.tools.remove(&index) else {
            return Ok(());
        };
        if tool.name.is_empty() {
            return Err(self.protocol(format!("tool_use block {index} has no name")));
        }
        let arguments = if !tool.json.trim().is_empty() {
            tool.json
        } else if tool.initial.as_object().is_some_and(|o| !o.is_empty()) {
            tool.initial.to_string()
        } else {
            "{}".into()
        };
        out.push_back(ModelDelta::ToolCall {
            id: if tool.id.is_empty() {
                format!("toolu_{index}")
            } else {
                tool.id
            },
            name: tool.name,
            arguments,
        });
        Ok(())
    }

    fn protocol(&self, message: String) -> ProviderError {
        ProviderError::Protocol {
            provider: self.provider.clone(),
            message,
        }
    }
}

fn push_text(out: &mut VecDeque<ModelDelta>, make: fn(String) -> ModelDelta, text: String) {
    if !text.is_empty() {
        out.push_back(make(text));
    }
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: u64,
        content_block: ContentBlock,
    },
    ContentBlockDelta {
        index: u64,
        delta: BlockDelta,
    },
    ContentBlockStop {
        index: u64,
    },
    MessageDelta {
        #[serde(default)]
        usage: WireUsage,
    },
    MessageStop,
    Ping,
    Error {
        error: ApiError,
    },
    /// The API may add event types; its versioning policy says clients must ignore them.
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct StartMessage {
    #[serde(default)]
    usage: WireUsage,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    /// Thinking the API encrypted: nothing to show, but it must go back as it came.
    RedactedThinking {
        #[serde(default)]
        data: String,
    },
    ToolUse {
        #[serde(default)]
        id: String,
        #[serde(default)]
        name: String,
        #[serde(default)]
        input: Value,
    },
    /// Server tool blocks and future kinds: nothing to show.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockDelta {
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    /// Closes a thinking block; the API checks it when the block comes back.
    SignatureDelta {
        signature: String,
    },
    /// Future kinds.
    #[serde(other)]
    Other,
}

/// Token counts as the API reports them; each event carries some of them.
#[derive(Default, Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

impl WireUsage {
    /// Later counts replace earlier ones: `message_delta` counts are cumulative.
    fn merge(&mut self, other: WireUsage) {
        self.input_tokens = other.input_tokens.or(self.input_tokens);
        self.output_tokens = other.output_tokens.or(self.output_tokens);
        self.cache_read_input_tokens = other
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
        self.cache_creation_input_tokens = other
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
    }

    /// Anthropic's `input_tokens` excludes cache reads and writes; [`TokenUsage`] counts
    /// every prompt token as input, with the cache reads among them as cached, the same
    /// way OpenAI reports it, so per-session sums mean one thing for every provider.
    fn total(&self) -> TokenUsage {
        let cached = self.cache_read_input_tokens.unwrap_or(0);
        let input =
            self.input_tokens.unwrap_or(0) + cached + self.cache_creation_input_tokens.unwrap_or(0);
        let output = self.output_tokens.unwrap_or(0);
        TokenUsage {
            input_tokens: input,
            output_tokens: output,
            cached_input_tokens: cached,
            reasoning_tokens: 0,
            total_tokens: input + output,
        }
    }
}

/// `{"type": "overloaded_error", "message": "Overloaded"}`.
#[derive(Deserialize)]
struct ApiError {
    #[serde(rename = "type")]
    kind: Option<String>,
    message: Option<String>,
}

impl ApiError {
    fn message(&self) -> String {
        match (&self.message, &self.kind) {
            (Some(message), _) if !message.is_empty() => message.clone(),
            (_, Some(kind)) => kind.clone(),
            _ => "unspecified error".into(),
        }
    }
}
