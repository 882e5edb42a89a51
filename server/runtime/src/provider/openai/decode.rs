//! From chat-completions stream chunks to [`ModelDelta`]s.
//!
//! Text and reasoning pass through as they arrive. Tool calls do not: the wire splits each
//! call over many chunks keyed by `index` (the first carries `id` and `function.name`, the
//! rest append to `function.arguments`), and a call is only useful whole, so they are
//! assembled here and released in index order when the choice finishes. Usage is kept
//! until the end because some compatible servers repeat it, cumulatively, on every chunk.

use std::collections::{BTreeMap, VecDeque};

use serde::Deserialize;

use crate::chat::TokenUsage;
use crate::provider::call::{Decoder, Flow, parse_data};
use crate::provider::{ModelDelta, ProviderError};

/// The decoding state of one model call.
pub(super) struct ChunkDecoder {
    provider: String,
    calls: BTreeMap<u64, PartialCall>,
    usage: Option<TokenUsage>,
    /// A `finish_reason` arrived: the answer is complete even if `[DONE]` never does.
    finished: bool,
}

/// A tool call being assembled; the Responses decoder assembles its calls the same way.
#[derive(Default)]
pub(super) struct PartialCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

impl PartialCall {
    /// The finished call, or `None` without a name: nothing could run it. A missing id
    /// gets a stand-in unique within the answer, and a call without arguments is a call
    /// with no arguments (`{}`), not a broken one.
    pub fn finish(self, index: u64) -> Option<ModelDelta> {
        if self.name.is_empty() {
            return None;
        }
        Some(ModelDelta::ToolCall {
            id: if self.id.is_empty() {
                format!("call_{index}")
            } else {
                self.id
            },
            name: self.name,
            arguments: if self.arguments.trim().is_empty() {
                "{}".into()
            } else {
                self.arguments
            },
        })
    }
}

impl Decoder for ChunkDecoder {
    /// Decodes one SSE `data` payload, appending the deltas it completes to `out`.
    /// An `Err` ends the call: the provider reported an error or stopped making sense.
    fn on_data(
        &mut self,
        data: &str,
        out: &mut VecDeque<ModelDelta>,
    ) -> Result<Flow, ProviderError> {
        if data.trim() == "[DONE]" {
            self.finish(out)?;
            return Ok(Flow::Done);
        }
        let Some(chunk) = parse_data::<Chunk>(data, "chunk").map_err(|m| self.protocol(m))? else {
            return Ok(Flow::Continue);
        };
        if let Some(error) = chunk.error {
            return Err(ProviderError::Unavailable {
                provider: self.provider.clone(),
                message: error.message(),
                retry_after: None,
            });
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage.into());
        }
        // Only the first choice is ours: requests never ask for `n > 1`.
        let choices = chunk.choices.unwrap_or_default();
        let Some(choice) = choices.into_iter().find(|c| c.index.unwrap_or(0) == 0) else {
            return Ok(Flow::Continue);
        };
        if let Some(delta) = choice.delta {
            self.on_delta(delta, out);
        }
        if choice.finish_reason.is_some() {
            self.finished = true;
            self.release_calls(out)?;
        }
        Ok(Flow::Continue)
    }

    /// The stream closed. Without `[DONE]` or a `finish_reason` the answer was cut off,
    /// and passing it on as complete would let the turn act on half a thought.
    fn on_end(&mut self, out: &mut VecDeque<ModelDelta>) -> Result<(), ProviderError> {
        if !self.finished {
            return Err(ProviderError::Unavailable {
                provider: self.provider.clone(),
                message: "the stream ended before the model finished its answer".into(),
                retry_after: None,
            });
        }
        self.finish(out)
    }
}

impl ChunkDecoder {
    pub fn new(provider: &str) -> Self {
        Self {
            provider: provider.to_owned(),
            calls: BTreeMap::new(),
            usage: None,
            finished: false,
        }
    }

