//! One streaming model call over HTTP and server-sent events, shared by every wire format.
//!
//! Providers differ in URL, headers, body, error-body shape and event decoding; those come
//! in as a [`Wire`] and a [`Decoder`]. Starting the call, retrying it and reading its
//! events are the same everywhere, so they live here once. Only the start of a call is
//! retried (429, 5xx, connection failures) with bounded backoff: once the response is
//! accepted the caller may already hold part of the answer.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use reqwest::{RequestBuilder, StatusCode};

use super::error::{redact, redact_and_shorten};
use super::retry::{RetryDecision, RetryPolicy, retry_after};
use super::sse::SseEvents;
use super::{ModelDelta, ProviderError};
use crate::text::shorten;

/// Longest provider error text kept in a message: enough for any real explanation, not
/// enough for an HTML error page to flood an event.
const MAX_ERROR_CHARS: usize = 1000;

/// Most of an error body ever read.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// How long to wait for the end of the body after the decoder saw the answer's end.
const DRAIN_TIMEOUT: Duration = Duration::from_millis(50);

/// What the stream does after an event.
#[derive(Debug, PartialEq)]
pub(super) enum Flow {
    Continue,
    /// The wire's end marker arrived: the answer is complete.
    Done,
}

/// Turns one wire format's events into [`ModelDelta`]s.
/// The JSON of one SSE `data` payload, as every decoder reads it: `Ok(None)` for an empty
/// one (a keep-alive), else the payload parsed as `T`; what does not parse is an error
/// naming `what` and quoting the payload's start.
pub(super) fn parse_data<T: serde::de::DeserializeOwned>(
    data: &str,
    what: &str,
) -> Result<Option<T>, String> {
    let data = data.trim();
    if data.is_empty() {
        return Ok(None);
    }
    serde_json::from_str(data)
        .map(Some)
        .map_err(|e| format!("{what} is not valid JSON ({e}): {}", shorten(data, 200)))
}

pub(super) trait Decoder: Send {
    /// Decodes one SSE `data` payload, appending the deltas it completes to `out`.
    /// An `Err` ends the call: the provider reported an error or stopped making sense.
    fn on_data(
        &mut self,
        data: &str,
        out: &mut VecDeque<ModelDelta>,
    ) -> Result<Flow, ProviderError>;

    /// The server closed the stream; an answer cut off before its end is an `Err`.
    fn on_end(&mut self, out: &mut VecDeque<ModelDelta>) -> Result<(), ProviderError>;
}

/// How a provider's HTTP exchange differs from the others'.
pub(super) trait Wire: Send + Sync + 'static {
    /// Adds the key (and any version pin) the provider authenticates with.
    fn authorize(&self, request: RequestBuilder, api_key: &str) -> RequestBuilder;
    /// The explanation, and any wait asked for, in the provider's error JSON; `None` when
    /// the body is not that JSON.
    fn parse_error(&self, body: &str) -> Option<(String, Option<Duration>)>;
    /// Whether a 200 must be `text/event-stream`: where proxies or compatible servers are
    /// known to answer errors or ignored streaming flags with a plain 200, it is checked.
    fn requires_event_stream(&self) -> bool;
}

/// Everything every call of one provider needs.
pub(super) struct Transport {
    /// The provider name callers used, for messages.
    pub name: String,
    pub api_key: String,
    pub client: reqwest::Client,
    /// Connect plus response headers.
    pub request_timeout: Duration,
    /// Longest silence between two pieces of the stream.
    pub idle_timeout: Duration,
    pub retry: RetryPolicy,
    pub wire: Box<dyn Wire>,
}

/// One call as a stream: nothing happens until the caller polls, and dropping the stream
/// drops the connection.
pub(super) fn stream(
    transport: Arc<Transport>,
    url: Arc<str>,
    body: Bytes,
    model: String,
    decoder: Box<dyn Decoder>,
) -> BoxStream<'static, Result<ModelDelta, ProviderError>> {
    let call = Call {
        request: CallRequest {
            transport,
            url,
            body,
            model,
        },
        decoder,
        phase: Phase::Start,
        pending: VecDeque::new(),
    };
    futures::stream::unfold(call, |mut call| async move {
        let item = call.next().await?;
        Some((item, call))
    })
    .boxed()
}

