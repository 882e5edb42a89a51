//! The OpenAI chat-completions wire format, for OpenAI itself and for every server that
//! copies it behind a base URL.
//!
//! A call is `POST {base_url}/chat/completions` with `stream: true`, answered with
//! server-sent events. Starting the call is retried (429, 5xx, connection failures) with
//! bounded backoff; once the response is accepted nothing is retried, because the caller
//! may already hold part of the answer.
//!
//! `openai` also speaks the Responses API (`POST {base_url}/responses`), chosen per model
//! with `api: responses` in the model config (default `chat_completions`): the transport,
//! retries and errors are shared, only the body and the event decoding differ.

mod decode;
#[cfg(test)]
mod family_tests;
mod request;
mod responses;
mod responses_request;
#[cfg(test)]
mod responses_tests;
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
use decode::{ChunkDecoder, ErrorBody, Flow};
use request::Api;
use responses::ResponsesDecoder;

pub(crate) use request::validate_config;

/// Longest provider error text kept in a message: enough for any real explanation, not
/// enough for an HTML error page to flood an event.
const MAX_ERROR_CHARS: usize = 1000;

/// Most of an error body ever read.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// How long to wait for the end of the body after `[DONE]`.
const DRAIN_TIMEOUT: Duration = Duration::from_millis(50);

/// Everything an OpenAI-wire provider needs; built by the registry from operator settings.
pub(crate) struct OpenAiConfig {
    /// The provider name callers used (`openai`), for messages.
    pub name: String,
    /// Without the trailing `/chat/completions`.
    pub base_url: String,
    pub api_key: String,
    pub client: reqwest::Client,
    /// Connect plus response headers.
    pub request_timeout: Duration,
    /// Longest silence between two pieces of the stream.
    pub idle_timeout: Duration,
    pub retry: RetryPolicy,
    pub auth: WireAuth,
    pub endpoint: Endpoint,
}

/// How the key travels. An empty key (local servers) sends no header at all.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum WireAuth {
    /// `Authorization: Bearer <key>`: OpenAI and nearly every compatible server.
    Bearer,
    /// `api-key: <key>`: Azure OpenAI.
    ApiKeyHeader,
}

/// Where the chat-completions call goes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Endpoint {
    /// `{base_url}/chat/completions`.
    ChatCompletions,
    /// Azure's `{base_url}/openai/deployments/{model}/chat/completions?api-version=...`:
    /// the model name is the deployment name, and the API version comes from the model
    /// config's `api_version`, else [`AZURE_API_VERSION`].
    AzureDeployment,
}

/// The latest generally available Azure OpenAI data-plane API version that streams chat
/// completions with usage; a model config's `api_version` overrides it.
pub(crate) const AZURE_API_VERSION: &str = "2024-10-21";

/// A provider speaking the chat-completions wire format. Cheap to clone and share.
#[derive(Clone)]
pub(crate) struct OpenAiProvider {
    config: Arc<OpenAiConfig>,
    endpoint: Arc<str>,
    responses_endpoint: Arc<str>,
}

impl OpenAiProvider {
    pub fn new(config: OpenAiConfig) -> Self {
        let base = config.base_url.trim_end_matches('/');
        let endpoint = format!("{base}/chat/completions");
        let responses_endpoint = format!("{base}/responses");
        Self {
            config: Arc::new(config),
            endpoint: endpoint.into(),
            responses_endpoint: responses_endpoint.into(),
        }
    }
}

impl OpenAiProvider {
    /// The URL of one call: fixed per API, except on Azure where it names the deployment
    /// (Azure is only called through chat completions).
    fn endpoint_for(&self, request: &ModelRequest, api: Api) -> Result<Arc<str>, ProviderError> {
        match (self.config.endpoint, api) {
            (Endpoint::ChatCompletions, Api::ChatCompletions) => return Ok(self.endpoint.clone()),
            (Endpoint::ChatCompletions, Api::Responses) => {
                return Ok(self.responses_endpoint.clone());
            }
            (Endpoint::AzureDeployment, Api::Responses) => {
                return Err(ProviderError::invalid_model(
                    request.model.to_string(),
                    "`api: responses` is not supported through Azure deployments; use chat_completions",
                ));
            }
            (Endpoint::AzureDeployment, Api::ChatCompletions) => {}
        }
        let version = request
            .model
            .config_str("api_version")
            .unwrap_or(AZURE_API_VERSION);
        let mut url =
            reqwest::Url::parse(&self.config.base_url).map_err(|e| ProviderError::Setup {
                provider: self.config.name.clone(),
                message: format!("base_url `{}` is not a URL: {e}", self.config.base_url),
            })?;
        url.path_segments_mut()
            .map_err(|()| ProviderError::Setup {
                provider: self.config.name.clone(),
                message: format!("base_url `{}` cannot have a path", self.config.base_url),
            })?
            .pop_if_empty()
            .extend(["openai", "deployments", request.model.name.as_str()])
            .extend(["chat", "completions"]);
        url.query_pairs_mut().append_pair("api-version", version);
        Ok(url.as_str().into())
    }
}

