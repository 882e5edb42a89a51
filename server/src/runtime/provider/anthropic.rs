//! Anthropic's Messages API.
//!
//! A call is `POST {base_url}/v1/messages` with `stream: true`, authenticated with
//! `x-api-key` and pinned to `anthropic-version: 2023-06-01`, answered with server-sent
//! events. As for the OpenAI wire, only the start of a call is retried (429, 5xx including
//! Anthropic's 529 "overloaded", connection failures), honouring `retry-after`.

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
use reqwest::header::{ACCEPT, CONTENT_TYPE};

use super::error::redact;
use super::openai::{OpenAiConfig, error_message, retry_after};
use super::retry::{RetryDecision, RetryPolicy};
use super::sse::{SseEvents, error_chain};
use super::{ModelDelta, ModelProvider, ModelRequest, ProviderError};
use decode::{EventDecoder, Flow};

/// The API version every request is pinned to; the event shapes decoded here are its.
const API_VERSION: &str = "2023-06-01";

/// How long to wait for the end of the body after `message_stop`.
const DRAIN_TIMEOUT: Duration = Duration::from_millis(50);

/// A provider speaking the Messages API. Built from the same operator settings as the
/// OpenAI wire (its `auth` and `endpoint` do not apply). Cheap to share.
pub(crate) struct AnthropicProvider {
    shared: Arc<Shared>,
}

/// What every call of this provider needs.
struct Shared {
    name: String,
    endpoint: String,
    api_key: String,
    client: reqwest::Client,
    request_timeout: Duration,
    idle_timeout: Duration,
    retry: RetryPolicy,
}

impl AnthropicProvider {
    pub fn new(config: OpenAiConfig) -> Self {
        let endpoint = format!("{}/v1/messages", config.base_url.trim_end_matches('/'));
        Self {
            shared: Arc::new(Shared {
                name: config.name,
                endpoint,
                api_key: config.api_key,
                client: config.client,
                request_timeout: config.request_timeout,
                idle_timeout: config.idle_timeout,
                retry: config.retry,
            }),
        }
    }
}

impl ModelProvider for AnthropicProvider {
    fn stream(
        &self,
        request: ModelRequest,
    ) -> BoxStream<'static, Result<ModelDelta, ProviderError>> {
        let call = Call {
            request: CallRequest {
                shared: self.shared.clone(),
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

/// One model call, driven by its stream; dropping the stream drops the connection.
struct Call {
    request: CallRequest,
    phase: Phase,
    /// Deltas decoded from one event and not yet handed out.
    pending: VecDeque<ModelDelta>,
}

/// What is sent, kept apart from the stream state so retries can borrow it while the
/// (not `Sync`) response stream lives next to it.
struct CallRequest {
    shared: Arc<Shared>,
    body: Bytes,
    model: String,
}

enum Phase {
    Start,
    Streaming {
        events: SseEvents,
        decoder: EventDecoder,
    },
    /// `message_stop` arrived; reading the body to its end returns the connection.
    Draining(SseEvents),
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
        Some(item.map_err(|e| e.redact_secret(&self.request.shared.api_key)))
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
                    let _ = tokio::time::timeout(DRAIN_TIMEOUT, drain).await;
                    self.phase = Phase::Done;
                }
                Phase::Start => match self.request.connect().await {
                    Ok(response) => {
                        let shared = &self.request.shared;
                        self.phase = Phase::Streaming {
                            events: SseEvents::new(response, shared.idle_timeout, &shared.name),
                            decoder: EventDecoder::new(&shared.name),
                        };
                    }
                    Err(e) => return Some(Err(e)),
                },
                Phase::Streaming { events, decoder } => {
                    let flow = match events.next().await {
                        Some(Ok(event)) => decoder.on_data(&event.data, &mut self.pending),
                        Some(Err(e)) => Err(e),
                        None => decoder.on_end().map(|()| Flow::Done),
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
            match self.shared.retry.decide(retry, error.retry_after()) {
                RetryDecision::GiveUp => return Err(error),
                RetryDecision::Wait(wait) => {
                    tracing::warn!(
                        provider = %self.shared.name,
                        model = %self.model,
                        retry = retry + 1,
                        wait_ms = wait.as_millis() as u64,
                        error = %redact(&error.to_string(), &self.shared.api_key),
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
        let shared = &self.shared;
        tracing::debug!(provider = %shared.name, model = %self.model, "starting model call");
        let send = shared
            .client
            .post(&shared.endpoint)
            .header("x-api-key", &shared.api_key)
            .header("anthropic-version", API_VERSION)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream")
            .body(self.body.clone())
            .send();
        let timeout = ProviderError::Timeout {
            provider: shared.name.clone(),
            what: "no response",
            after: shared.request_timeout,
        };
        let response = match tokio::time::timeout(shared.request_timeout, send).await {
            Err(_) => return Err(AttemptError::Fatal(timeout)),
            Ok(Err(e)) if e.is_timeout() => return Err(AttemptError::Fatal(timeout)),
            Ok(Err(e)) => {
                let error = ProviderError::Unavailable {
                    provider: shared.name.clone(),
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
            return Ok(response);
        }
        let retry_after = retry_after(response.headers());
        let message = error_message(response, shared.request_timeout).await;
        if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            Err(AttemptError::Retryable(ProviderError::Unavailable {
                provider: shared.name.clone(),
                message: format!("HTTP {}: {message}", status.as_u16()),
                retry_after,
            }))
        } else {
            Err(AttemptError::Fatal(ProviderError::Http {
                provider: shared.name.clone(),
                status: status.as_u16(),
                message,
            }))
        }
    }
}
