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

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::stream::BoxStream;
use reqwest::RequestBuilder;

use super::call::{self, Transport, Wire};
use super::openai::{OpenAiConfig, parse_error};
use super::{ModelDelta, ModelProvider, ModelRequest, ProviderError};
use decode::EventDecoder;

/// The API version every request is pinned to; the event shapes decoded here are its.
const API_VERSION: &str = "2023-06-01";

/// [`ReasoningState::format`](crate::chat::ReasoningState) of the thinking blocks
/// this wire produces and sends back.
const REASONING_FORMAT: &str = "anthropic";

/// A provider speaking the Messages API. Built from the same operator settings as the
/// OpenAI wire (its `auth` and `endpoint` do not apply). Cheap to share.
pub(crate) struct AnthropicProvider {
    transport: Arc<Transport>,
    endpoint: Arc<str>,
}

impl AnthropicProvider {
    pub fn new(config: OpenAiConfig) -> Self {
        let endpoint = format!("{}/v1/messages", config.base_url.trim_end_matches('/'));
        Self {
            transport: Arc::new(Transport {
                name: config.name,
                api_key: config.api_key,
                client: config.client,
                request_timeout: config.request_timeout,
                idle_timeout: config.idle_timeout,
                retry: config.retry,
                wire: Box::new(AnthropicWire),
            }),
            endpoint: endpoint.into(),
        }
    }
}

impl ModelProvider for AnthropicProvider {
    fn stream(
        &self,
        request: ModelRequest,
    ) -> BoxStream<'static, Result<ModelDelta, ProviderError>> {
        call::stream(
            self.transport.clone(),
            self.endpoint.clone(),
            Bytes::from(request::body(&request).to_string()),
            request.model.name,
            Box::new(EventDecoder::new(&self.transport.name)),
        )
    }
}

/// Anthropic's headers; its error bodies are shaped like OpenAI's.
struct AnthropicWire;

impl Wire for AnthropicWire {
    fn authorize(&self, request: RequestBuilder, api_key: &str) -> RequestBuilder {
        request
            .header("x-api-key", api_key)
            .header("anthropic-version", API_VERSION)
    }

    fn parse_error(&self, body: &str) -> Option<(String, Option<Duration>)> {
        parse_error(body)
    }

    /// Not checked: the Messages API is only spoken by Anthropic itself, which answers a
    /// streaming request with an event stream or an error status.
    fn requires_event_stream(&self) -> bool {
        false
    }
}
