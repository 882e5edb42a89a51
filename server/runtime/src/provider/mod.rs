//! Model providers: one streaming interface, one implementation per wire format.
//!
//! A provider turns a [`ModelRequest`] into a stream of [`ModelDelta`]s as the model
//! produces them. The turn loop turns deltas into session events as they arrive, so text
//! reaches subscribers while the model is still writing.

mod anthropic;
mod call;
pub mod context_window;
mod credential;
mod error;
mod gemini;
mod openai;
mod registry;
mod replay;
mod retry;
mod sse;
pub(crate) mod sse_parser;
mod url_pattern;

pub use credential::{CREDENTIAL_KEY, CredentialSettings, credential_name_problem, read_key_file};
pub use error::ProviderError;
pub(crate) use registry::install_crypto_provider;
pub use registry::{ProviderRegistry, ProviderSettings, known_provider_names};
pub use replay::CassetteRecorder;
#[cfg(test)]
pub(crate) use replay::{Cassette, ReplayProvider};
pub use url_pattern::{UrlPattern, is_loopback};

use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};

use crate::chat::{ChatMessage, ReasoningState, TokenUsage};
use crate::model::ModelSpec;

/// Providers whose models are sent the images tools return unless a model's config says
/// `images: false`; the models of any other provider get them only with `images: true`
/// (DeepSeek, Groq and local servers mostly serve models that refuse an image). A model
/// not sent images still reads each one's description in the tool's result.
const IMAGE_PROVIDERS: [&str; 7] = [
    "openai",
    "azure_openai",
    "anthropic",
    "google",
    "gemini",
    "openrouter",
    "xai",
];

/// Whether the images of tool results are sent to `model` (see [`IMAGE_PROVIDERS`]).
pub(crate) fn takes_images(model: &ModelSpec) -> bool {
    match model
        .config_value("images")
        .and_then(serde_json::Value::as_bool)
    {
        Some(chosen) => chosen,
        None => IMAGE_PROVIDERS.contains(&model.provider.as_str()),
    }
}

/// A tool as the model sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// One model call.
#[derive(Clone, Debug)]
pub struct ModelRequest {
    pub model: ModelSpec,
    pub system_prompt: String,
    /// Prior history followed by this turn's messages so far.
    pub messages: Vec<ChatMessage>,
    pub tools: Vec<ToolSpec>,
    /// How many model calls this session made before this one. Deterministic providers
    /// (replay) use it to pick their answer.
    pub call_index: u64,
}

/// A piece of a model's answer, in the order the model produced it.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelDelta {
    Text(String),
    Reasoning(String),
    /// The model started a new reasoning section.
    ReasoningBreak,
    /// A tool call whose arguments are complete.
    ToolCall {
        id: String,
        name: String,
        arguments: String,
    },
    /// Tokens used by this call; sent once, usually last.
    Usage(TokenUsage),
    /// Reasoning the provider wants back verbatim on the next request; kept with the
    /// assistant message, never shown.
    ReasoningState(ReasoningState),
}

/// A model provider. Implementations are cheap to share: one instance serves every turn
/// that uses its provider name.
pub trait ModelProvider: Send + Sync + 'static {
    /// Starts a model call. Failures, including those before the first delta, arrive as an
    /// `Err` item; the stream ends after the model's last delta. Dropping the stream aborts
    /// the call.
    fn stream(
        &self,
        request: ModelRequest,
    ) -> BoxStream<'static, Result<ModelDelta, ProviderError>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_go_to_the_providers_that_take_them_unless_a_model_says_otherwise() {
        let with = |provider: &str, config: serde_json::Value| ModelSpec {
            config: config.as_object().cloned(),
            ..ModelSpec::new(provider, "m")
        };
        assert!(takes_images(&with("anthropic", serde_json::json!({}))));
        assert!(takes_images(&with("openai", serde_json::json!({}))));
        assert!(!takes_images(&with("deepseek", serde_json::json!({}))));
        assert!(!takes_images(&with(
            "openai",
            serde_json::json!({ "images": false })
        )));
        assert!(takes_images(&with(
            "ollama",
            serde_json::json!({ "images": true })
        )));
    }
}
