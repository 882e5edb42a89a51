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

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::RequestBuilder;

use super::call::{self, Decoder, Transport, Wire};
use super::retry::RetryPolicy;
use super::{ModelDelta, ModelProvider, ModelRequest, ProviderError};
use decode::{ChunkDecoder, ErrorBody};
use request::Api;
use responses::ResponsesDecoder;

pub(crate) use request::validate_config;

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
    transport: Arc<Transport>,
    base_url: Arc<str>,
    endpoint_kind: Endpoint,
    endpoint: Arc<str>,
    responses_endpoint: Arc<str>,
}

impl OpenAiProvider {
    pub fn new(config: OpenAiConfig) -> Self {
        let base = config.base_url.trim_end_matches('/');
        let endpoint = format!("{base}/chat/completions");
        let responses_endpoint = format!("{base}/responses");
        Self {
            transport: Arc::new(Transport {
                name: config.name,
                api_key: config.api_key,
                client: config.client,
                request_timeout: config.request_timeout,
                idle_timeout: config.idle_timeout,
                retry: config.retry,
                wire: Box::new(OpenAiWire { auth: config.auth }),
            }),
            base_url: config.base_url.into(),
            endpoint_kind: config.endpoint,
            endpoint: endpoint.into(),
            responses_endpoint: responses_endpoint.into(),
        }
    }
}

impl OpenAiProvider {
    /// The URL of one call: fixed per API, except on Azure where it names the deployment
    /// (Azure is only called through chat completions).
    fn endpoint_for(&self, request: &ModelRequest, api: Api) -> Result<Arc<str>, ProviderError> {
        match (self.endpoint_kind, api) {
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
        let mut url = reqwest::Url::parse(&self.base_url).map_err(|e| ProviderError::Setup {
            provider: self.transport.name.clone(),
            message: format!("base_url `{}` is not a URL: {e}", self.base_url),
        })?;
        url.path_segments_mut()
            .map_err(|()| ProviderError::Setup {
                provider: self.transport.name.clone(),
                message: format!("base_url `{}` cannot have a path", self.base_url),
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
        let name = &self.transport.name;
        let (body, decoder): (_, Box<dyn Decoder>) = match api {
            Api::ChatCompletions => (request::body(&request), Box::new(ChunkDecoder::new(name))),
            Api::Responses => (
                responses_request::body(&request),
                Box::new(ResponsesDecoder::new(name)),
            ),
        };
        call::stream(
            self.transport.clone(),
            endpoint,
            Bytes::from(body.to_string()),
            request.model.name,
            decoder,
        )
    }
}

/// The OpenAI wire's key header and error JSON.
struct OpenAiWire {
    auth: WireAuth,
}

impl Wire for OpenAiWire {
    fn authorize(&self, request: RequestBuilder, api_key: &str) -> RequestBuilder {
        if api_key.is_empty() {
            return request;
        }
        match self.auth {
            WireAuth::Bearer => request.bearer_auth(api_key),
            WireAuth::ApiKeyHeader => request.header("api-key", api_key),
        }
    }

    fn parse_error(&self, body: &str) -> Option<(String, Option<Duration>)> {
        parse_error(body)
    }

    /// Some compatible servers answer errors with a plain 200, or ignore `stream: true`.
    fn requires_event_stream(&self) -> bool {
        true
    }
}

/// `error.message` of an error body, when it is JSON: OpenAI's and Anthropic's error
/// bodies share that shape, and neither puts a wait in it.
pub(super) fn parse_error(body: &str) -> Option<(String, Option<Duration>)> {
    let parsed = serde_json::from_str::<ErrorBody>(body).ok()?;
    Some((parsed.error.message(), None))
}