impl ModelProvider for OpenAiProvider {
    fn stream(
        &self,
        request: ModelRequest,
    ) -> BoxStream<'static, Result<ModelDelta, ProviderError>> {
        let api = Api::of(&request.model);
        let endpoint = match self.endpoint_for(&request, api) {
            Ok(endpoint) => endpoint,
            Err(e) => return futures::stream::once(async move { Err(e) }).boxed(),
        };
        let body = match api {
            Api::ChatCompletions => request::body(&request),
            Api::Responses => responses_request::body(&request),
        };
        let call = Call {
            request: CallRequest {
                config: self.config.clone(),
                endpoint,
                body: Bytes::from(body.to_string()),
                model: request.model.name,
                api,
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

/// What is sent, kept apart from the stream state so retries can borrow it while the
/// (not `Sync`) response stream lives next to it.
struct CallRequest {
    config: Arc<OpenAiConfig>,
    endpoint: Arc<str>,
    body: Bytes,
    model: String,
    api: Api,
}

enum Phase {
    Start,
    Streaming {
        events: SseEvents,
        decoder: Decoder,
    },
    /// `[DONE]` arrived; reading the body to its end returns the connection to the pool.
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
        Some(item.map_err(|e| e.redact_secret(&self.request.config.api_key)))
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
                    // Servers end the body right after `[DONE]`; one that does not only
                    // costs its connection, never the caller's time.
                    let _ = tokio::time::timeout(DRAIN_TIMEOUT, drain).await;
                    self.phase = Phase::Done;
                }
                Phase::Start => match self.request.connect().await {
                    Ok(response) => {
                        let config = &self.request.config;
                        self.phase = Phase::Streaming {
                            events: SseEvents::new(response, config.idle_timeout, &config.name),
                            decoder: Decoder::new(self.request.api, &config.name),
                        };
                    }
                    Err(e) => return Some(Err(e)),
                },
                Phase::Streaming { events, decoder } => {
                    let flow = match events.next().await {
                        Some(Ok(event)) => decoder.on_data(&event.data, &mut self.pending),
                        Some(Err(e)) => Err(e),
                        None => decoder.on_end(&mut self.pending).map(|()| Flow::Done),
                    };
                    match flow {
                        Ok(Flow::Continue) => {}
                        Ok(Flow::Done) => {
                            if let Phase::Streaming { events, .. } =
                                std::mem::replace(&mut self.phase, Phase::Done)
                            {
                                self.phase = Phase::Draining(events);
                            }
                        }
                        Err(e) => return Some(Err(e)),
                    }
                }
            }
        }
    }
}

/// The decoder of the call's wire format.
enum Decoder {
    Chat(ChunkDecoder),
    Responses(ResponsesDecoder),
}

impl Decoder {
    fn new(api: Api, provider: &str) -> Self {
        match api {
            Api::ChatCompletions => Self::Chat(ChunkDecoder::new(provider)),
            Api::Responses => Self::Responses(ResponsesDecoder::new(provider)),
        }
    }

    fn on_data(
        &mut self,
        data: &str,
        out: &mut VecDeque<ModelDelta>,
    ) -> Result<Flow, ProviderError> {
        match self {
            Self::Chat(decoder) => decoder.on_data(data, out),
            Self::Responses(decoder) => decoder.on_data(data, out),
        }
    }

    fn on_end(&mut self, out: &mut VecDeque<ModelDelta>) -> Result<(), ProviderError> {
        match self {
            Self::Chat(decoder) => decoder.on_end(out),
            Self::Responses(decoder) => decoder.on_end(out),
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
        let mut builder = config.client.post(&*self.endpoint);
        if !config.api_key.is_empty() {
            builder = match config.auth {
                WireAuth::Bearer => builder.bearer_auth(&config.api_key),
                WireAuth::ApiKeyHeader => builder.header("api-key", &config.api_key),
            };
        }
        let send = builder
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
        let retry_after = retry_after(response.headers());
        let message = self.error_message(response).await;
        if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            Err(AttemptError::Retryable(ProviderError::Unavailable {
                provider: config.name.clone(),
                message: format!("HTTP {}: {message}", status.as_u16()),
                retry_after,
            }))
        } else {
            Err(AttemptError::Fatal(ProviderError::Http {
                provider: config.name.clone(),
                status: status.as_u16(),
                message,
            }))
        }
    }

    /// A 200 that is not an event stream is an error in disguise (some compatible servers
    /// answer errors that way) or a server that ignored `stream: true`.
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
        let message = self.error_message(response).await;
        Err(AttemptError::Fatal(ProviderError::Protocol {
            provider: self.config.name.clone(),
            message: format!("expected an event stream, got {content_type}: {message}"),
        }))
    }

    async fn error_message(&self, response: reqwest::Response) -> String {
        error_message(response, self.config.request_timeout).await
    }
}

/// The provider's explanation from an error body: `error.message` when it is JSON (OpenAI's
/// and Anthropic's error bodies share that shape), else the body itself, shortened.
pub(super) async fn error_message(response: reqwest::Response, timeout: Duration) -> String {
    let status = response.status();
    let body = match tokio::time::timeout(timeout, read_limited(response)).await {
        Ok(Ok(body)) => body,
        Ok(Err(e)) => format!("(unreadable error body: {})", error_chain(&e)),
        Err(_) => "(error body not received in time)".into(),
    };
    let message = match serde_json::from_str::<ErrorBody>(&body) {
        Ok(parsed) => parsed.error.message(),
        Err(_) if body.trim().is_empty() => status
            .canonical_reason()
            .unwrap_or("no error body")
            .to_owned(),
        Err(_) => body,
    };
    shorten(message.trim(), MAX_ERROR_CHARS)
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

/// The wait a provider asked for: OpenAI's `retry-after-ms`, else standard `Retry-After`
/// in seconds (the HTTP-date form is not used by model providers and is ignored).
pub(super) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| headers.get(name)?.to_str().ok()?.trim().parse::<f64>().ok();
    // Bounded so a hostile value cannot overflow `Duration`; anything this long is
    // refused by the retry policy anyway.
    let seconds = |value: f64| {
        (value.is_finite() && value >= 0.0).then(|| Duration::from_secs_f64(value.min(1e9)))
    };
    match number("retry-after-ms") {
        Some(ms) => seconds(ms / 1000.0),
        None => seconds(number("retry-after")?),
    }
}
