//! A2A's own errors, as the gRPC binding carries them: a status code from the
//! specification's table and a `google.rpc.ErrorInfo` whose domain is `a2a-protocol.org`
//! and whose reason names the error (`TASK_NOT_FOUND`). Errors of the runtime keep
//! Odyssey's own mapping.

use std::collections::HashMap;

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

use crate::grpc::shorten;

/// The domain of A2A's error reasons.
pub const A2A_ERROR_DOMAIN: &str = "a2a-protocol.org";

/// A request the A2A protocol itself refuses; nothing was changed.
#[derive(Debug, thiserror::Error)]
pub enum A2aError {
    /// No task of this id, or not one of the named agent's.
    #[error("no task `{0}` (unknown, finished long ago, or another agent's)")]
    TaskNotFound(String),
    /// The task has ended in a state a cancel cannot change.
    #[error("task `{id}` has already ended ({state}); it cannot be cancelled")]
    TaskNotCancelable { id: String, state: &'static str },
    /// The request asks for something this server does not do (yet).
    #[error("{0}")]
    UnsupportedOperation(String),
    /// A part of the message is of a kind the agent does not take.
    #[error("{0}")]
    ContentTypeNotSupported(String),
    /// Push notifications are not offered by this server.
    #[error("push notifications are not supported by this server")]
    PushNotificationNotSupported,
    /// The client asks for a protocol version this server does not speak.
    #[error("this server speaks A2A {speaks}; the request asks for `{asked}`")]
    VersionNotSupported { speaks: &'static str, asked: String },
}

impl A2aError {
    fn code(&self) -> Code {
        match self {
            Self::TaskNotFound(_) => Code::NotFound,
            Self::ContentTypeNotSupported(_) => Code::InvalidArgument,
            Self::TaskNotCancelable { .. }
            | Self::UnsupportedOperation(_)
            | Self::PushNotificationNotSupported
            | Self::VersionNotSupported { .. } => Code::FailedPrecondition,
        }
    }

    /// The specification's name of the error, in UPPER_SNAKE_CASE without `Error`.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::TaskNotFound(_) => "TASK_NOT_FOUND",
            Self::TaskNotCancelable { .. } => "TASK_NOT_CANCELABLE",
            Self::UnsupportedOperation(_) => "UNSUPPORTED_OPERATION",
            Self::ContentTypeNotSupported(_) => "CONTENT_TYPE_NOT_SUPPORTED",
            Self::PushNotificationNotSupported => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            Self::VersionNotSupported { .. } => "VERSION_NOT_SUPPORTED",
        }
    }

    pub fn task_not_found(id: &str) -> Self {
        Self::TaskNotFound(shorten(id))
    }

    /// The version a client names in its `A2A-Version` header or metadata, if it is not
    /// one this server speaks (major and minor compared; none named is taken as 1.0).
    pub fn unsupported_version(asked: Option<&str>) -> Option<Self> {
        let asked = asked?.trim();
        let mut numbers = asked.split('.').map(|n| n.parse::<u32>().ok());
        let major_minor = (numbers.next().flatten(), numbers.next().unwrap_or(Some(0)));
        if major_minor == (Some(1), Some(0)) {
            return None;
        }
        Some(Self::VersionNotSupported {
            speaks: super::card::PROTOCOL_VERSION,
            asked: shorten(asked),
        })
    }
}

impl From<A2aError> for Status {
    fn from(error: A2aError) -> Self {
        let details =
            ErrorDetails::with_error_info(error.reason(), A2A_ERROR_DOMAIN, HashMap::new());
        Status::with_error_details(error.code(), error.to_string(), details)
    }
}
