//! A loopback server speaking Anthropic's Messages API wire format.
//!
//! ```text
//! let server = AnthropicWireServer::start("sk-ant-test", vec![
//!     MessageBuilder::new(12, 0).text("Hello there", 2).finish("end_turn", 5).reply(),
//! ]).await?;
//! // point the `anthropic` provider's settings at server.base_url()
//! ```
//!
//! It checks `x-api-key` (401 in Anthropic's error format otherwise) and `anthropic-version`,
//! refuses non-streaming requests, records every request body, and answers each request
//! with the next scripted [`AnthropicReply`]: event sequences shaped like the documented
//! stream (`message_start`, `content_block_*`, `ping`, `message_delta`, `message_stop`).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// One scripted answer.
#[derive(Clone, Debug)]
pub enum AnthropicReply {
    /// `200 text/event-stream`: each value is one event's data; its `type` names the event.
    Stream(Vec<Value>),
    /// An HTTP error in Anthropic's format: `{"type":"error","error":{"type","message"}}`.
    Error {
        status: u16,
        message: String,
        retry_after: Option<u64>,
    },
}

impl AnthropicReply {
    pub fn error(status: u16, message: impl Into<String>) -> Self {
        Self::Error {
            status,
            message: message.into(),
            retry_after: None,
        }
    }

    /// A 429 asking the client to wait `retry_after_secs`.
    pub fn rate_limited(retry_after_secs: u64) -> Self {
        Self::Error {
            status: 429,
            message: "Number of request tokens has exceeded your per-minute rate limit".into(),
            retry_after: Some(retry_after_secs),
        }
    }
}

/// Builds a realistic event sequence, block by block.
pub struct MessageBuilder {
    events: Vec<Value>,
    next_index: u64,
}

impl MessageBuilder {
    /// `message_start` with the prompt's usage, then a `ping`, as the real API sends.
    pub fn new(input_tokens: u64, cache_read_tokens: u64) -> Self {
        let start = json!({
            "type": "message_start",
            "message": {
                "id": "msg_loopback", "type": "message", "role": "assistant",
                "model": "claude-loopback", "content": [],
                "stop_reason": null, "stop_sequence": null,
                "usage": {
                    "input_tokens": input_tokens,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": cache_read_tokens,
                    "output_tokens": 1,
                },
            },
        });
        Self {
            events: vec![start, json!({ "type": "ping" })],
            next_index: 0,
        }
    }

    /// A text block, its text split into `pieces` deltas.
    pub fn text(self, text: &str, pieces: usize) -> Self {
        let deltas = split(text, pieces)
            .into_iter()
            .map(|t| json!({ "type": "text_delta", "text": t }))
            .collect();
        self.block(json!({ "type": "text", "text": "" }), deltas)
    }

    /// The signature [`MessageBuilder::thinking`] closes its blocks with.
    pub const SIGNATURE: &'static str = "EqQBCgIYAhIM";

    /// A thinking block, split into `pieces` deltas and closed by its signature.
    pub fn thinking(self, text: &str, pieces: usize) -> Self {
        let mut deltas: Vec<Value> = split(text, pieces)
            .into_iter()
            .map(|t| json!({ "type": "thinking_delta", "thinking": t }))
            .collect();
        deltas.push(json!({ "type": "signature_delta", "signature": Self::SIGNATURE }));
        self.block(json!({ "type": "thinking", "thinking": "" }), deltas)
    }

    /// A `redacted_thinking` block: encrypted thinking that arrives whole in its start
    /// event, with no deltas.
    pub fn redacted_thinking(self, data: &str) -> Self {
        self.block(
            json!({ "type": "redacted_thinking", "data": data }),
            Vec::new(),
        )
    }

    /// A tool_use block whose JSON input arrives in `pieces` `input_json_delta`s.
    pub fn tool_use(self, id: &str, name: &str, input: &Value, pieces: usize) -> Self {
        let deltas = split(&input.to_string(), pieces)
            .into_iter()
            .map(|t| json!({ "type": "input_json_delta", "partial_json": t }))
            .collect();
        self.block(
            json!({ "type": "tool_use", "id": id, "name": name, "input": {} }),
            deltas,
        )
    }

    /// Any event, as it is.
    pub fn event(mut self, event: Value) -> Self {
        self.events.push(event);
        self
    }

    /// An `error` event (the stream then ends, as the API does after one).
    pub fn error(self, kind: &str, message: &str) -> AnthropicReply {
        let event = json!({ "type": "error", "error": { "type": kind, "message": message } });
        AnthropicReply::Stream(self.event(event).events)
    }

