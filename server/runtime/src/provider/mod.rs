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
