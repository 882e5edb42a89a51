//! A loopback server speaking OpenAI's chat-completions wire format, and the Responses API
//! on `/v1/responses` (scripted with [`ResponsesBuilder`] replies).
//!
//! ```text
//! let server = OpenAiWireServer::start(Script::new("sk-test").reply(Reply::text("Hello there"))).await?;
//! // point the provider's settings at server.base_url() ("http://127.0.0.1:PORT/v1")
//! // ... run a model call ...
//! assert_eq!(server.requests()[0]["stream"], true);
//! ```
//!
//! It checks `Authorization: Bearer <key>` (401 in OpenAI's format otherwise), refuses
//! non-streaming requests, records every request body, and answers each request with the
//! next scripted [`Reply`]. Dropped, it stops listening. For benchmarks, [`Script::repeat`]
//! and [`Script::tool_loop`] answer endlessly and record only each call's [`CallTiming`].

mod endless;
mod responses;
mod script;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use script::{
    Reply, Responder, Script, StreamBuilder, WireEvent, WireUsage, chunk, error_object, split,
    usage_chunk,
};

pub use endless::CallTiming;
pub use responses::{ResponsesBuilder, ResponsesUsage};

use endless::Rendered;
use script::{Mode, estimate_tokens};

/// A running loopback server; stops when dropped.
pub struct OpenAiWireServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

/// What the handler and the test share.
struct Shared {
    api_key: String,
    state: Mutex<ServerState>,
}

struct ServerState {
    mode: Mode,
    requests: Vec<Value>,
    calls: Vec<RecordedCall>,
    /// Answered calls since the last [`OpenAiWireServer::take_timings`].
    timings: Vec<CallTiming>,
}

/// How a request reached the server, for tests of URLs and auth headers.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedCall {
    /// E.g. `/v1/chat/completions` or Azure's `/openai/deployments/d/...?api-version=...`.
    pub path_and_query: String,
    pub authorization: Option<String>,
    /// Azure's `api-key` header.
    pub api_key: Option<String>,
}

impl OpenAiWireServer {
    /// Listens on `127.0.0.1:0` and serves `script`. Needs a tokio runtime.
    pub async fn start(script: Script) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            api_key: script.api_key,
            state: Mutex::new(ServerState {
                mode: script.mode,
                requests: Vec::new(),
                calls: Vec::new(),
                timings: Vec::new(),
            }),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(chat_completions))
            .route(
                "/openai/deployments/{deployment}/chat/completions",
                post(chat_completions),
            )
            .route("/v1/responses", post(responses_api))
            .with_state(shared.clone());
        let (shutdown, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let serve = axum::serve(listener, app).with_graceful_shutdown(async {
                let _ = stopped.await;
            });
            if let Err(e) = serve.await {
                tracing::warn!(error = %e, "loopback OpenAI server stopped");
            }
        });
        Ok(Self {
            addr,
            shared,
            shutdown: Some(shutdown),
            task,
        })
    }

    /// `http://127.0.0.1:PORT/v1`, the value for a provider's base URL.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// `http://127.0.0.1:PORT`, for providers whose paths do not start at `/v1` (Azure).
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Path, query and auth headers of every request so far, in order.
    pub fn calls(&self) -> Vec<RecordedCall> {
        self.shared.lock().calls.clone()
    }

    /// The JSON bodies received so far, in order (including refused ones).
    pub fn requests(&self) -> Vec<Value> {
        self.shared.lock().requests.clone()
    }

    /// When each request answered since the last call arrived and was answered, in the
    /// order the answers ended (every mode; an endless server keeps nothing else).
    pub fn take_timings(&self) -> Vec<CallTiming> {
        std::mem::take(&mut self.shared.lock().timings)
    }

    /// Appends a reply to the script of a running server.
    pub fn push_reply(&self, reply: Reply) {
        if let Mode::Scripted(replies) = &mut self.shared.lock().mode {
            replies.push_back(reply);
        }
    }
}

impl Drop for OpenAiWireServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        self.task.abort();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, ServerState> {
        // Test state stays usable after a panicking handler; the panic is what matters.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records a call answered at `answered`.
    fn timed(self: &Arc<Self>, received: Instant) -> impl FnOnce(Instant) + Send + 'static {
        let shared = self.clone();
        move |answered| {
            shared
                .lock()
                .timings
                .push(CallTiming { received, answered });
        }
    }
}

async fn chat_completions(
    State(shared): State<Arc<Shared>>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(&shared, &uri, &headers, &body, echo_reply).await
}

/// The Responses API route: same key check, recording and script as chat completions;
/// scripts answer it with [`ResponsesBuilder`] replies.
async fn responses_api(
    State(shared): State<Arc<Shared>>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(&shared, &uri, &headers, &body, responses_echo_reply).await
}

