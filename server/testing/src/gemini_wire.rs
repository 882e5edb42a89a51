//! A loopback server speaking Gemini's `streamGenerateContent` wire format.
//!
//! ```text
//! let server = GeminiWireServer::start("key", vec![GeminiReply::stream(vec![text_chunk("Hi"), finish_chunk("STOP", usage)])]).await?;
//! // point the provider's settings at server.base_url() ("http://127.0.0.1:PORT")
//! ```
//!
//! It serves `POST /v1beta/models/{model}:streamGenerateContent?alt=sse`, checks the
//! `x-goog-api-key` header (Google's 400 `API_KEY_INVALID` otherwise), refuses requests
//! without `alt=sse`, records every request (model and body), and answers each request
//! with the next scripted reply. Chunks are whole `GenerateContentResponse` objects, as
//! Gemini sends them: no `[DONE]`, the stream ends after the chunk with `finishReason`.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The answer to one request.
#[derive(Clone, Debug)]
pub enum GeminiReply {
    /// `200 text/event-stream`, one `data:` event per chunk.
    Stream(Vec<Value>),
    /// An HTTP error in Google's format: `{"error": {"code", "message", "status"}}`.
    Error {
        status: u16,
        message: String,
        /// Sent as `Retry-After: <seconds>`.
        retry_after: Option<u64>,
    },
}

impl GeminiReply {
    pub fn stream(chunks: Vec<Value>) -> Self {
        Self::Stream(chunks)
    }

    /// `429 RESOURCE_EXHAUSTED`, as Gemini sends when a quota is hit.
    pub fn rate_limited(retry_after_secs: u64) -> Self {
        Self::Error {
            status: 429,
            message: "Resource has been exhausted (e.g. check quota).".into(),
            retry_after: Some(retry_after_secs),
        }
    }
}

/// Token counts for `usageMetadata`.
#[derive(Clone, Copy, Debug, Default)]
pub struct GeminiUsage {
    pub prompt: u64,
    pub candidates: u64,
    pub cached: u64,
    pub thoughts: u64,
}

/// A chunk whose candidate has these parts.
pub fn parts_chunk(parts: Vec<Value>) -> Value {
    json!({
        "candidates": [{ "content": { "role": "model", "parts": parts }, "index": 0 }],
        "modelVersion": "gemini-loopback",
        "responseId": "loopback-response",
    })
}

/// A chunk with one text part.
pub fn text_chunk(text: &str) -> Value {
    parts_chunk(vec![json!({ "text": text })])
}

/// A chunk with one thought-summary part.
pub fn thought_chunk(text: &str) -> Value {
    parts_chunk(vec![json!({ "text": text, "thought": true })])
}

/// A `functionCall` part, as older models send it (no id).
pub fn function_call(name: &str, args: Value) -> Value {
    json!({ "functionCall": { "name": name, "args": args } })
}

/// The last chunk: an empty text part, `finishReason` and usage (Gemini sends usage on
/// intermediate chunks too; tests add it there with [`with_usage`]).
pub fn finish_chunk(reason: &str, usage: GeminiUsage) -> Value {
    let chunk = json!({
        "candidates": [{
            "content": { "role": "model", "parts": [{ "text": "" }] },
            "finishReason": reason,
            "index": 0,
        }],
        "modelVersion": "gemini-loopback",
        "responseId": "loopback-response",
    });
    with_usage(chunk, usage)
}

/// `chunk` with `usageMetadata`.
pub fn with_usage(mut chunk: Value, usage: GeminiUsage) -> Value {
    let mut metadata = json!({
        "promptTokenCount": usage.prompt,
        "candidatesTokenCount": usage.candidates,
        "totalTokenCount": usage.prompt + usage.candidates + usage.thoughts,
    });
    if usage.cached > 0 {
        metadata["cachedContentTokenCount"] = usage.cached.into();
    }
    if usage.thoughts > 0 {
        metadata["thoughtsTokenCount"] = usage.thoughts.into();
    }
    chunk["usageMetadata"] = metadata;
    chunk
}

