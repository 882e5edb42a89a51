//! The metrics endpoint (`--metrics-listen`): `GET /metrics` answers the runtime's and
//! the gRPC port's metrics in the Prometheus text format (OpenMetrics 1.0, which
//! Prometheus negotiates by itself).
//!
//! It is its own listener, not a route of the gateway, so an operator can expose it to
//! the monitoring network alone. It needs a bearer token whenever the server has one:
//! metrics carry no prompts or secrets, but they tell who is busy with which provider and
//! how often things fail, which is the operator's business. Prometheus sends the token
//! with `authorization: { credentials_file: ... }` in its scrape config; a dedicated
//! metrics token (`--metrics-auth-token`) keeps the API token, which can run turns and
//! answer approvals, out of the monitoring system. Either token is accepted.

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::header::CONTENT_TYPE;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

use super::error::HttpError;
use crate::grpc::auth::bearer_matches;
use crate::grpc::host::AllowedHosts;
use crate::tls::TlsIdentity;

/// How the metrics answer is labelled.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The bearer tokens the endpoint accepts; none: it is open (loopback, or `--insecure`).
#[derive(Clone, Default)]
pub struct MetricsTokens(Arc<[String]>);

impl MetricsTokens {
    pub fn new(tokens: impl IntoIterator<Item = String>) -> Self {
        Self(tokens.into_iter().filter(|t| !t.is_empty()).collect())
    }

    fn admit(&self, headers: &http::HeaderMap) -> bool {
        self.0.is_empty() || self.0.iter().any(|token| bearer_matches(headers, token))
    }
}

/// The endpoint's routes.
pub fn metrics_router(
    registry: Arc<Registry>,
    tokens: MetricsTokens,
    hosts: AllowedHosts,
) -> Router {
    Router::new()
        .route("/metrics", get(scrape))
        .fallback(|| async {
            (
                http::StatusCode::NOT_FOUND,
                "the metrics endpoint serves GET /metrics\n",
            )
        })
        .with_state(registry)
        .layer(axum::middleware::from_fn_with_state(tokens, require))
        .layer(axum::middleware::from_fn_with_state(
            hosts,
            super::hosts::require,
        ))
}

/// Serves the endpoint on `listener` until `stop` fires; over TLS with the server's
/// certificate when it has one, so a scraper's token never crosses in clear.
pub async fn serve_metrics(
    registry: Arc<Registry>,
    tokens: MetricsTokens,
    listener: TcpListener,
    tls: Option<TlsIdentity>,
    allowed_hosts: Vec<String>,
    stop: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let hosts = super::hosts::allowed(&allowed_hosts, tls.as_ref());
    super::serve_app(
        metrics_router(registry, tokens, hosts),
        listener,
        tls.as_ref(),
        stop,
    )
    .await
}

async fn scrape(State(registry): State<Arc<Registry>>) -> Response {
    let mut text = String::with_capacity(16 * 1024);
    match prometheus_client::encoding::text::encode(&mut text, &registry) {
        Ok(()) => ([(CONTENT_TYPE, OPENMETRICS)], text).into_response(),
        Err(_) => {
            tracing::error!("cannot encode the metrics");
            http::StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

async fn require(State(tokens): State<MetricsTokens>, request: Request, next: Next) -> Response {
    if tokens.admit(request.headers()) {
        next.run(request).await
    } else {
        HttpError::unauthenticated().into_response()
    }
}