struct Call {
    request: CallRequest,
    decoder: Box<dyn Decoder>,
    phase: Phase,
    /// Deltas decoded from one event and not yet handed out.
    pending: VecDeque<ModelDelta>,
}

/// What is sent, kept apart from the stream state so retries can borrow it while the
/// (not `Sync`) response stream lives next to it.
struct CallRequest {
    transport: Arc<Transport>,
    url: Arc<str>,
    body: Bytes,
    model: String,
}

enum Phase {
    Start,
    Streaming(SseEvents),
    /// The answer is complete; reading the body to its end returns the connection to the
    /// pool.
    Draining(SseEvents),
    Done,
}

/// A failed attempt to start the call.
enum AttemptError {
    /// Worth another attempt (rate limit, server error, connection failure).
    Retryable(ProviderError),
    Fatal(ProviderError),
}

impl Call {
    /// The next item of the stream; every error leaves with the key redacted.
    async fn next(&mut self) -> Option<Result<ModelDelta, ProviderError>> {
        let item = self.advance().await?;
        if item.is_err() {
            self.phase = Phase::Done;
            self.pending.clear();
        }
        Some(item.map_err(|e| e.redact_secret(&self.request.transport.api_key)))
    }

    async fn advance(&mut self) -> Option<Result<ModelDelta, ProviderError>> {
        loop {
            if let Some(delta) = self.pending.pop_front() {
                return Some(Ok(delta));
            }
            match &mut self.phase {
                Phase::Done => return None,
                Phase::Draining(events) => {
                    let drain = async { while events.next().await.is_some() {} };
                    // Servers end the body right after the answer; one that does not only
                    // costs its connection, never the caller's time.
                    let _ = tokio::time::timeout(DRAIN_TIMEOUT, drain).await;
                    self.phase = Phase::Done;
                }
                Phase::Start => match self.request.connect().await {
                    Ok(response) => {
                        let t = &self.request.transport;
                        let events = SseEvents::new(response, t.idle_timeout, &t.name);
                        self.phase = Phase::Streaming(events);
                    }
                    Err(e) => return Some(Err(e)),
                },
                Phase::Streaming(events) => match events.next().await {
                    Some(Ok(event)) => match self.decoder.on_data(&event.data, &mut self.pending) {
                        Ok(Flow::Continue) => {}
                        Ok(Flow::Done) => {
                            if let Phase::Streaming(events) =
                                std::mem::replace(&mut self.phase, Phase::Done)
                            {
                                self.phase = Phase::Draining(events);
                            }
                        }
                        Err(e) => return Some(Err(e)),
                    },
                    Some(Err(e)) => return Some(Err(e)),
                    None => {
                        self.phase = Phase::Done;
                        if let Err(e) = self.decoder.on_end(&mut self.pending) {
                            return Some(Err(e));
                        }
                    }
                },
            }
        }
    }
}

impl CallRequest {
    /// Starts the call, retrying what is worth retrying.
    async fn connect(&self) -> Result<reqwest::Response, ProviderError> {
        let t = &self.transport;
        let mut retry = 0;
        loop {
            let error = match self.attempt().await {
                Ok(response) => return Ok(response),
                Err(AttemptError::Fatal(e)) => return Err(e),
                Err(AttemptError::Retryable(e)) => e,
            };
            match t.retry.decide(retry, error.retry_after()) {
                RetryDecision::GiveUp => return Err(error),
                RetryDecision::Wait(wait) => {
                    // The provider's own words may quote the request (the prompt), so
                    // they are only logged when debug logging is asked for.
                    tracing::warn!(
                        provider = %t.name,
                        model = %self.model,
                        retry = retry + 1,
                        wait_ms = wait.as_millis() as u64,
                        reason = error.reason(),
                        "model call failed to start; retrying",
                    );
                    tracing::debug!(
                        provider = %t.name,
                        error = %redact(&error.to_string(), &t.api_key),
                        "model call failure",
                    );
                    tokio::time::sleep(wait).await;
                    retry += 1;
                }
            }
        }
    }

