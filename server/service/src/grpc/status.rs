//! The one mapping from core errors to gRPC statuses. Every status carries a
//! `google.rpc.ErrorInfo` (reason + domain); bad input also carries a `BadRequest` field
//! violation, a full queue a `RetryInfo`. Internal failures are logged in full and
//! reported without their details.

use std::collections::HashMap;

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

pub(crate) use odyssey_runtime::error::shorten;
use odyssey_runtime::{ErrorKind, RuntimeError};

pub const ERROR_DOMAIN: &str = "odyssey.ai";

/// The longest status message sent. Messages quote input shortened, but one that still
/// grew this long is cut: it travels in the HTTP/2 trailers, and a client refuses
/// trailers beyond its header-list limit (16 KiB by default) as a protocol error.
const MAX_MESSAGE_BYTES: usize = 1024;

pub fn to_status(error: RuntimeError) -> Status {
    to_status_at(error, &[])
}

/// [`to_status`] naming the field at fault as the request spells it: `fields` maps the
/// core's name of a value (`prompt`) to its path in the request (`input.prompt`); an
/// indexed name (`metadata[team]`) keeps its index (`input.metadata[team]`).
pub fn to_status_at(error: RuntimeError, fields: &[(&str, &str)]) -> Status {
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
        if matches!(error.reason(), "DISK_FULL" | "STORAGE_READ_ONLY") {
            // The client is told what; the operator needs where.
            tracing::warn!(error = %error, "storage refused a write");
        }
        bounded(error.client_message(), MAX_MESSAGE_BYTES)
    };
    let mut details = ErrorDetails::with_error_info(error.reason(), ERROR_DOMAIN, HashMap::new());
    if let Some(field) = error.field() {
        let field = request_path(field, fields);
        details.add_bad_request_violation(bounded(field, 256), message.clone());
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

/// The request's path of a field the core named `field`.
fn request_path(field: &str, fields: &[(&str, &str)]) -> String {
    for (core, request) in fields {
        if let Some(rest) = field.strip_prefix(core)
            && (rest.is_empty() || rest.starts_with('[') || rest.starts_with('.'))
        {
            return format!("{request}{rest}");
        }
    }
    field.to_string()
}

/// `text` cut to at most `max` bytes on a character boundary, marked with `…`.
fn bounded(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max - '…'.len_utf8();
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic_types::StatusExt;

    fn violations(status: &Status) -> Vec<String> {
        status
            .get_details_bad_request()
            .map(|b| b.field_violations.into_iter().map(|v| v.field).collect())
            .unwrap_or_default()
    }

    #[test]
    fn fields_are_named_as_the_request_spells_them() {
        let renames = [("prompt", "input.prompt"), ("metadata", "input.metadata")];
        let prompt = to_status_at(RuntimeError::invalid("prompt", "empty"), &renames);
        assert_eq!(violations(&prompt), ["input.prompt"]);
        let indexed = to_status_at(RuntimeError::invalid("metadata[team]", "long"), &renames);
        assert_eq!(violations(&indexed), ["input.metadata[team]"]);
        let nested = to_status_at(RuntimeError::invalid("prompt.part", "x"), &renames);
        assert_eq!(violations(&nested), ["input.prompt.part"]);
        let prefix_only = to_status_at(RuntimeError::invalid("prompts", "x"), &renames);
        assert_eq!(violations(&prefix_only), ["prompts"]);
    }

    #[test]
    fn storage_conditions_are_named_without_server_paths() {
        let full = RuntimeError::storage(
            "write /srv/odyssey/sessions/x/session.json",
            std::io::Error::from(std::io::ErrorKind::StorageFull),
        );
        let status = to_status(full);
        assert_eq!(status.code(), Code::ResourceExhausted);
        assert!(
            status.message().contains("disk is full"),
            "{}",
            status.message()
        );
        assert!(!status.message().contains("/srv"), "{}", status.message());
        let read_only = RuntimeError::storage(
            "create /srv/odyssey/sessions/.open/x",
            std::io::Error::from(std::io::ErrorKind::ReadOnlyFilesystem),
        );
        let status = to_status(read_only);
        assert_eq!(status.code(), Code::Unavailable);
        assert!(
            status.message().contains("read-only"),
            "{}",
            status.message()
        );
    }

    #[test]
    fn long_messages_are_cut_to_fit_the_trailers() {
        let status = to_status(RuntimeError::invalid("name", "é".repeat(100_000)));
        assert!(status.message().len() <= MAX_MESSAGE_BYTES);
        assert!(status.message().ends_with('…'));
        assert_eq!(status.code(), Code::InvalidArgument);
    }
}
