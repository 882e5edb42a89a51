//! From Responses API stream events to [`ModelDelta`]s.
//!
//! Unlike chat completions, every event is typed (`type` in the JSON): text and reasoning
//! summaries arrive as `*.delta` events and pass through at once; a function call is an
//! output item announced by `response.output_item.added` (with `call_id` and `name`),
//! whose arguments follow in `response.function_call_arguments.delta` events keyed by
//! `output_index`, and which is complete at `response.output_item.done`. The stream ends
//! with `response.completed` (usage), `response.incomplete` (cut by
//! `max_output_tokens`, still an answer) or `response.failed`; there is no `[DONE]`.

use std::collections::{BTreeMap, VecDeque};

use serde::Deserialize;
use serde_json::Value;

use super::decode::PartialCall;
use crate::chat::TokenUsage;
use crate::provider::call::{Decoder, Flow, parse_data};
use crate::provider::{ModelDelta, ProviderError};

/// The decoding state of one Responses API call.
pub(super) struct ResponsesDecoder {
    provider: String,
    /// Function calls in progress, by output index.
    calls: BTreeMap<u64, PartialCall>,
    /// A summary part was already started: the next one is a new reasoning section.
    summary_started: bool,
    finished: bool,
}

impl Decoder for ResponsesDecoder {
    /// Decodes one SSE `data` payload, appending the deltas it completes to `out`.
    fn on_data(
        &mut self,
        data: &str,
        out: &mut VecDeque<ModelDelta>,
    ) -> Result<Flow, ProviderError> {
        if data.trim() == "[DONE]" {
            return Ok(Flow::Done);
        }
        let Some(event) = parse_data::<Event>(data, "event").map_err(|m| self.protocol(m))? else {
            return Ok(Flow::Continue);
        };
        match event.kind.as_str() {
            "response.output_text.delta" | "response.refusal.delta" => {
                push_text(out, event.delta, ModelDelta::Text);
            }
            "response.reasoning_summary_text.delta" => {
                push_text(out, event.delta, ModelDelta::Reasoning);
            }
            "response.reasoning_summary_part.added" => {
                if self.summary_started {
                    out.push_back(ModelDelta::ReasoningBreak);
                }
                self.summary_started = true;
            }
            "response.output_item.added" => {
                if let Some(item) = event.item.filter(|i| i.kind == "function_call") {
                    let call = self
                        .calls
                        .entry(event.output_index.unwrap_or(0))
                        .or_default();
                    call.id = item.call_id.unwrap_or_default();
                    call.name = item.name.unwrap_or_default();
                    call.arguments = item.arguments.unwrap_or_default();
                }
            }
            "response.function_call_arguments.delta" => {
                if let (Some(call), Some(delta)) = (self.call(event.output_index), event.delta) {
                    call.arguments.push_str(&delta);
                }
            }
            "response.function_call_arguments.done" => {
                if let (Some(call), Some(arguments)) =
                    (self.call(event.output_index), event.arguments)
                {
                    call.arguments = arguments;
                }
            }
            "response.output_item.done" => {
                if let Some(item) = event.item.filter(|i| i.kind == "function_call") {
                    let index = event.output_index.unwrap_or(0);
                    let mut call = self.calls.remove(&index).unwrap_or_default();
                    // The finished item is authoritative for whatever it carries.
                    if let Some(id) = item.call_id.filter(|v| !v.is_empty()) {
                        call.id = id;
                    }
                    if let Some(name) = item.name.filter(|v| !v.is_empty()) {
                        call.name = name;
                    }
                    if let Some(arguments) = item.arguments.filter(|v| !v.is_empty()) {
                        call.arguments = arguments;
                    }
                    self.release(index, call, out)?;
                }
            }
            "response.completed" | "response.incomplete" => {
                for (index, call) in std::mem::take(&mut self.calls) {
                    self.release(index, call, out)?;
                }
                if let Some(usage) = event.response.and_then(|r| r.usage) {
                    out.push_back(ModelDelta::Usage(usage.into()));
                }
                self.finished = true;
                return Ok(Flow::Done);
            }
            "response.failed" => {
                let message = event
                    .response
                    .and_then(|r| r.error)
                    .map(|e| e.message())
                    .unwrap_or_else(|| "the response failed".into());
                return Err(self.unavailable(message));
            }
            "error" => {
                let message = WireError {
                    message: event.message,
                    code: event.code,
                }
                .message();
                return Err(self.unavailable(message));
            }
            _ => {}
        }
        Ok(Flow::Continue)
    }

    /// The stream closed. Without `response.completed` the answer was cut off.
    fn on_end(&mut self, _out: &mut VecDeque<ModelDelta>) -> Result<(), ProviderError> {
        if self.finished {
            return Ok(());
        }
        Err(self.unavailable("the stream ended before the model finished its answer".into()))
    }
}

impl ResponsesDecoder {
    pub fn new(provider: &str) -> Self {
        Self {
            provider: provider.to_owned(),
            calls: BTreeMap::new(),
            summary_started: false,
            finished: false,
        }
    }

    fn call(&mut self, output_index: Option<u64>) -> Option<&mut PartialCall> {
        self.calls.get_mut(&output_index.unwrap_or(0))
    }

    fn release(
        &self,
        index: u64,
        call: PartialCall,
        out: &mut VecDeque<ModelDelta>,
    ) -> Result<(), ProviderError> {
        let Some(delta) = call.finish(index) else {
            return Err(self.protocol(format!("function call at output index {index} has no name")));
        };
        out.push_back(delta);
        Ok(())
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

fn push_text(
    out: &mut VecDeque<ModelDelta>,
    delta: Option<String>,
    wrap: fn(String) -> ModelDelta,
) {
    if let Some(text) = delta.filter(|t| !t.is_empty()) {
        out.push_back(wrap(text));
    }
}

/// Every event type's fields in one struct: each event uses a few of them.
#[derive(Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    output_index: Option<u64>,
    delta: Option<String>,
    arguments: Option<String>,
    item: Option<Item>,
    response: Option<ResponseObject>,
    /// On `error` events.
    message: Option<String>,
    code: Option<Value>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(rename = "type")]
    kind: String,
    call_id: Option<String>,
    name: Option<String>,
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct ResponseObject {
    usage: Option<Usage>,
    error: Option<WireError>,
}

#[derive(Deserialize)]
struct WireError {
    message: Option<String>,
    code: Option<Value>,
}

impl WireError {
    fn message(&self) -> String {
        match (&self.message, &self.code) {
            (Some(m), _) if !m.is_empty() => m.clone(),
            (_, Some(code)) => code.to_string(),
            _ => "unspecified error".into(),
        }
    }
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    total_tokens: u64,
    input_tokens_details: Option<InputDetails>,
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Deserialize)]
struct InputDetails {
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct OutputDetails {
    reasoning_tokens: Option<u64>,
}

impl From<Usage> for TokenUsage {
    fn from(u: Usage) -> Self {
        Self {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cached_input_tokens: u
                .input_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
            reasoning_tokens: u
                .output_tokens_details
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
            total_tokens: if u.total_tokens > 0 {
                u.total_tokens
            } else {
                u.input_tokens + u.output_tokens
            },
        }
    }
}
