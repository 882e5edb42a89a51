//! The hub's error type.
//!
//! A registry is a dependency of the server, not the caller: when it is down the answer is
//! `Unavailable`; when it refuses the server's credentials the operator has something to fix
//! (`FailedPrecondition`), which is kept apart from `Unauthenticated` (the caller's own
//! Odyssey token). Messages name the registry host and never hold a credential.

use std::path::PathBuf;

use crate::error::ErrorKind;

/// A failure of a push, a pull or the hub's configuration.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    /// A reference the caller wrote (`field`: `reference` or `target`) does not parse.
    #[error(
        "invalid registry reference `{reference}`: {message}; expected \
         [registry[:port]/]repository[:tag][@sha256:<64 hex>], e.g. \
         registry.example.com:5000/team/demo:1.0.0"
    )]
    InvalidReference {
        field: &'static str,
        reference: String,
        message: String,
    },

    /// The hub's own settings are wrong (default registry URL, credentials file).
    #[error("invalid registry setting {setting}: {message}")]
    Config { setting: String, message: String },

    /// The credentials file cannot be read.
    #[error("cannot read the registry credentials file {}: {source}", .path.display())]
    CredentialsFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error(
        "the registry {registry} refused the credentials this server has for it; \
         check the server's registry credentials"
    )]
    CredentialsRefused { registry: String },

    #[error(
        "the registry {registry} refused the request: it requires credentials and this \
         server has none for it"
    )]
    CredentialsRequired { registry: String },

    #[error("the registry {registry} refused access to {repository}: {message}")]
    AccessDenied {
        registry: String,
        repository: String,
        message: String,
    },

    #[error("{reference} was not found in the registry {registry}")]
    NotFound { registry: String, reference: String },

    #[error("the registry {registry} cannot be reached: {message}")]
    Unavailable { registry: String, message: String },

    /// Any other refusal by the registry (a protocol error, an unexpected status).
    #[error("the registry {registry} refused the request: {message}")]
    Refused { registry: String, message: String },

    /// What the reference names is not an Odyssey bundle artifact.
    #[error("{reference} is not an Odyssey bundle: {message}")]
    NotABundle { reference: String, message: String },

    /// Content did not match the digest that names it; nothing was installed.
    #[error(
        "{what} from {reference} does not match its digest (expected {expected}, got {actual}); nothing was installed"
    )]
    DigestMismatch {
        reference: String,
        what: String,
        expected: String,
        actual: String,
    },

    /// A blob was not the size its manifest declares; nothing was installed.
    #[error(
        "{what} from {reference} is not the {declared} bytes its manifest declares (received \
         {received}); nothing was installed"
    )]
    SizeMismatch {
        reference: String,
        what: String,
        declared: u64,
        received: String,
    },

    #[error("{reference} is too large: {message}")]
    TooLarge { reference: String, message: String },
}

impl HubError {
    pub(crate) fn invalid_reference(
        field: &'static str,
        reference: &str,
        message: impl Into<String>,
    ) -> Self {
        Self::InvalidReference {
            field,
            reference: crate::error::shorten(reference),
            message: message.into(),
        }
    }

    pub(crate) fn config(setting: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Config {
            setting: setting.into(),
            message: message.into(),
        }
    }

    /// What the caller should do about this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::InvalidReference { .. } => ErrorKind::InvalidArgument,
            Self::Config { .. } | Self::CredentialsFile { .. } => ErrorKind::FailedPrecondition,
            Self::CredentialsRefused { .. } | Self::CredentialsRequired { .. } => {
                ErrorKind::FailedPrecondition
            }
            Self::AccessDenied { .. } => ErrorKind::PermissionDenied,
            Self::NotFound { .. } => ErrorKind::NotFound,
            Self::Unavailable { .. } => ErrorKind::Unavailable,
            Self::Refused { .. }
            | Self::NotABundle { .. }
            | Self::DigestMismatch { .. }
            | Self::SizeMismatch { .. }
            | Self::TooLarge { .. } => ErrorKind::FailedPrecondition,
        }
    }

    /// A stable UPPER_SNAKE identifier for `google.rpc.ErrorInfo.reason`.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::InvalidReference { .. } => "INVALID_REGISTRY_REFERENCE",
            Self::Config { .. } | Self::CredentialsFile { .. } => "REGISTRY_SETTINGS_INVALID",
            Self::CredentialsRefused { .. } => "REGISTRY_CREDENTIALS_REFUSED",
            Self::CredentialsRequired { .. } => "REGISTRY_CREDENTIALS_REQUIRED",
            Self::AccessDenied { .. } => "REGISTRY_ACCESS_DENIED",
            Self::NotFound { .. } => "REGISTRY_ARTIFACT_NOT_FOUND",
            Self::Unavailable { .. } => "REGISTRY_UNAVAILABLE",
            Self::Refused { .. } => "REGISTRY_REFUSED",
            Self::NotABundle { .. } => "NOT_A_BUNDLE_ARTIFACT",
            Self::DigestMismatch { .. } => "DIGEST_MISMATCH",
            Self::SizeMismatch { .. } => "SIZE_MISMATCH",
            Self::TooLarge { .. } => "ARTIFACT_TOO_LARGE",
        }
    }

    /// The request field at fault, for bad references.
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::InvalidReference { field, .. } => Some(field),
            _ => None,
        }
    }
}
