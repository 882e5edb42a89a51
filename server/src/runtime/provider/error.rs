//! Why a model call failed, phrased for the person who has to fix it.
//!
//! Every variant maps to an [`ErrorKind`] (what the caller should do) and a stable
//! UPPER_SNAKE `reason`. Messages may quote the provider's own words, so every message
//! built from provider output goes through [`redact`] first: an API key must never reach
//! an event, a session record or a log line.

use std::time::Duration;

use crate::runtime::error::ErrorKind;

/// A failure of a model provider, before or during a model call.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("unknown model provider `{name}`; known providers: {}", known.join(", "))]
    UnknownProvider { name: String, known: Vec<String> },

    /// A program embedding the runtime registered a provider under a name it cannot have.
    #[error("cannot register model provider `{name}`: {message}")]
    Registration { name: String, message: String },

    #[error("invalid model `{model}`: {message}")]
    InvalidModel { model: String, message: String },

    #[error(
        "provider `{provider}` has no API key: set {env_var} in the server's environment \
         or `api_key` in the server's provider settings"
    )]
    NotConfigured { provider: String, env_var: String },

    /// The provider has no public endpoint (Azure, Phind) and the operator named none.
    #[error("provider `{provider}` has no base URL: {hint}")]
    NoBaseUrl { provider: String, hint: String },

    /// The provider refused the request (4xx other than 429): retrying it unchanged fails
    /// again, so the provider's own explanation is the useful part.
    #[error("provider `{provider}` rejected the request (HTTP {status}): {message}")]
    Http {
        provider: String,
        status: u16,
        message: String,
    },

    /// Overloaded, rate limited, down or unreachable, after the allowed retries.
    #[error("provider `{provider}` is unavailable: {message}")]
    Unavailable {
        provider: String,
        message: String,
        retry_after: Option<Duration>,
    },

    #[error("provider `{provider}` timed out: {what} within {}s", after.as_secs_f64())]
    Timeout {
        provider: String,
        /// What did not happen in time, e.g. "no response" or "no data".
        what: &'static str,
        after: Duration,
    },

    /// The provider answered with something that is not its documented wire format.
    #[error("provider `{provider}` sent a malformed answer: {message}")]
    Protocol { provider: String, message: String },

    /// The HTTP client could not be built (TLS setup); an environment problem, not input.
    #[error("provider `{provider}` could not be set up: {message}")]
    Setup { provider: String, message: String },

    #[error(
        "cassette {cassette} has no entry for model call {call_index} (entries are 0-based; \
         the cassette has {entries})"
    )]
    CassetteExhausted {
        cassette: String,
        call_index: u64,
        entries: usize,
    },

    #[error(
        "cassette {cassette} entry {entry} (line {line}) does not match the request: \
         expected last message {expected}, got {actual}"
    )]
    CassetteMismatch {
        cassette: String,
        entry: usize,
        line: usize,
        expected: String,
        actual: String,
    },

    #[error("cassette {cassette}{}: {message}", line.map(|l| format!(" line {l}")).unwrap_or_default())]
    CassetteInvalid {
        cassette: String,
        line: Option<usize>,
        message: String,
    },

    /// The cassette path would leave the bundle; it comes from a bundle, i.e. from a client.
    #[error("cassette path `{path}` refused: {message}")]
    CassettePathRefused { path: String, message: String },

    #[error("cassette {cassette} not found in the bundle")]
    CassetteNotFound { cassette: String },

    /// The cassette entry records a model call that failed, and replays the failure.
    #[error(
        "cassette {cassette} entry {entry} (line {line}) replays a failed model call: {message}"
    )]
    CassetteRecordedFailure {
        cassette: String,
        entry: usize,
        line: usize,
        message: String,
    },

    /// The operator's requirements do not allow this provider on this server.
    #[error(
        "provider `{provider}` is not allowed on this server; allowed: {} (setting: {setting})",
        allowed.join(", ")
    )]
    ProviderNotAllowed {
        provider: String,
        allowed: Vec<String>,
        setting: &'static str,
    },

    /// A model call would go to a URL the operator did not allow: a model config's
    /// `base_url` for a provider whose key the server holds, or any URL outside the
    /// requirements.
    #[error("provider `{provider}` may not call {base_url}: {why} (setting: {setting})")]
    BaseUrlNotAllowed {
        provider: String,
        base_url: String,
        why: String,
        setting: String,
    },
}

