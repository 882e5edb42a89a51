//! Why a model call failed, phrased for the person who has to fix it.
//!
//! Every variant maps to an [`ErrorKind`] (what the caller should do) and a stable
//! UPPER_SNAKE `reason`. Messages may quote the provider's own words, so every message
//! built from provider output goes through [`redact`] first: an API key must never reach
//! an event, a session record or a log line.

use std::time::Duration;

use crate::error::ErrorKind;

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

    /// A model config holds what looks like a credential. Configs are stored with the
    /// session and copied into events, so a key there would reach every subscriber.
    #[error(
        "model `{model}`: config `{field}` {why}; a model config never carries credentials: \
         the server reads provider keys from its environment or configuration \
         (`providers.<name>.api_key` or `api_key_env`), and a request may pick one of the \
         operator's named credentials with `config.credential = \"NAME\"`"
    )]
    SecretInConfig {
        model: String,
        /// Where, inside the config (`api_key`, `headers.Authorization`).
        field: String,
        why: &'static str,
    },

    /// `config.credential` names no credential of this server.
    #[error(
        "this server defines no credential `{name}`; `config.credential` must name one the \
         operator defined (`[credentials.NAME]` in the server's configuration)"
    )]
    UnknownCredential { name: String },

    /// The credential is for another provider.
    #[error(
        "credential `{credential}` is for provider `{allowed}`, not `{provider}` \
         (setting: credentials.{credential}.provider)"
    )]
    CredentialNotAllowed {
        credential: String,
        provider: String,
        allowed: String,
    },

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
            | Self::SecretInConfig { .. }
            | Self::UnknownCredential { .. }
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
            Self::ProviderNotAllowed { .. }
            | Self::BaseUrlNotAllowed { .. }
            | Self::CredentialNotAllowed { .. } => ErrorKind::PermissionDenied,
        }
    }

    /// A stable UPPER_SNAKE identifier for `google.rpc.ErrorInfo.reason`.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::UnknownProvider { .. } => "UNKNOWN_PROVIDER",
            Self::Registration { .. } => "PROVIDER_REGISTRATION_INVALID",
            Self::InvalidModel { .. } => "INVALID_MODEL",
            Self::SecretInConfig { .. } => "SECRET_IN_MODEL_CONFIG",
            Self::UnknownCredential { .. } => "UNKNOWN_CREDENTIAL",
            Self::CredentialNotAllowed { .. } => "CREDENTIAL_NOT_ALLOWED",
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
            model: crate::error::shorten(&model.into()),
            message: message.into(),
        }
    }
}

/// What replaces a secret in messages.
pub(crate) const REDACTED: &str = "[REDACTED]";

/// The fewest leading characters of a secret that are masked where a cut text ends with
/// them: fewer could be a coincidence, and say too little of the key to matter.
const MIN_SECRET_PREFIX_CHARS: usize = 8;

/// The mark [`shorten`] leaves where it cut.
use crate::text::CUT_MARK;

/// Removes every occurrence of `secret` from `text`. Providers echo keys back in their
/// error messages (some in full), and those messages end up in events and logs. Where the
/// text was cut (it ends, or stops at the cut mark) right after the first 8 or more
/// characters of the secret, those are masked too: a key that straddled a cut is no
/// longer whole, so a plain search would miss what is left of it.
pub(crate) fn redact(text: &str, secret: &str) -> String {
    if secret.is_empty() {
        return text.to_owned();
    }
    let whole = text.replace(secret, REDACTED);
    let (body, mark) = match whole.strip_suffix(CUT_MARK) {
        Some(body) => (body, Some(CUT_MARK)),
        None => (whole.as_str(), None),
    };
    let Some(start) = secret_start_at_end(body, secret) else {
        return whole;
    };
    let mut masked = format!("{}{REDACTED}", &body[..start]);
    masked.extend(mark);
    masked
}

/// Where `text` ends with a prefix of `secret` at least [`MIN_SECRET_PREFIX_CHARS`] long
/// (the longest such prefix), as a byte offset into `text`.
fn secret_start_at_end(text: &str, secret: &str) -> Option<usize> {
    let ends: Vec<usize> = secret
        .char_indices()
        .map(|(at, c)| at + c.len_utf8())
        .skip(MIN_SECRET_PREFIX_CHARS - 1)
        .collect();
    ends.into_iter()
        .rev()
        .map(|end| &secret[..end])
        .find(|prefix| text.ends_with(prefix))
        .map(|prefix| text.len() - prefix.len())
}

/// `text` with `secret` redacted, then cut to at most `max` characters. Redacting first
/// finds a key that straddles the cut whole; [`redact`] then masks the start of one that
/// an earlier cut (a size limit on the body) left at the end.
pub(crate) fn redact_and_shorten(text: &str, secret: &str, max: usize) -> String {
    redact(&shorten(&redact(text, secret), max), secret)
}

use crate::text::shorten;

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

    /// Issue 11 item 6: a key straddling the 1,000-character cut of an error body is
    /// redacted whole, not left minus its last characters.
    #[test]
    fn a_key_straddling_the_cut_is_redacted_before_cutting() {
        let key = "sk-live-0123456789abcdefghij";
        let body = format!("{}{key} and more", "x".repeat(990));
        let message = redact_and_shorten(&body, key, 1000);
        assert!(!message.contains(&key[..8]), "{message}");
        assert!(message.ends_with(&format!("{REDACTED}…")), "{message}");
    }

    #[test]
    fn the_start_of_a_key_left_at_a_cut_is_masked() {
        let key = "sk-live-0123456789abcdefghij";
        // An earlier cut (the body's size limit) left 12 characters of the key at the end.
        let body = format!("bad key {}", &key[..12]);
        assert_eq!(redact(&body, key), format!("bad key {REDACTED}"));
        // A decoder's shortened quote ends at the cut mark.
        let quoted = format!("data: {}…", &key[..9]);
        assert_eq!(redact(&quoted, key), format!("data: {REDACTED}…"));
        // Fewer than 8 characters, or text after them, is not a cut key.
        for kept in [
            "ends sk-live".to_owned(),
            format!("{} then text", &key[..12]),
        ] {
            assert_eq!(redact(&kept, key), kept);
        }
        assert_eq!(redact_and_shorten("short", key, 1000), "short");
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
