//! From `GenerateContentResponse` chunks to [`ModelDelta`]s.
//!
//! Each chunk is complete in itself: text and thought parts pass through as they arrive,
//! and a `functionCall` part always carries its whole `args` object, so calls need no
//! assembly; they are still held back until the candidate finishes, like the other
//! providers do, so the turn never acts on calls of an answer that then fails. Usage
//! arrives on many chunks, cumulatively; only the last one counts.

use std::collections::VecDeque;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::request::SIGNATURE_SEPARATOR;
use crate::chat::TokenUsage;
use crate::provider::call::{Decoder, Flow, parse_data};
use crate::provider::{ModelDelta, ProviderError};

/// Finish reasons that mean the model did not give (all of) its answer. `STOP` and
/// `MAX_TOKENS` are ordinary ends; a truncated answer is still the model's answer.
const FAILED_FINISH_REASONS: [&str; 8] = [
    "SAFETY",
    "RECITATION",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "MALFORMED_FUNCTION_CALL",
    "UNEXPECTED_TOOL_CALL",
    "IMAGE_SAFETY",
];

/// The decoding state of one model call.
pub(super) struct ChunkDecoder {
    provider: String,
    calls: Vec<ModelDelta>,
    usage: Option<TokenUsage>,
    finished: bool,
}

impl Decoder for ChunkDecoder {
    /// Decodes one SSE `data` payload, appending the deltas it completes to `out`.
    /// An `Err` ends the call.
    fn on_data(
        &mut self,
        data: &str,
        out: &mut VecDeque<ModelDelta>,
    ) -> Result<Flow, ProviderError> {
        let Some(chunk) = parse_data::<Chunk>(data, "chunk").map_err(|m| self.protocol(m))? else {
            return Ok(Flow::Continue);
        };
        if let Some(error) = chunk.error {
            return Err(self.unavailable(error.message()));
        }
        if let Some(usage) = chunk.usage_metadata {
            self.usage = Some(usage.into());
        }
        if let Some(reason) = chunk.prompt_feedback.and_then(|f| f.block_reason) {
            return Err(self.unavailable(format!("the prompt was blocked ({reason})")));
        }
        // Only the first candidate is ours: requests never ask for more.
        let Some(candidate) = chunk.candidates.unwrap_or_default().into_iter().next() else {
            return Ok(Flow::Continue);
        };
        for part in candidate.content.map(|c| c.parts).unwrap_or_default() {
            self.on_part(part, out);
        }
        if let Some(reason) = candidate.finish_reason {
            if FAILED_FINISH_REASONS.contains(&reason.as_str()) {
                let detail = candidate
                    .finish_message
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default();
                return Err(self.unavailable(format!("the model stopped ({reason}){detail}")));
            }
            self.finished = true;
        }
        Ok(Flow::Continue)
    }

    /// The stream closed. Without a `finishReason` the answer was cut off.
    fn on_end(&mut self, out: &mut VecDeque<ModelDelta>) -> Result<(), ProviderError> {
        if !self.finished {
            return Err(
                self.unavailable("the stream ended before the model finished its answer".into())
            );
        }
        out.extend(self.calls.drain(..));
        if let Some(usage) = self.usage.take() {
            out.push_back(ModelDelta::Usage(usage));
        }
        Ok(())
    }
}

impl ChunkDecoder {
    pub fn new(provider: &str) -> Self {
        Self {
            provider: provider.to_owned(),
            calls: Vec::new(),
            usage: None,
            finished: false,
        }
    }