/// Checks, records and answers one request; `echo` builds the answer in echo mode.
async fn answer(
    shared: &Arc<Shared>,
    uri: &axum::http::Uri,
    headers: &HeaderMap,
    body: &Bytes,
    echo: fn(&Value) -> Reply,
) -> Response {
    let received = Instant::now();
    let endless = match &shared.lock().mode {
        Mode::Endless(endless) => Some(endless.clone()),
        _ => None,
    };
    if let Some(endless) = endless {
        if let Some(refusal) = check_key(headers, &shared.api_key) {
            return refusal;
        }
        return match endless.answer(body) {
            Ok(Rendered::Bytes(bytes)) => {
                let body = futures::stream::iter([Ok::<_, Infallible>(bytes)])
                    .chain(endless::end_marker(shared.timed(received)));
                sse_response(Body::from_stream(body))
            }
            Ok(Rendered::Reply(reply)) => render(reply, shared.timed(received)).await,
            Err(message) => error_response(400, &message, None),
        };
    }
    let header_text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    shared.lock().calls.push(RecordedCall {
        path_and_query: uri
            .path_and_query()
            .map(|p| p.as_str().to_owned())
            .unwrap_or_default(),
        authorization: header_text("authorization"),
        api_key: header_text("api-key"),
    });
    let request: Value = match serde_json::from_slice(body) {
        Ok(request) => request,
        Err(e) => {
            return error_response(
                400,
                &format!("We could not parse the JSON body of your request. ({e})"),
                None,
            );
        }
    };
    shared.lock().requests.push(request.clone());
    if let Some(refusal) = check_key(headers, &shared.api_key) {
        return refusal;
    }
    if request.get("stream") != Some(&Value::Bool(true)) {
        return error_response(
            400,
            "this loopback server only answers streaming requests (stream: true)",
            None,
        );
    }
    let reply = {
        let mut state = shared.lock();
        let index = state.requests.len();
        match &mut state.mode {
            Mode::Echo => echo(&request),
            Mode::Respond(respond) => respond(&request),
            Mode::Scripted(replies) => replies.pop_front().unwrap_or_else(|| {
                Reply::error(
                    500,
                    format!("loopback script exhausted: no reply scripted for request #{index}"),
                )
            }),
            // Answered above, before anything is recorded.
            Mode::Endless(_) => Reply::error(500, "an endless server records no request"),
        }
    };
    render(reply, shared.timed(received)).await
}

/// `None` when the request carries the right key (as a bearer token, or Azure's `api-key`
/// header), or when the script has no key (a local server); else OpenAI's 401, which
/// (unlike the real service, which masks it) quotes the key in full so tests prove it
/// gets redacted.
fn check_key(headers: &HeaderMap, api_key: &str) -> Option<Response> {
    if api_key.is_empty() {
        return None;
    }
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .or_else(|| headers.get("api-key").and_then(|v| v.to_str().ok()));
    match given {
        Some(key) if key == api_key => None,
        Some(key) => Some(error_response(
            401,
            &format!(
                "Incorrect API key provided: {key}. You can find your API key at https://platform.openai.com/account/api-keys."
            ),
            None,
        )),
        None => Some(error_response(
            401,
            "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
            None,
        )),
    }
}

/// Answers with `reply`, telling `on_end` when its last byte left.
async fn render(mut reply: Reply, on_end: impl FnOnce(Instant) + Send + 'static) -> Response {
    loop {
        match reply {
            Reply::Delayed(delay, inner) => {
                tokio::time::sleep(delay).await;
                reply = *inner;
            }
            Reply::Error {
                status,
                message,
                retry_after,
            } => {
                on_end(Instant::now());
                return error_response(status, &message, retry_after);
            }
            Reply::Stream(events) => return stream_response(events, on_end),
        }
    }
}

fn stream_response(
    events: Vec<WireEvent>,
    on_end: impl FnOnce(Instant) + Send + 'static,
) -> Response {
    let body = futures::stream::iter(events)
        .filter_map(|event| async move {
            if let WireEvent::Pause(duration) = event {
                tokio::time::sleep(duration).await;
                return None;
            }
            let mut text = String::new();
            endless::push_event(&mut text, &event);
            Some(Ok::<_, Infallible>(Bytes::from(text)))
        })
        .chain(endless::end_marker(on_end));
    sse_response(Body::from_stream(body))
}

fn sse_response(body: Body) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/event-stream; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

fn error_response(status: u16, message: &str, retry_after: Option<u64>) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (
        status,
        axum::Json(json!({ "error": error_object(status.as_u16(), message) })),
    )
        .into_response();
    if let Some(seconds) = retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

/// The Responses API echo answer: the start of the last input item's text, with usage.
fn responses_echo_reply(request: &Value) -> Reply {
    let last = request["input"]
        .as_array()
        .and_then(|items| items.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default();
    let text: String = match last.chars().take(64).collect::<String>() {
        start if start.is_empty() => "ok".to_owned(),
        start => format!("echo: {start}"),
    };
    ResponsesBuilder::new()
        .text(&text, 2)
        .completed(ResponsesUsage {
            input_tokens: estimate_tokens(&request.to_string()),
            output_tokens: estimate_tokens(&text),
            ..ResponsesUsage::default()
        })
        .build()
}

/// The echo answer: the start of the last message, in two deltas, with usage.
fn echo_reply(request: &Value) -> Reply {
    let last = request["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default();
    let text: String = match last.chars().take(64).collect::<String>() {
        start if start.is_empty() => "ok".to_owned(),
        start => format!("echo: {start}"),
    };
    StreamBuilder::new()
        .text(&text, 2)
        .finish("stop")
        .usage(WireUsage {
            prompt_tokens: estimate_tokens(&request.to_string()),
            completion_tokens: estimate_tokens(&text),
            ..WireUsage::default()
        })
        .done()
        .build()
}