impl ProviderError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::UnknownProvider { .. }
            | Self::Registration { .. }
            | Self::InvalidModel { .. }
            | Self::CassettePathRefused { .. } => ErrorKind::InvalidArgument,
            Self::NotConfigured { .. }
            | Self::NoBaseUrl { .. }
            | Self::Http { .. }
            | Self::CassetteExhausted { .. }
            | Self::CassetteMismatch { .. }
            | Self::CassetteInvalid { .. }
            | Self::CassetteNotFound { .. } => ErrorKind::FailedPrecondition,
            Self::Unavailable { .. }
            | Self::Protocol { .. }
            | Self::CassetteRecordedFailure { .. } => ErrorKind::Unavailable,
            Self::Timeout { .. } => ErrorKind::DeadlineExceeded,
            Self::Setup { .. } => ErrorKind::Internal,
            Self::ProviderNotAllowed { .. } | Self::BaseUrlNotAllowed { .. } => {
                ErrorKind::PermissionDenied
            }
        }
    }

    /// A stable UPPER_SNAKE identifier for `google.rpc.ErrorInfo.reason`.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::UnknownProvider { .. } => "UNKNOWN_PROVIDER",
            Self::Registration { .. } => "PROVIDER_REGISTRATION_INVALID",
            Self::InvalidModel { .. } => "INVALID_MODEL",
            Self::NotConfigured { .. } | Self::NoBaseUrl { .. } => "PROVIDER_NOT_CONFIGURED",
            Self::Http { .. } => "PROVIDER_HTTP_ERROR",
            Self::Unavailable { .. } => "PROVIDER_UNAVAILABLE",
            Self::Timeout { .. } => "PROVIDER_TIMEOUT",
            Self::Protocol { .. } => "PROVIDER_PROTOCOL_ERROR",
            Self::Setup { .. } => "PROVIDER_SETUP_FAILED",
            Self::CassetteExhausted { .. } => "CASSETTE_EXHAUSTED",
            Self::CassetteMismatch { .. } => "CASSETTE_MISMATCH",
            Self::CassetteInvalid { .. } | Self::CassettePathRefused { .. } => "CASSETTE_INVALID",
            Self::CassetteNotFound { .. } => "CASSETTE_NOT_FOUND",
            Self::CassetteRecordedFailure { .. } => "CASSETTE_RECORDED_FAILURE",
            Self::ProviderNotAllowed { .. } => "PROVIDER_NOT_ALLOWED",
            Self::BaseUrlNotAllowed { .. } => "BASE_URL_NOT_ALLOWED",
        }
    }

    /// How long the provider asked callers to wait, when it said so (`Retry-After`).
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Unavailable { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// This error with `secret` removed from every message it carries. HTTP providers pass
    /// each error through here on its way out, so no code path can forget it.
    pub(crate) fn redact_secret(self, secret: &str) -> Self {
        let clean = |text: String| redact(&text, secret);
        match self {
            Self::Http {
                provider,
                status,
                message,
            } => Self::Http {
                provider,
                status,
                message: clean(message),
            },
            Self::Unavailable {
                provider,
                message,
                retry_after,
            } => Self::Unavailable {
                provider,
                message: clean(message),
                retry_after,
            },
            Self::Protocol { provider, message } => Self::Protocol {
                provider,
                message: clean(message),
            },
            Self::Setup { provider, message } => Self::Setup {
                provider,
                message: clean(message),
            },
            Self::InvalidModel { model, message } => Self::InvalidModel {
                model,
                message: clean(message),
            },
            other => other,
        }
    }

    pub(crate) fn invalid_model(model: impl Into<String>, message: impl Into<String>) -> Self {
        Self::InvalidModel {
            model: crate::runtime::error::shorten(&model.into()),
            message: message.into(),
        }
    }
}

/// What replaces a secret in messages.
pub(crate) const REDACTED: &str = "[REDACTED]";

/// Removes every occurrence of `secret` from `text`. Providers echo keys back in their
/// error messages (some in full), and those messages end up in events and logs.
pub(crate) fn redact(text: &str, secret: &str) -> String {
    if secret.is_empty() {
        return text.to_owned();
    }
    text.replace(secret, REDACTED)
}

/// Cuts `text` to at most `max` characters (not bytes, so never inside a UTF-8 sequence),
/// marking the cut. Provider error bodies and cassette mismatches can be arbitrarily long.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_removes_every_occurrence() {
        assert_eq!(
            redact("key sk-1 and sk-1", "sk-1"),
            "key [REDACTED] and [REDACTED]"
        );
        assert_eq!(redact("nothing", ""), "nothing");
    }

    #[test]
    fn shorten_counts_characters() {
        assert_eq!(shorten("héllo", 2), "hé…");
        assert_eq!(shorten("hi", 2), "hi");
    }

    #[test]
    fn unknown_provider_lists_known_ones() {
        let e = ProviderError::UnknownProvider {
            name: "nope".into(),
            known: vec!["openai".into(), "replay".into()],
        };
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert_eq!(e.reason(), "UNKNOWN_PROVIDER");
        assert!(e.to_string().contains("openai, replay"), "{e}");
    }
}
