//! The gateway's and metrics endpoint's host check: the gRPC port's (see
//! [`crate::grpc::host`]), answered as JSON with 421 Misdirected Request.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::HttpError;
use crate::grpc::host::AllowedHosts;
use crate::tls::TlsIdentity;

/// The hosts an HTTP surface answers to: the operator's and the certificate's names.
pub fn allowed(configured: &[String], tls: Option<&TlsIdentity>) -> AllowedHosts {
    AllowedHosts::new(configured, tls.map_or(&[][..], TlsIdentity::names))
}

/// Middleware: requests for other hosts never reach a route.
pub async fn require(State(hosts): State<AllowedHosts>, request: Request, next: Next) -> Response {
    match hosts.refused(&request) {
        Some(host) => HttpError::misdirected(host).into_response(),
        None => next.run(request).await,
    }
}