    fn on_part(&mut self, part: Part, out: &mut VecDeque<ModelDelta>) {
        if let Some(call) = part.function_call {
            let index = self.calls.len();
            // Older models send no id; the turn needs one to pair the result with the call.
            let id = call
                .id
                .filter(|id| !id.is_empty())
                .unwrap_or_else(|| format!("call_{index}"));
            // Gemini 3 wants the call's thought signature back with the call in the next
            // request; the id is the only field of a tool call that makes the round trip.
            let id = match part.thought_signature.filter(|s| !s.is_empty()) {
                Some(signature) => format!("{id}{SIGNATURE_SEPARATOR}{signature}"),
                None => id,
            };
            let arguments = match call.args {
                Some(Value::Null) | None => "{}".to_owned(),
                Some(args) => args.to_string(),
            };
            self.calls.push(ModelDelta::ToolCall {
                id,
                name: call.name,
                arguments,
            });
            return;
        }
        match part.text {
            Some(text) if text.is_empty() => {}
            Some(text) if part.thought => out.push_back(ModelDelta::Reasoning(text)),
            Some(text) => out.push_back(ModelDelta::Text(text)),
            None => {}
        }
    }

    fn unavailable(&self, message: String) -> ProviderError {
        ProviderError::Unavailable {
            provider: self.provider.clone(),
            message,
            retry_after: None,
        }
    }

    fn protocol(&self, message: String) -> ProviderError {
        ProviderError::Protocol {
            provider: self.provider.clone(),
            message,
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Chunk {
    candidates: Option<Vec<Candidate>>,
    usage_metadata: Option<Usage>,
    prompt_feedback: Option<PromptFeedback>,
    error: Option<WireError>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback {
    block_reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    content: Option<Content>,
    finish_reason: Option<String>,
    finish_message: Option<String>,
}

#[derive(Deserialize)]
struct Content {
    #[serde(default)]
    parts: Vec<Part>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part {
    text: Option<String>,
    #[serde(default)]
    thought: bool,
    thought_signature: Option<String>,
    function_call: Option<FunctionCall>,
}

#[derive(Deserialize)]
struct FunctionCall {
    id: Option<String>,
    name: String,
    args: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Usage {
    #[serde(default)]
    prompt_token_count: u64,
    #[serde(default)]
    candidates_token_count: u64,
    #[serde(default)]
    cached_content_token_count: u64,
    #[serde(default)]
    thoughts_token_count: u64,
    #[serde(default)]
    total_token_count: u64,
}

impl From<Usage> for TokenUsage {
    /// Gemini counts thoughts apart from the candidates; output here is everything the
    /// model generated, with the thinking part of it in `reasoning_tokens`, as for OpenAI.
    fn from(u: Usage) -> Self {
        let output = u.candidates_token_count + u.thoughts_token_count;
        Self {
            input_tokens: u.prompt_token_count,
            output_tokens: output,
            cached_input_tokens: u.cached_content_token_count,
            reasoning_tokens: u.thoughts_token_count,
            total_tokens: if u.total_token_count > 0 {
                u.total_token_count
            } else {
                u.prompt_token_count + output
            },
        }
    }
}

/// Google's error object: `{"code": 429, "message": "...", "status": "RESOURCE_EXHAUSTED",
/// "details": [...]}`, in an error body or mid-stream.
#[derive(Deserialize)]
pub(super) struct WireError {
    message: Option<String>,
    status: Option<String>,
    code: Option<Value>,
    #[serde(default)]
    details: Vec<Value>,
}

impl WireError {
    /// The provider's own words, with its status or code when there is no message.
    pub fn message(&self) -> String {
        match (&self.message, &self.status, &self.code) {
            (Some(m), _, _) if !m.is_empty() => m.clone(),
            (_, Some(status), _) => status.clone(),
            (_, _, Some(code)) => code.to_string(),
            _ => "unspecified error".into(),
        }
    }

    /// `RetryInfo.retryDelay` (`"37s"`), which Gemini sends with quota errors.
    pub fn retry_delay(&self) -> Option<Duration> {
        let delay = self
            .details
            .iter()
            .find_map(|d| d.get("retryDelay")?.as_str())?;
        let seconds: f64 = delay.strip_suffix('s')?.parse().ok()?;
        (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
    }
}

/// An error response body: `{"error": {...}}`.
#[derive(Deserialize)]
pub(super) struct ErrorBody {
    pub error: WireError,
}
