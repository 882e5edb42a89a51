//! Google's Gemini API (`google` / `gemini`): `streamGenerateContent` with server-sent
//! events.
//!
//! A call is `POST {base_url}/v1beta/models/{model}:streamGenerateContent?alt=sse` with the
//! key in `x-goog-api-key` (never in the URL, so it cannot leak through a logged URL).
//! Each event is a whole `GenerateContentResponse`; the stream has no `[DONE]` marker and
//! simply ends after the chunk carrying `finishReason`. Starting the call is retried (429,
//! 5xx, connection failures) with bounded backoff; once the response is accepted nothing
//! is retried, because the caller may already hold part of the answer.

mod decode;
mod request;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap};

use super::error::{redact, shorten};
use super::retry::{RetryDecision, RetryPolicy};
use super::sse::{SseEvents, error_chain};
use super::{ModelDelta, ModelProvider, ModelRequest, ProviderError};
use decode::{ChunkDecoder, ErrorBody};

/// The public endpoint; operators may point a provider elsewhere (a proxy, a test server).
pub(crate) const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com";

/// Longest provider error text kept in a message.
const MAX_ERROR_CHARS: usize = 1000;

/// Most of an error body ever read.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// Everything a Gemini provider needs; built by the registry from operator settings.
pub(crate) struct GeminiConfig {
    /// The provider name callers used (`google` or `gemini`), for messages.
    pub name: String,
    /// Without the trailing `/v1beta/...`.
    pub base_url: String,
    pub api_key: String,
    pub client: reqwest::Client,
    /// Connect plus response headers.
    pub request_timeout: Duration,
    /// Longest silence between two pieces of the stream.
    pub idle_timeout: Duration,
    pub retry: RetryPolicy,
}

/// A provider speaking the Gemini wire format. Cheap to clone and share.
#[derive(Clone)]
pub(crate) struct GeminiProvider {
    config: Arc<GeminiConfig>,
}

impl GeminiProvider {
    pub fn new(config: GeminiConfig) -> Self {
        Self {
            config: Arc::new(config),
        }
    }

    /// The model's streaming URL. The model name goes into a path segment, so it is
    /// percent-encoded: a name with `/` or `?` must not reach another endpoint.
    fn endpoint(&self, model: &str) -> String {
        let model: String = url_segment(model.strip_prefix("models/").unwrap_or(model));
        format!(
            "{}/v1beta/models/{model}:streamGenerateContent?alt=sse",
            self.config.base_url.trim_end_matches('/')
        )
    }
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
fn url_segment(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

impl ModelProvider for GeminiProvider {
    fn stream(
        &self,
        request: ModelRequest,
    ) -> BoxStream<'static, Result<ModelDelta, ProviderError>> {
        let call = Call {
            request: CallRequest {
                config: self.config.clone(),
                endpoint: self.endpoint(&request.model.name),
                body: Bytes::from(request::body(&request).to_string()),
                model: request.model.name,
            },
            phase: Phase::Start,
            pending: VecDeque::new(),
        };
        futures::stream::unfold(call, |mut call| async move {
            let item = call.next().await?;
            Some((item, call))
        })
        .boxed()
    }
}

/// One model call, driven by its stream: nothing happens until the caller polls, and
/// dropping the stream drops the connection.
struct Call {
    request: CallRequest,
    phase: Phase,
    /// Deltas decoded from one chunk and not yet handed out.
    pending: VecDeque<ModelDelta>,
}

/// What is sent, kept apart from the (not `Sync`) response stream so retries can borrow it.
struct CallRequest {
    config: Arc<GeminiConfig>,
    endpoint: String,
    body: Bytes,
    model: String,
}

enum Phase {
    Start,
    Streaming {
        events: SseEvents,
        decoder: ChunkDecoder,
    },
    Done,
}

/// A failed attempt to start the call.
enum AttemptError {
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
        Some(item.map_err(|e| e.redact_secret(&self.request.config.api_key)))
    }

    async fn advance(&mut self) -> Option<Result<ModelDelta, ProviderError>> {
        loop {
            if let Some(delta) = self.pending.pop_front() {
                return Some(Ok(delta));
            }
            match &mut self.phase {
                Phase::Done => return None,
                Phase::Start => match self.request.connect().await {
                    Ok(response) => {
                        let config = &self.request.config;
                        self.phase = Phase::Streaming {
                            events: SseEvents::new(response, config.idle_timeout, &config.name),
                            decoder: ChunkDecoder::new(&config.name),
                        };
                    }
                    Err(e) => return Some(Err(e)),
                },
                Phase::Streaming { events, decoder } => {
                    let result = match events.next().await {
                        Some(Ok(event)) => decoder.on_data(&event.data, &mut self.pending),
                        Some(Err(e)) => Err(e),
                        None => {
                            let end = decoder.on_end(&mut self.pending);
                            self.phase = Phase::Done;
                            end
                        }
                    };
                    if let Err(e) = result {
                        return Some(Err(e));
                    }
                }
            }
        }
    }
}