/// A mid-stream error chunk in Google's format.
pub fn error_chunk(code: u16, status: &str, message: &str) -> Value {
    json!({ "error": { "code": code, "message": message, "status": status } })
}

/// One recorded request.
#[derive(Clone, Debug)]
pub struct GeminiRequest {
    /// The model from the URL path.
    pub model: String,
    pub body: Value,
}

/// A running loopback server; stops when dropped.
pub struct GeminiWireServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

struct Shared {
    api_key: String,
    state: Mutex<(VecDeque<GeminiReply>, Vec<GeminiRequest>)>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, (VecDeque<GeminiReply>, Vec<GeminiRequest>)> {
        // Test state stays usable after a panicking handler; the panic is what matters.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl GeminiWireServer {
    /// Listens on `127.0.0.1:0` and answers with `replies` in order. Needs a tokio runtime.
    pub async fn start(api_key: &str, replies: Vec<GeminiReply>) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            api_key: api_key.to_owned(),
            state: Mutex::new((replies.into(), Vec::new())),
        });
        let app = Router::new()
            .route("/v1beta/models/{action}", post(generate))
            .with_state(shared.clone());
        let (shutdown, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let serve = axum::serve(listener, app).with_graceful_shutdown(async {
                let _ = stopped.await;
            });
            if let Err(e) = serve.await {
                tracing::warn!(error = %e, "loopback Gemini server stopped");
            }
        });
        Ok(Self {
            addr,
            shared,
            shutdown: Some(shutdown),
            task,
        })
    }

    /// `http://127.0.0.1:PORT`, the value for a provider's base URL.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The requests received so far, in order (including refused ones).
    pub fn requests(&self) -> Vec<GeminiRequest> {
        self.shared.lock().1.clone()
    }
}

impl Drop for GeminiWireServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        self.task.abort();
    }
}

async fn generate(
    State(shared): State<Arc<Shared>>,
    Path(action): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(model) = action.strip_suffix(":streamGenerateContent") else {
        return error_response(404, &format!("unknown method in `{action}`"), None);
    };
    let body: Value = match serde_json::from_slice(&body) {
        Ok(body) => body,
        Err(e) => return error_response(400, &format!("Invalid JSON payload received. {e}"), None),
    };
    shared.lock().1.push(GeminiRequest {
        model: model.to_owned(),
        body,
    });
    let key = headers.get("x-goog-api-key").and_then(|v| v.to_str().ok());
    if key != Some(shared.api_key.as_str()) {
        // Unlike the real service, the message quotes the key, so tests prove it is
        // redacted before it reaches an event.
        let message = format!(
            "API key not valid ({}). Please pass a valid API key.",
            key.unwrap_or_default()
        );
        return error_response(400, &message, None);
    }
    if !query.unwrap_or_default().split('&').any(|p| p == "alt=sse") {
        return error_response(
            400,
            "this loopback server only answers server-sent events (alt=sse)",
            None,
        );
    }
    let reply = shared.lock().0.pop_front();
    match reply {
        None => error_response(500, "loopback script exhausted", None),
        Some(GeminiReply::Error {
            status,
            message,
            retry_after,
        }) => error_response(status, &message, retry_after),
        Some(GeminiReply::Stream(chunks)) => {
            // Gemini separates events with CRLF pairs.
            let body =
                futures::stream::iter(chunks.into_iter().map(|chunk| {
                    Ok::<_, Infallible>(Bytes::from(format!("data: {chunk}\r\n\r\n")))
                }));
            (
                [(header::CONTENT_TYPE, "text/event-stream")],
                Body::from_stream(body),
            )
                .into_response()
        }
    }
}

fn error_response(status: u16, message: &str, retry_after: Option<u64>) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let code = match status.as_u16() {
        400 => "INVALID_ARGUMENT",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        _ => "INTERNAL",
    };
    let mut response = (
        status,
        axum::Json(json!({
            "error": { "code": status.as_u16(), "message": message, "status": code }
        })),
    )
        .into_response();
    if let Some(seconds) = retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}
