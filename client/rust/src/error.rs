//! The one error type of the SDK. A failed RPC keeps its `tonic::Status`, so a caller can
//! branch on the gRPC code (NOT_FOUND, FAILED_PRECONDITION, ...) the server chose; local
//! failures (connecting, files, archives) say what was being done when they happened.

use std::path::PathBuf;
use std::time::Duration;

use tonic::Code;

/// Everything an SDK call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server address is not a URI tonic can dial.
    #[error("invalid server address `{url}`: {source}")]
    InvalidUrl {
        url: String,
        #[source]
        source: tonic::transport::Error,
    },
    /// Nothing answered at the server address.
    #[error("cannot connect to {url}: {}{}", transport_detail(.source), connect_hint(.url, .source))]
    Connect {
        url: String,
        #[source]
        source: tonic::transport::Error,
    },
    /// TLS could not be set up for an `https://` server (a CA file that is not PEM).
    #[error("cannot set up TLS for {url}: {}", transport_detail(.source))]
    Tls {
        url: String,
        #[source]
        source: tonic::transport::Error,
    },
    /// A CA certificate was given for a server reached without TLS.
    #[error("a CA certificate was given, but {url} is not an https:// URL")]
    CaWithoutTls { url: String },
    /// The token cannot travel in an HTTP header (control characters, non-ASCII).
    #[error("the auth token is not a valid header value (it must be visible ASCII)")]
    InvalidToken,
    /// The server (or the transport under it) answered with a gRPC error.
    #[error("{}", status_message(.0))]
    Rpc(tonic::Status),
    /// A request this client refuses to send because it cannot be right (a command with
    /// no program); the server would refuse it with INVALID_ARGUMENT.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The server answered, but not as the API says it must.
    #[error("unexpected answer from the server: {0}")]
    Protocol(String),
    /// A local file or folder could not be read or written.
    #[error("{context} {}: {source}", .path.display())]
    Io {
        context: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// An archive could not be written or read (corrupt gzip, truncated tar).
    #[error("archive error: {0}")]
    Archive(#[source] std::io::Error),
    /// An archive entry that would escape the destination or is not a plain file or folder.
    #[error("refusing archive entry `{entry}`: {reason}")]
    UnsafeEntry { entry: String, reason: &'static str },
    /// A project folder holds something that cannot be packed safely.
    #[error("cannot pack `{}`: {reason}", .path.display())]
    Unpackable { path: PathBuf, reason: &'static str },
}

impl From<tonic::Status> for ClientError {
    /// A deadline that passed is DEADLINE_EXCEEDED, as gRPC names it: tonic reports the
    /// deadline it enforces on the client side as CANCELLED ("Timeout expired").
    fn from(status: tonic::Status) -> Self {
        let timed_out = status.code() == Code::Cancelled
            && std::iter::successors(std::error::Error::source(&status), |e| e.source())
                .any(|e| e.is::<tonic::TimeoutExpired>());
        if timed_out {
            return Self::Rpc(tonic::Status::deadline_exceeded(
                "the call's deadline passed before the server answered",
            ));
        }
        Self::Rpc(status)
    }
}

impl ClientError {
    /// The gRPC code of an RPC failure; UNAVAILABLE when the server could not be reached;
    /// `None` for local failures (files, archives), which have no gRPC meaning.
    pub fn code(&self) -> Option<Code> {
        match self {
            Self::Rpc(status) => Some(status.code()),
            Self::Connect { .. } => Some(Code::Unavailable),
            _ => None,
        }
    }

    /// The status the server (or transport) answered with, for RPC failures.
    pub fn status(&self) -> Option<&tonic::Status> {
        match self {
            Self::Rpc(status) => Some(status),
            _ => None,
        }
    }

    /// What the server said about an RPC failure beyond its code and message: the stable
    /// reason, the fields at fault, how long to wait. `None` for local failures.
    pub fn details(&self) -> Option<ErrorDetails> {
        self.status().map(ErrorDetails::of)
    }

    /// The stable reason of an RPC failure (`SESSION_NOT_FOUND`, `QUEUE_FULL`, ...), from
    /// its `google.rpc.ErrorInfo`.
    pub fn reason(&self) -> Option<String> {
        self.details()
            .map(|d| d.reason)
            .filter(|reason| !reason.is_empty())
    }

    pub fn io(context: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            context,
            path: path.into(),
            source,
        }
    }
}

/// The `google.rpc` details of a failed call, decoded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ErrorDetails {
    /// `ErrorInfo.reason`: a stable name for the cause, e.g. `SESSION_NOT_FOUND`.
    pub reason: String,
    /// `ErrorInfo.domain`: `odyssey.ai` for the server's own errors.
    pub domain: String,
    /// `ErrorInfo.metadata`: the values the reason is about (a session id, a limit).
    pub metadata: std::collections::HashMap<String, String>,
    /// `BadRequest.field_violations`: each field at fault (as the request spells it,
    /// `input.prompt`) and what is wrong with it.
    pub field_violations: Vec<FieldViolation>,
    /// `RetryInfo.retry_delay`: how long to wait before trying again.
    pub retry_delay: Option<Duration>,
}

/// One field of a request the server refused, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldViolation {
    pub field: String,
    pub description: String,
}

