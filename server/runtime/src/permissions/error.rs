//! Errors of the permissions module: a malformed rule in an agent file (the bundle author's
//! to fix) and approval operations a client got wrong (unknown or already-resolved ids).

use crate::error::ErrorKind;
use crate::events::ApprovalResolution;

/// An agent's `tools.allow` / `tools.ask` / `tools.deny` entry that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    /// `field` is where the entry sits (`tools.deny[2]`), `entry` the text as written.
    #[error("{field}: invalid permission rule `{entry}`: {message}")]
    Malformed {
        field: String,
        entry: String,
        message: String,
    },
}

impl RuleError {
    pub(crate) fn malformed(
        field: impl Into<String>,
        entry: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self::Malformed {
            field: field.into(),
            entry: entry.into(),
            message: message.into(),
        }
    }

    pub fn kind(&self) -> ErrorKind {
        ErrorKind::InvalidArgument
    }

    /// A stable UPPER_SNAKE identifier for `google.rpc.ErrorInfo.reason`.
    pub fn reason(&self) -> &'static str {
        "INVALID_PERMISSION_RULE"
    }

    /// The agent field at fault (`tools.deny[2]`).
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::Malformed { field, .. } => Some(field),
        }
    }
}

/// A failed approval operation. Nothing changes when one is returned.
#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    #[error("approval request {request_id} not found")]
    NotFound { request_id: String },

    /// The request was decided, timed out, or cancelled before this call.
    #[error("approval request {request_id} is already resolved ({})", resolution_name(*.resolution))]
    AlreadyResolved {
        request_id: String,
        resolution: ApprovalResolution,
    },

    #[error("invalid page_token: not a token this server issued")]
    InvalidPageToken,

    /// An answer (or action) given for a tool call, which takes only a decision.
    #[error(
        "approval request {request_id} is a tool call: it takes a decision, not an answer or an action"
    )]
    NotInput { request_id: String },

    /// An answer to a request for input that does not match its schema.
    #[error("{0}")]
    BadAnswer(super::approvals::input::InputError),
}

fn resolution_name(resolution: ApprovalResolution) -> &'static str {
    match resolution {
        ApprovalResolution::Decided => "decided",
        ApprovalResolution::TimedOut => "timed out",
        ApprovalResolution::Cancelled => "cancelled",
        ApprovalResolution::Interrupted => "interrupted",
    }
}

impl ApprovalError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::NotFound { .. } => ErrorKind::NotFound,
            Self::AlreadyResolved { .. } => ErrorKind::FailedPrecondition,
            Self::InvalidPageToken | Self::NotInput { .. } | Self::BadAnswer(_) => {
                ErrorKind::InvalidArgument
            }
        }
    }

    /// A stable UPPER_SNAKE identifier for `google.rpc.ErrorInfo.reason`.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::NotFound { .. } => "APPROVAL_NOT_FOUND",
            Self::AlreadyResolved { .. } => "APPROVAL_ALREADY_RESOLVED",
            Self::InvalidPageToken => "INVALID_ARGUMENT",
            Self::NotInput { .. } => "APPROVAL_NOT_INPUT",
            Self::BadAnswer(_) => "INVALID_INPUT_ANSWER",
        }
    }

    /// The request field at fault, for field violations.
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::InvalidPageToken => Some("page_token"),
            Self::NotInput { .. } => Some("action"),
            Self::BadAnswer(e) => Some(&e.field),
            _ => None,
        }
    }
}