impl CallRequest {
    /// Starts the call, retrying what is worth retrying.
    async fn connect(&self) -> Result<reqwest::Response, ProviderError> {
        let mut retry = 0;
        loop {
            let error = match self.attempt().await {
                Ok(response) => return Ok(response),
                Err(AttemptError::Fatal(e)) => return Err(e),
                Err(AttemptError::Retryable(e)) => e,
            };
            match self.config.retry.decide(retry, error.retry_after()) {
                RetryDecision::GiveUp => return Err(error),
                RetryDecision::Wait(wait) => {
                    tracing::warn!(
                        provider = %self.config.name,
                        model = %self.model,
                        retry = retry + 1,
                        wait_ms = wait.as_millis() as u64,
                        error = %redact(&error.to_string(), &self.config.api_key),
                        "model call failed to start; retrying",
                    );
                    tokio::time::sleep(wait).await;
                    retry += 1;
                }
            }
        }
    }

    /// One HTTP request, up to the response headers.
    async fn attempt(&self) -> Result<reqwest::Response, AttemptError> {
        let config = &self.config;
        tracing::debug!(provider = %config.name, model = %self.model, "starting model call");
        let send = config
            .client
            .post(&self.endpoint)
            .header("x-goog-api-key", &config.api_key)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream")
            .body(self.body.clone())
            .send();
        let timeout = ProviderError::Timeout {
            provider: config.name.clone(),
            what: "no response",
            after: config.request_timeout,
        };
        let response = match tokio::time::timeout(config.request_timeout, send).await {
            Err(_) => return Err(AttemptError::Fatal(timeout)),
            Ok(Err(e)) if e.is_timeout() => return Err(AttemptError::Fatal(timeout)),
            Ok(Err(e)) => {
                let error = ProviderError::Unavailable {
                    provider: config.name.clone(),
                    message: format!("request failed: {}", error_chain(&e)),
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
            return self.check_event_stream(response).await;
        }
        let header_wait = retry_after(response.headers());
        let (message, body_wait) = self.error_message(response).await;
        if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            Err(AttemptError::Retryable(ProviderError::Unavailable {
                provider: config.name.clone(),
                message: format!("HTTP {}: {message}", status.as_u16()),
                retry_after: header_wait.or(body_wait),
            }))
        } else {
            Err(AttemptError::Fatal(ProviderError::Http {
                provider: config.name.clone(),
                status: status.as_u16(),
                message,
            }))
        }
    }

    /// A 200 that is not an event stream means `alt=sse` was ignored (a proxy rewrote the
    /// URL): the body is a JSON array the decoder cannot stream.
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
            provider: self.config.name.clone(),
            message: format!("expected an event stream, got {content_type}: {message}"),
        }))
    }

    /// The provider's explanation from an error body (`error.message` of Google's error
    /// JSON, else the body itself, shortened) and the `RetryInfo.retryDelay` Gemini puts in
    /// the body of a 429 instead of a `Retry-After` header.
    async fn error_message(&self, response: reqwest::Response) -> (String, Option<Duration>) {
        let status = response.status();
        let body =
            match tokio::time::timeout(self.config.request_timeout, read_limited(response)).await {
                Ok(Ok(body)) => body,
                Ok(Err(e)) => format!("(unreadable error body: {})", error_chain(&e)),
                Err(_) => "(error body not received in time)".into(),
            };
        let (message, wait) = match serde_json::from_str::<ErrorBody>(&body) {
            Ok(parsed) => (parsed.error.message(), parsed.error.retry_delay()),
            Err(_) if body.trim().is_empty() => (
                status
                    .canonical_reason()
                    .unwrap_or("no error body")
                    .to_owned(),
                None,
            ),
            Err(_) => (body, None),
        };
        (shorten(message.trim(), MAX_ERROR_CHARS), wait)
    }
}

/// Reads at most [`MAX_ERROR_BODY_BYTES`] of a body.
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

/// A standard `Retry-After` in seconds (the HTTP-date form is not used by model providers).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    let seconds: f64 = value.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
}