    fn on_delta(&mut self, delta: Delta, out: &mut VecDeque<ModelDelta>) {
        for reasoning in [delta.reasoning_content, delta.reasoning]
            .into_iter()
            .flatten()
        {
            if !reasoning.is_empty() {
                out.push_back(ModelDelta::Reasoning(reasoning));
            }
        }
        for text in [delta.content, delta.refusal].into_iter().flatten() {
            if !text.is_empty() {
                out.push_back(ModelDelta::Text(text));
            }
        }
        for (position, call) in delta.tool_calls.unwrap_or_default().into_iter().enumerate() {
            // Some compatible servers omit `index` and send each call whole.
            let index = call.index.unwrap_or(position as u64);
            let partial = self.calls.entry(index).or_default();
            if let Some(id) = call.id.filter(|id| !id.is_empty())
                && partial.id.is_empty()
            {
                partial.id = id;
            }
            if let Some(function) = call.function {
                // Servers that repeat the name on every chunk must not double it.
                if let Some(name) = function.name.filter(|n| !n.is_empty())
                    && partial.name.is_empty()
                {
                    partial.name = name;
                }
                if let Some(arguments) = function.arguments {
                    partial.arguments.push_str(&arguments);
                }
            }
        }
    }

    fn finish(&mut self, out: &mut VecDeque<ModelDelta>) -> Result<(), ProviderError> {
        self.finished = true;
        self.release_calls(out)?;
        if let Some(usage) = self.usage.take() {
            out.push_back(ModelDelta::Usage(usage));
        }
        Ok(())
    }

    fn release_calls(&mut self, out: &mut VecDeque<ModelDelta>) -> Result<(), ProviderError> {
        for (index, call) in std::mem::take(&mut self.calls) {
            let Some(delta) = call.finish(index) else {
                return Err(
                    self.protocol(format!("tool call at index {index} has no function name"))
                );
            };
            out.push_back(delta);
        }
        Ok(())
    }

    fn protocol(&self, message: String) -> ProviderError {
        ProviderError::Protocol {
            provider: self.provider.clone(),
            message,
        }
    }
}

#[derive(Deserialize)]
struct Chunk {
    /// Absent or `null` on usage-only and error chunks of some servers.
    choices: Option<Vec<Choice>>,
    usage: Option<Usage>,
    error: Option<WireError>,
}

#[derive(Deserialize)]
struct Choice {
    index: Option<u64>,
    delta: Option<Delta>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    content: Option<String>,
    refusal: Option<String>,
    /// DeepSeek and most reasoning-capable compatible servers.
    reasoning_content: Option<String>,
    /// OpenRouter, Ollama and others.
    reasoning: Option<String>,
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    index: Option<u64>,
    id: Option<String>,
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    name: Option<String>,
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    total_tokens: u64,
    prompt_tokens_details: Option<PromptDetails>,
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct CompletionDetails {
    reasoning_tokens: Option<u64>,
}

impl From<Usage> for TokenUsage {
    fn from(u: Usage) -> Self {
        Self {
            input_tokens: u.prompt_tokens,
            output_tokens: u.completion_tokens,
            cached_input_tokens: u
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
            reasoning_tokens: u
                .completion_tokens_details
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
            total_tokens: if u.total_tokens > 0 {
                u.total_tokens
            } else {
                u.prompt_tokens + u.completion_tokens
            },
        }
    }
}

/// An error object, in a chunk or in an error response body. OpenAI nests it
/// (`{"error": {"message": ...}}`); some compatible servers send a bare string.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum WireError {
    Object {
        message: Option<String>,
        #[serde(rename = "type")]
        kind: Option<String>,
        code: Option<serde_json::Value>,
    },
    Text(String),
}

impl WireError {
    /// The provider's own words, with its error type or code when there is no message.
    pub fn message(&self) -> String {
        match self {
            Self::Object {
                message: Some(m), ..
            } if !m.is_empty() => m.clone(),
            Self::Object { kind, code, .. } => {
                let code = code.as_ref().map(|c| c.to_string());
                kind.clone()
                    .or(code)
                    .unwrap_or_else(|| "unspecified error".into())
            }
            Self::Text(text) => text.clone(),
        }
    }
}

/// An error response body: `{"error": ...}`.
#[derive(Deserialize)]
pub(super) struct ErrorBody {
    pub error: WireError,
}