impl ErrorDetails {
    fn of(status: &tonic::Status) -> Self {
        use tonic_types::StatusExt;
        let details = status.get_error_details();
        let (reason, domain, metadata) = details
            .error_info()
            .map(|info| {
                (
                    info.reason.clone(),
                    info.domain.clone(),
                    info.metadata.clone(),
                )
            })
            .unwrap_or_default();
        Self {
            reason,
            domain,
            metadata,
            field_violations: details
                .bad_request()
                .map(|bad| {
                    bad.field_violations
                        .iter()
                        .map(|v| FieldViolation {
                            field: v.field.clone(),
                            description: v.description.clone(),
                        })
                        .collect()
                })
                .unwrap_or_default(),
            retry_delay: details.retry_info().and_then(|info| info.retry_delay),
        }
    }
}

/// The canonical upper-case name of a gRPC code (`NOT_FOUND`), as the gRPC spec and
/// `grpcurl` spell it; `tonic::Code`'s `Display` gives a sentence instead.
pub fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

/// The server's message, or the code's description when the server sent none.
fn status_message(status: &tonic::Status) -> String {
    if status.message().is_empty() {
        status.code().description().to_owned()
    } else {
        status.message().to_owned()
    }
}

/// tonic's transport errors say only "transport error"; the useful part (connection
/// refused, DNS failure) is further down the source chain.
fn transport_detail(error: &tonic::transport::Error) -> String {
    let mut detail = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        detail = inner.to_string();
        source = inner.source();
    }
    detail
}

/// What to do about a failed connection, when the cause is one a user can fix here: a
/// loopback address that is unreachable means the loopback interface is down (a fresh
/// network namespace, a container started without it).
fn connect_hint(url: &str, error: &tonic::transport::Error) -> &'static str {
    let unreachable = io_errors(error).any(|e| {
        matches!(
            e.kind(),
            std::io::ErrorKind::NetworkUnreachable | std::io::ErrorKind::AddrNotAvailable
        )
    });
    if unreachable && is_loopback_url(url) {
        "; the loopback interface is down in this network namespace: bring it up \
         (`ip link set lo up`, as its root) or run this where loopback works"
    } else {
        ""
    }
}

/// The I/O errors along an error's source chain.
fn io_errors<'a>(
    error: &'a (dyn std::error::Error + 'static),
) -> impl Iterator<Item = &'a std::io::Error> {
    std::iter::successors(Some(error), |e| e.source())
        .filter_map(|e| e.downcast_ref::<std::io::Error>())
}

/// Whether `url` names this machine by a loopback address or `localhost`.
fn is_loopback_url(url: &str) -> bool {
    let Ok(uri) = url.parse::<tonic::codegen::http::Uri>() else {
        return false;
    };
    let Some(host) = uri.host() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rpc_errors_keep_code_and_message() {
        let error = ClientError::from(tonic::Status::not_found("bundle `x` is not installed"));
        assert_eq!(error.code(), Some(Code::NotFound));
        assert_eq!(error.to_string(), "bundle `x` is not installed");
    }

    #[test]
    fn empty_messages_fall_back_to_the_code() {
        let error = ClientError::from(tonic::Status::new(Code::Unavailable, ""));
        assert!(!error.to_string().is_empty());
    }

    #[test]
    fn loopback_urls_are_recognized() {
        for url in [
            "http://127.0.0.1:8472",
            "https://localhost:1",
            "http://[::1]:80",
        ] {
            assert!(is_loopback_url(url), "{url}");
        }
        for url in ["http://10.0.0.1:8472", "http://example.com", "not a url"] {
            assert!(!is_loopback_url(url), "{url}");
        }
    }

    #[test]
    fn local_errors_have_no_code() {
        let error = ClientError::UnsafeEntry {
            entry: "../x".into(),
            reason: "`..` is not allowed",
        };
        assert_eq!(error.code(), None);
        assert_eq!(code_name(Code::FailedPrecondition), "FAILED_PRECONDITION");
    }
}
