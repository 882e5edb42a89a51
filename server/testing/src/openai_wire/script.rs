//! What the loopback server answers, call by call, and builders for realistic chunks.
//!
//! Chunks are shaped like OpenAI's own (`chat.completion.chunk` objects with `id`,
//! `created`, `model`, `choices[].delta`, `logprobs: null`, `finish_reason`), split the
//! way OpenAI splits them: text over many deltas, a tool call as one chunk with `id` and
//! `function.name` followed by chunks appending `function.arguments`, usage in a last
//! chunk with empty `choices`.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::endless::{Endless, Rendered};

/// The model name written into scripted chunks.
const MODEL: &str = "gpt-loopback";

/// The server's behaviour: its key, and its answers in order.
#[derive(Clone, Debug)]
pub struct Script {
    pub(super) api_key: String,
    pub(super) mode: Mode,
}

#[derive(Clone)]
pub(super) enum Mode {
    /// One reply per request, in order; a request past the end gets a 500 saying so.
    Scripted(VecDeque<Reply>),
    /// Every request gets a short streamed echo of its last message, at once.
    Echo,
    /// Every request gets what the function makes of its JSON body.
    Respond(Responder),
    /// Any number of requests, answered at once, nothing recorded but timings.
    Endless(Endless),
}

/// Builds the reply to a request from its JSON body.
pub type Responder = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;

impl std::fmt::Debug for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Scripted(replies) => f.debug_tuple("Scripted").field(replies).finish(),
            Self::Echo => f.write_str("Echo"),
            Self::Respond(_) => f.write_str("Respond"),
            Self::Endless(_) => f.write_str("Endless"),
        }
    }
}

impl Script {
    /// A scripted server accepting `api_key`; add replies with [`Script::reply`].
    pub fn new(api_key: impl Into<String>) -> Self {
        Self {
            api_key: api_key.into(),
            mode: Mode::Scripted(VecDeque::new()),
        }
    }

    /// A server answering any number of requests immediately with a short text (the last
    /// message's start) and usage: the cheapest possible model, for benchmarks.
    pub fn echo(api_key: impl Into<String>) -> Self {
        Self {
            api_key: api_key.into(),
            mode: Mode::Echo,
        }
    }

    /// A server answering any number of requests with `respond(body)`: replies that
    /// depend on the request (a tool result gets the final answer), and stay right when a
    /// client gives up on a request halfway.
    pub fn respond(
        api_key: impl Into<String>,
        respond: impl Fn(&Value) -> Reply + Send + Sync + 'static,
    ) -> Self {
        Self {
            api_key: api_key.into(),
            mode: Mode::Respond(Arc::new(respond)),
        }
    }

    /// A server answering every request at once with `reply` (rendered once), keeping
    /// nothing but each call's timing: a model that costs next to nothing and never runs
    /// out, for benchmarks.
    pub fn repeat(api_key: impl Into<String>, reply: Reply) -> Self {
        Self {
            api_key: api_key.into(),
            mode: Mode::Endless(Endless::Repeat(Rendered::new(reply))),
        }
    }

    /// Like [`Script::repeat`], for a model that works with a tool: while the conversation
    /// holds fewer than `calls` tool results after its last user message, the answer is a
    /// call to `tool` with `arguments` (JSON text); then it is `done`. So every turn makes
    /// `calls` tool calls, one per model call, and ends with `done`. A request offering no
    /// tools (a history summary) gets `done`.
    pub fn tool_loop(
        api_key: impl Into<String>,
        tool: &str,
        arguments: &str,
        calls: usize,
        done: Reply,
    ) -> Self {
        Self {
            api_key: api_key.into(),
            mode: Mode::Endless(Endless::ToolLoop {
                tool: tool.to_owned(),
                arguments: arguments.to_owned(),
                calls,
                done: Rendered::new(done),
            }),
        }
    }

