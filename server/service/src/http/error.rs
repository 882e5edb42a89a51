//! Core errors as HTTP answers: the status that matches the error's kind, and a JSON body
//! `{"error": {"code", "reason", "message", "field"?}}` whose `code` is the gRPC code name,
//! so a client reads the same codes on either surface. Internal failures are logged in full
//! and reported without their details.

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::json;

use odyssey_runtime::{ErrorKind, RuntimeError};

/// An error answer of the gateway.
#[derive(Debug)]
pub struct HttpError {
    status: StatusCode,
    code: &'static str,
    reason: &'static str,
    message: String,
    field: Option<String>,
}

impl HttpError {
    pub fn unauthenticated() -> Self {
        Self {
            status: StatusCode::UNAUTHORIZED,
            code: "UNAUTHENTICATED",
            reason: "UNAUTHENTICATED",
            message: "missing or wrong bearer token: send `authorization: Bearer <token>`".into(),
            field: None,
        }
    }

    /// A file the console does not have.
    pub fn no_console_file(name: &str) -> Self {
        Self {
            status: StatusCode::NOT_FOUND,
            code: "NOT_FOUND",
            reason: "NO_ROUTE",
            message: format!("the console has no file `{}`", crate::grpc::shorten(name)),
            field: None,
        }
    }

    /// A console login with a token that is not the server's.
    pub fn wrong_token() -> Self {
        Self {
            status: StatusCode::UNAUTHORIZED,
            code: "UNAUTHENTICATED",
            reason: "UNAUTHENTICATED",
            message: "that is not this server's auth token".into(),
            field: Some("token".into()),
        }
    }

    /// A console request that does not come from the console's own page (another origin,
    /// or a browser that says it is cross-site).
    pub fn cross_origin() -> Self {
        Self {
            status: StatusCode::FORBIDDEN,
            code: "PERMISSION_DENIED",
            reason: "CROSS_ORIGIN",
            message: "the console accepts this only from its own page (same origin)".into(),
            field: None,
        }
    }

    /// A request naming a host this server does not answer to (DNS rebinding).
    pub fn misdirected(host: &str) -> Self {
        Self {
            status: StatusCode::MISDIRECTED_REQUEST,
            code: "PERMISSION_DENIED",
            reason: crate::grpc::host::REASON,
            message: crate::grpc::host::refusal(host),
            field: None,
        }
    }

    /// A request the gateway cannot parse (bad JSON, wrong content type).
    pub fn bad_request(status: StatusCode, message: String) -> Self {
        Self {
            status,
            code: "INVALID_ARGUMENT",
            reason: "INVALID_ARGUMENT",
            message,
            field: None,
        }
    }

    /// A message the gateway could not put in its JSON form: a defect of the server, logged
    /// in full and reported without its details.
    pub fn unencodable(error: &odyssey_api::json::JsonError) -> Self {
        tracing::error!(error = %error, "a message has no JSON form");
        Self {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            code: "INTERNAL",
            reason: "INTERNAL",
            message: "internal error; the server log has the details".into(),
            field: None,
        }
    }

    /// The JSON body, also sent as the data of an `error` event on a broken stream.
    pub fn body(&self) -> serde_json::Value {
        let mut error = json!({
            "code": self.code,
            "reason": self.reason,
            "message": self.message,
        });
        if let Some(field) = &self.field {
            error["field"] = json!(field);
        }
        json!({ "error": error })
    }
}

impl From<RuntimeError> for HttpError {
    fn from(error: RuntimeError) -> Self {
        let kind = error.kind();
        let (status, code) = match kind {
            ErrorKind::InvalidArgument => (StatusCode::BAD_REQUEST, "INVALID_ARGUMENT"),
            ErrorKind::NotFound => (StatusCode::NOT_FOUND, "NOT_FOUND"),
            ErrorKind::AlreadyExists => (StatusCode::CONFLICT, "ALREADY_EXISTS"),
            ErrorKind::FailedPrecondition => (StatusCode::CONFLICT, "FAILED_PRECONDITION"),
            ErrorKind::PermissionDenied => (StatusCode::FORBIDDEN, "PERMISSION_DENIED"),
            ErrorKind::ResourceExhausted => (StatusCode::TOO_MANY_REQUESTS, "RESOURCE_EXHAUSTED"),
            ErrorKind::Unavailable => (StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE"),
            ErrorKind::Cancelled => (StatusCode::CONFLICT, "CANCELLED"),
            ErrorKind::DeadlineExceeded => (StatusCode::GATEWAY_TIMEOUT, "DEADLINE_EXCEEDED"),
            ErrorKind::Unimplemented => (StatusCode::NOT_IMPLEMENTED, "UNIMPLEMENTED"),
            ErrorKind::Internal => (StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL"),
        };
        let message = if kind == ErrorKind::Internal {
            tracing::error!(error = %error, "internal error");
            "internal error; the server log has the details".to_string()
        } else {
            error.to_string()
        };
        Self {
            status,
            code,
            reason: error.reason(),
            field: error.field().map(str::to_owned),
            message,
        }
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(self.body())).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                http::header::WWW_AUTHENTICATE,
                http::HeaderValue::from_static("Bearer"),
            );
        }
        response
    }
}

/// Any path or method the gateway does not serve.
pub async fn no_route(method: http::Method, uri: http::Uri) -> HttpError {
    HttpError {
        status: StatusCode::NOT_FOUND,
        code: "NOT_FOUND",
        reason: "NO_ROUTE",
        message: format!(
            "no route {method} {}: the gateway serves GET /sessions/{{id}}/events, GET /approvals, POST /approvals/{{request_id}} and POST /bundles",
            uri.path()
        ),
        field: None,
    }
}
