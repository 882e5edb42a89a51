//! The one mapping from core errors to gRPC statuses. Every status carries a
//! `google.rpc.ErrorInfo` (reason + domain); bad input also carries a `BadRequest` field
//! violation, a full queue a `RetryInfo`. Internal failures are logged in full and
//! reported without their details.

use std::collections::HashMap;

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

use crate::runtime::{ErrorKind, RuntimeError};

pub const ERROR_DOMAIN: &str = "odyssey.ai";

pub fn to_status(error: RuntimeError) -> Status {
    let kind = error.kind();
    let code = match kind {
        ErrorKind::InvalidArgument => Code::InvalidArgument,
        ErrorKind::NotFound => Code::NotFound,
        ErrorKind::AlreadyExists => Code::AlreadyExists,
        ErrorKind::FailedPrecondition => Code::FailedPrecondition,
        ErrorKind::PermissionDenied => Code::PermissionDenied,
        ErrorKind::ResourceExhausted => Code::ResourceExhausted,
        ErrorKind::Unavailable => Code::Unavailable,
        ErrorKind::Cancelled => Code::Cancelled,
        ErrorKind::DeadlineExceeded => Code::DeadlineExceeded,
        ErrorKind::Unimplemented => Code::Unimplemented,
        ErrorKind::Internal => Code::Internal,
    };
    let message = if kind == ErrorKind::Internal {
        tracing::error!(error = %error, "internal error");
        "internal error; the server log has the details".to_string()
    } else {
        error.to_string()
    };
    let mut details = ErrorDetails::with_error_info(error.reason(), ERROR_DOMAIN, HashMap::new());
    if let Some(field) = error.field() {
        details.add_bad_request_violation(field, message.clone());
    }
    if let Some(delay) = error.retry_after() {
        details.set_retry_info(Some(delay));
    }
    Status::with_error_details(code, message, details)
}

/// A request field that is malformed before the core sees it.
pub fn invalid(field: &str, message: impl Into<String>) -> Status {
    to_status(RuntimeError::invalid(field, message))
}

pub fn parse_uuid(field: &str, value: &str) -> Result<uuid::Uuid, Status> {
    if value.is_empty() {
        return Err(invalid(field, "is required"));
    }
    uuid::Uuid::parse_str(value)
        .map_err(|_| invalid(field, format!("`{}` is not a UUID", shorten(value))))
}

/// Keeps echoed input short in messages and logs.
pub fn shorten(value: &str) -> String {
    const MAX: usize = 64;
    if value.len() <= MAX {
        return value.to_string();
    }
    let mut end = MAX;
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &value[..end])
}