    /// Appends the reply to the next unanswered request.
    pub fn reply(mut self, reply: Reply) -> Self {
        if let Mode::Scripted(replies) = &mut self.mode {
            replies.push_back(reply);
        }
        self
    }
}

/// The answer to one request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// `200 text/event-stream` with these events.
    Stream(Vec<WireEvent>),
    /// An HTTP error in OpenAI's format: `{"error": {"message", "type", "param", "code"}}`.
    Error {
        status: u16,
        message: String,
        /// Sent as `Retry-After: <seconds>`.
        retry_after: Option<u64>,
    },
    /// Waits before answering at all (no headers), e.g. to trip a request timeout.
    Delayed(Duration, Box<Reply>),
}

/// One piece of a streamed reply.
#[derive(Clone, Debug)]
pub enum WireEvent {
    /// `data: <json>`.
    Data(Value),
    /// `data: [DONE]`.
    Done,
    /// Silence on the connection.
    Pause(Duration),
    /// Bytes written as they are, for malformed-stream tests.
    Raw(String),
}

/// Token counts for a usage chunk.
#[derive(Clone, Copy, Debug, Default)]
pub struct WireUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cached_tokens: u64,
    pub reasoning_tokens: u64,
}

impl Reply {
    /// A complete, realistic answer: `text` in several deltas, `stop`, usage, `[DONE]`.
    pub fn text(text: &str) -> Self {
        let pieces = text.split_whitespace().count().clamp(1, 8);
        StreamBuilder::new()
            .text(text, pieces)
            .finish("stop")
            .usage(WireUsage {
                prompt_tokens: 12,
                completion_tokens: estimate_tokens(text),
                ..WireUsage::default()
            })
            .done()
            .build()
    }

    /// An HTTP error with OpenAI's error body.
    pub fn error(status: u16, message: impl Into<String>) -> Self {
        Self::Error {
            status,
            message: message.into(),
            retry_after: None,
        }
    }

    /// `429` with `Retry-After`, as OpenAI sends when rate limited.
    pub fn rate_limited(retry_after_secs: u64) -> Self {
        Self::Error {
            status: 429,
            message: "Rate limit reached for requests. Please try again later.".into(),
            retry_after: Some(retry_after_secs),
        }
    }

    /// This reply, after `delay` of silence before the response headers.
    pub fn delayed(self, delay: Duration) -> Self {
        Self::Delayed(delay, Box::new(self))
    }
}

/// Builds a streamed reply chunk by chunk. Starts with OpenAI's opening chunk
/// (`delta: {role: assistant, content: ""}`).
#[derive(Clone, Debug)]
pub struct StreamBuilder {
    events: Vec<WireEvent>,
}

impl Default for StreamBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamBuilder {
    pub fn new() -> Self {
        Self {
            events: vec![WireEvent::Data(chunk(
                json!({ "role": "assistant", "content": "" }),
                None,
            ))],
        }
    }

    /// `text` as `pieces` content deltas.
    pub fn text(self, text: &str, pieces: usize) -> Self {
        self.deltas("content", text, pieces)
    }

    /// `text` as `pieces` `reasoning_content` deltas (DeepSeek's field).
    pub fn reasoning(self, text: &str, pieces: usize) -> Self {
        self.deltas("reasoning_content", text, pieces)
    }

    /// `text` as `pieces` deltas of any string field of `delta` (e.g. `reasoning`).
    pub fn deltas(mut self, field: &str, text: &str, pieces: usize) -> Self {
        for piece in split(text, pieces) {
            self.events
                .push(WireEvent::Data(chunk(json!({ field: piece }), None)));
        }
        self
    }

    /// One tool call: a chunk with `id` and `function.name`, then `arguments` in `pieces`.
    pub fn tool_call(
        self,
        index: u64,
        id: &str,
        name: &str,
        arguments: &str,
        pieces: usize,
    ) -> Self {
        self.tool_calls(&[(index, id, name, arguments)], pieces)
    }