    /// One HTTP request, up to the response headers.
    async fn attempt(&self) -> Result<reqwest::Response, AttemptError> {
        let t = &self.transport;
        tracing::debug!(provider = %t.name, model = %self.model, "starting model call");
        let send = t
            .wire
            .authorize(t.client.post(&*self.url), &t.api_key)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream")
            .body(self.body.clone())
            .send();
        let timeout = ProviderError::Timeout {
            provider: t.name.clone(),
            what: "no response",
            after: t.request_timeout,
        };
        let response = match tokio::time::timeout(t.request_timeout, send).await {
            Err(_) => return Err(AttemptError::Fatal(timeout)),
            Ok(Err(e)) if e.is_timeout() => return Err(AttemptError::Fatal(timeout)),
            Ok(Err(e)) => {
                let error = ProviderError::Unavailable {
                    provider: t.name.clone(),
                    message: format!("request failed: {}", crate::error::chain(&e)),
                    retry_after: None,
                };
                let retryable = e.is_connect() || (e.is_request() && !e.is_builder());
                return Err(if retryable {
                    AttemptError::Retryable(error)
                } else {
                    AttemptError::Fatal(error)
                });
            }
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if status.is_success() {
            if t.wire.requires_event_stream() {
                return self.check_event_stream(response).await;
            }
            return Ok(response);
        }
        let header_wait = retry_after(response.headers());
        let (message, body_wait) = self.error_message(response).await;
        if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            Err(AttemptError::Retryable(ProviderError::Unavailable {
                provider: t.name.clone(),
                message: format!("HTTP {}: {message}", status.as_u16()),
                retry_after: header_wait.or(body_wait),
            }))
        } else {
            Err(AttemptError::Fatal(ProviderError::Http {
                provider: t.name.clone(),
                status: status.as_u16(),
                message,
            }))
        }
    }

    /// A 200 that is not an event stream is an error in disguise or a server that ignored
    /// the request to stream: its body is not something the decoder can read.
    async fn check_event_stream(
        &self,
        response: reqwest::Response,
    ) -> Result<reqwest::Response, AttemptError> {
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("text/event-stream")
            .to_ascii_lowercase();
        if content_type.starts_with("text/event-stream") {
            return Ok(response);
        }
        let (message, _) = self.error_message(response).await;
        Err(AttemptError::Fatal(ProviderError::Protocol {
            provider: self.transport.name.clone(),
            message: format!("expected an event stream, got {content_type}: {message}"),
        }))
    }

    /// The provider's explanation from an error body (its error JSON, else the body
    /// itself, shortened) and any wait the body asks for.
    async fn error_message(&self, response: reqwest::Response) -> (String, Option<Duration>) {
        let t = &self.transport;
        let status = response.status();
        let body = match tokio::time::timeout(t.request_timeout, read_limited(response)).await {
            Ok(Ok(body)) => body,
            Ok(Err(e)) => format!("(unreadable error body: {})", crate::error::chain(&e)),
            Err(_) => "(error body not received in time)".into(),
        };
        let (message, wait) = match t.wire.parse_error(&body) {
            Some(parsed) => parsed,
            None if body.trim().is_empty() => (
                status
                    .canonical_reason()
                    .unwrap_or("no error body")
                    .to_owned(),
                None,
            ),
            None => (body, None),
        };
        (
            redact_and_shorten(message.trim(), &t.api_key, MAX_ERROR_CHARS),
            wait,
        )
    }
}

/// Reads at most [`MAX_ERROR_BODY_BYTES`] of a body: an error page has no business being
/// large, and a broken server must not make us buffer without bound.
async fn read_limited(mut response: reqwest::Response) -> Result<String, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = MAX_ERROR_BODY_BYTES.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= MAX_ERROR_BODY_BYTES {
            break;
        }
    }
    Ok(String::from_utf8_lossy(&body).into_owned())
}
