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

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::stream::BoxStream;
use reqwest::RequestBuilder;

use super::call::{self, Transport, Wire};
use super::retry::RetryPolicy;
use super::{ModelDelta, ModelProvider, ModelRequest, ProviderError};
use decode::{ChunkDecoder, ErrorBody};

/// The public endpoint; operators may point a provider elsewhere (a proxy, a test server).
pub(crate) const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com";

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
    transport: Arc<Transport>,
    base_url: Arc<str>,
}

impl GeminiProvider {
    pub fn new(config: GeminiConfig) -> Self {
        Self {
            transport: Arc::new(Transport {
                name: config.name,
                api_key: config.api_key,
                client: config.client,
                request_timeout: config.request_timeout,
                idle_timeout: config.idle_timeout,
                retry: config.retry,
                wire: Box::new(GeminiWire),
            }),
            base_url: config.base_url.into(),
        }
    }

    /// The model's streaming URL. The model name goes into a path segment, so it is
    /// percent-encoded: a name with `/` or `?` must not reach another endpoint.
    fn endpoint(&self, model: &str) -> String {
        let model: String = url_segment(model.strip_prefix("models/").unwrap_or(model));
        format!(
            "{}/v1beta/models/{model}:streamGenerateContent?alt=sse",
            self.base_url.trim_end_matches('/')
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
        call::stream(
            self.transport.clone(),
            self.endpoint(&request.model.name).into(),
            Bytes::from(request::body(&request).to_string()),
            request.model.name,
            Box::new(ChunkDecoder::new(&self.transport.name)),
        )
    }
}

/// Google's key header and error JSON.
struct GeminiWire;

impl Wire for GeminiWire {
    fn authorize(&self, request: RequestBuilder, api_key: &str) -> RequestBuilder {
        request.header("x-goog-api-key", api_key)
    }

    /// `error.message` of Google's error JSON, and the `RetryInfo.retryDelay` Gemini puts
    /// in the body of a 429 instead of a `Retry-After` header.
    fn parse_error(&self, body: &str) -> Option<(String, Option<Duration>)> {
        let parsed = serde_json::from_str::<ErrorBody>(body).ok()?;
        Some((parsed.error.message(), parsed.error.retry_delay()))
    }

    /// A 200 that is not an event stream means `alt=sse` was ignored (a proxy rewrote the
    /// URL): the body is a JSON array the decoder cannot stream.
    fn requires_event_stream(&self) -> bool {
        true
    }
}