    /// Parallel tool calls `(index, id, name, arguments)`, their argument pieces
    /// interleaved the way a model streaming several calls at once may send them.
    pub fn tool_calls(mut self, calls: &[(u64, &str, &str, &str)], pieces: usize) -> Self {
        for (index, id, name, _) in calls {
            let head = json!({ "index": index, "id": id, "type": "function", "function": { "name": name, "arguments": "" } });
            self.events.push(WireEvent::Data(chunk(
                json!({ "tool_calls": [head] }),
                None,
            )));
        }
        let split_calls: Vec<Vec<String>> = calls
            .iter()
            .map(|(_, _, _, args)| split(args, pieces))
            .collect();
        for round in 0..pieces {
            for ((index, ..), parts) in calls.iter().zip(&split_calls) {
                if let Some(part) = parts.get(round) {
                    let tail = json!({ "index": index, "function": { "arguments": part } });
                    self.events.push(WireEvent::Data(chunk(
                        json!({ "tool_calls": [tail] }),
                        None,
                    )));
                }
            }
        }
        self
    }

    /// The chunk closing the choice: empty delta, `finish_reason`.
    pub fn finish(mut self, reason: &str) -> Self {
        self.events
            .push(WireEvent::Data(chunk(json!({}), Some(reason))));
        self
    }

    /// The usage chunk `stream_options.include_usage` asks for: empty `choices`.
    pub fn usage(mut self, usage: WireUsage) -> Self {
        self.events.push(WireEvent::Data(usage_chunk(usage)));
        self
    }

    /// An error object mid-stream, as OpenAI sends when a call fails after it started.
    pub fn error(mut self, message: &str) -> Self {
        self.events.push(WireEvent::Data(
            json!({ "error": error_object(500, message) }),
        ));
        self
    }

    pub fn pause(mut self, duration: Duration) -> Self {
        self.events.push(WireEvent::Pause(duration));
        self
    }

    /// `data: [DONE]`.
    pub fn done(mut self) -> Self {
        self.events.push(WireEvent::Done);
        self
    }

    pub fn event(mut self, event: WireEvent) -> Self {
        self.events.push(event);
        self
    }

    pub fn build(self) -> Reply {
        Reply::Stream(self.events)
    }
}

/// A `chat.completion.chunk` with one choice.
pub fn chunk(delta: Value, finish_reason: Option<&str>) -> Value {
    json!({
        "id": "chatcmpl-loopback",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": MODEL,
        "system_fingerprint": "fp_loopback",
        "choices": [{ "index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason }],
    })
}

/// The final usage chunk.
pub fn usage_chunk(usage: WireUsage) -> Value {
    json!({
        "id": "chatcmpl-loopback",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": MODEL,
        "choices": [],
        "usage": {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.prompt_tokens + usage.completion_tokens,
            "prompt_tokens_details": { "cached_tokens": usage.cached_tokens, "audio_tokens": 0 },
            "completion_tokens_details": { "reasoning_tokens": usage.reasoning_tokens, "audio_tokens": 0 },
        },
    })
}

/// OpenAI's error object for an HTTP status.
pub fn error_object(status: u16, message: &str) -> Value {
    let (kind, code) = match status {
        401 => ("invalid_request_error", Value::from("invalid_api_key")),
        429 => ("requests", Value::from("rate_limit_exceeded")),
        500..=599 => ("server_error", Value::Null),
        _ => ("invalid_request_error", Value::Null),
    };
    json!({ "message": message, "type": kind, "param": null, "code": code })
}

/// Splits `text` into at most `pieces` non-empty parts on character boundaries.
pub fn split(text: &str, pieces: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return Vec::new();
    }
    let size = chars.len().div_ceil(pieces.max(1));
    chars
        .chunks(size)
        .map(|part| part.iter().collect())
        .collect()
}

/// About four characters per token.
pub(super) fn estimate_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}