    /// `message_delta` with the stop reason and cumulative output tokens, `message_stop`.
    pub fn finish(self, stop_reason: &str, output_tokens: u64) -> AnthropicReply {
        let delta = json!({
            "type": "message_delta",
            "delta": { "stop_reason": stop_reason, "stop_sequence": null },
            "usage": { "output_tokens": output_tokens },
        });
        AnthropicReply::Stream(
            self.event(delta)
                .event(json!({ "type": "message_stop" }))
                .events,
        )
    }

    fn block(mut self, start: Value, deltas: Vec<Value>) -> Self {
        let index = self.next_index;
        self.next_index += 1;
        self.events
            .push(json!({ "type": "content_block_start", "index": index, "content_block": start }));
        for delta in deltas {
            self.events
                .push(json!({ "type": "content_block_delta", "index": index, "delta": delta }));
        }
        self.events
            .push(json!({ "type": "content_block_stop", "index": index }));
        self
    }
}

/// `text` cut into `pieces` parts of nearly equal length (in characters).
pub fn split(text: &str, pieces: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let size = chars.len().div_ceil(pieces.max(1)).max(1);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// A running loopback server; stops when dropped.
pub struct AnthropicWireServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

struct Shared {
    api_key: String,
    state: Mutex<ServerState>,
}

struct ServerState {
    replies: VecDeque<AnthropicReply>,
    requests: Vec<Value>,
}

impl AnthropicWireServer {
    /// Listens on `127.0.0.1:0` and answers with `replies` in order. Needs a tokio runtime.
    pub async fn start(
        api_key: impl Into<String>,
        replies: Vec<AnthropicReply>,
    ) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            api_key: api_key.into(),
            state: Mutex::new(ServerState {
                replies: replies.into(),
                requests: Vec::new(),
            }),
        });
        let app = Router::new()
            .route("/v1/messages", post(messages))
            .with_state(shared.clone());
        let (shutdown, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let serve = axum::serve(listener, app).with_graceful_shutdown(async {
                let _ = stopped.await;
            });
            if let Err(e) = serve.await {
                tracing::warn!(error = %e, "loopback Anthropic server stopped");
            }
        });
        Ok(Self {
            addr,
            shared,
            shutdown: Some(shutdown),
            task,
        })
    }

    /// `http://127.0.0.1:PORT`, the value for the provider's base URL (the API's paths
    /// start with `/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The JSON bodies received so far, in order (including refused ones).
    pub fn requests(&self) -> Vec<Value> {
        self.shared.lock().requests.clone()
    }
}

impl Drop for AnthropicWireServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        self.task.abort();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, ServerState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

async fn messages(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let request: Value = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => return error_response(400, &format!("invalid JSON body: {e}"), None),
    };
    shared.lock().requests.push(request.clone());
    let given = headers.get("x-api-key").and_then(|v| v.to_str().ok());
    if given != Some(shared.api_key.as_str()) {
        // The real API does not echo keys; this one does, so tests prove redaction.
        let shown = given.unwrap_or("(none)");
        return error_response(401, &format!("invalid x-api-key: {shown}"), None);
    }
    if headers
        .get("anthropic-version")
        .and_then(|v| v.to_str().ok())
        != Some("2023-06-01")
    {
        return error_response(400, "anthropic-version: header is required", None);
    }
    if request.get("stream") != Some(&Value::Bool(true)) {
        return error_response(400, "this loopback server only answers stream: true", None);
    }
    let reply = shared.lock().replies.pop_front();
    match reply {
        None => error_response(500, "loopback script exhausted", None),
        Some(AnthropicReply::Error {
            status,
            message,
            retry_after,
        }) => error_response(status, &message, retry_after),
        Some(AnthropicReply::Stream(events)) => stream_response(events),
    }
}

fn stream_response(events: Vec<Value>) -> Response {
    let body = futures::stream::iter(events.into_iter().map(|event| {
        let name = event["type"].as_str().unwrap_or("message").to_owned();
        Ok::<_, Infallible>(Bytes::from(format!("event: {name}\ndata: {event}\n\n")))
    }));
    (
        [
            (header::CONTENT_TYPE, "text/event-stream; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

fn error_response(status: u16, message: &str, retry_after: Option<u64>) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let kind = match status.as_u16() {
        401 => "authentication_error",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        500..=599 => "api_error",
        _ => "invalid_request_error",
    };
    let body = json!({ "type": "error", "error": { "type": kind, "message": message } });
    let mut response = (status, axum::Json(body)).into_response();
    if let Some(seconds) = retry_after {
        response
            .headers_mut()
            .insert("retry-after", HeaderValue::from(seconds));
    }
    response
}
