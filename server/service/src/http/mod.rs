//! The HTTP surfaces beside the gRPC port: the metrics endpoint (`--metrics-listen`, see
//! [`metrics`]) and the gateway.
//!
//! The HTTP gateway (`--http-listen`): a small JSON/SSE surface for browsers and curl,
//! beside the gRPC port. `GET /sessions/{id}/events` streams a session's events as
//! server-sent events (each `id:` is the event's sequence; `Last-Event-ID` resumes with no
//! gap), `GET /approvals` lists the tool calls waiting for a human and
//! `POST /approvals/{request_id}` answers one, `POST /bundles` installs a bundle archive,
//! `/mcp` serves the installed agents as MCP tools (see [`crate::mcp`]).
//! Every JSON answer is an `odyssey.v1` message
//! in its proto3 canonical JSON form (see [`json`]), never the on-disk log's. Same bearer token,
//! CORS origins and TLS certificate as the gRPC port. Like `crate::grpc`, an adapter only:
//! every request is one call on the runtime core. With `--console`, the web console and
//! the API over gRPC-Web are served here too (see [`console`]); A2A's agent cards (public)
//! and its JSON-RPC binding, `POST /a2a/jsonrpc`, too (see [`crate::a2a`]).

mod approvals;
mod auth;
mod bundles;
mod console;
mod error;
mod events;
mod hosts;
mod json;
pub mod metrics;

use std::future::Future;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::tls::{GATEWAY_ALPN, TlsIdentity, TlsListener};
use odyssey_runtime::OdysseyRuntime;

pub use error::HttpError;
pub use json::ApiEventJson;
pub use metrics::{MetricsTokens, serve_metrics};

/// Settings of the HTTP gateway.
#[derive(Clone, Debug, Default)]
pub struct HttpOptions {
    /// When set, every route needs `authorization: Bearer <token>`.
    pub auth_token: Option<String>,
    /// Interval of keep-alive comments on idle event streams.
    pub heartbeat: Duration,
    /// Browser origins allowed to call the gateway cross-origin; none by default.
    pub cors_origins: Vec<http::HeaderValue>,
    /// Serve HTTPS with this identity; plain HTTP when `None`.
    pub tls: Option<TlsIdentity>,
    /// Host names requests may name besides IP literals, `localhost` and the certificate's
    /// names (see [`crate::grpc::host`]).
    pub allowed_hosts: Vec<String>,
    /// Also serve the web console and gRPC-Web for it (see [`console`]).
    pub console: bool,
    /// Largest gRPC-Web message accepted or sent, as on the gRPC port.
    pub max_message_bytes: usize,
    /// Serve A2A agent cards (see [`crate::a2a::card`]), public like A2A discovery needs.
    pub a2a_cards: Option<crate::a2a::CardOptions>,
}

/// What every handler reaches: the core, and the signal that ends live streams.
#[derive(Clone)]
struct Gateway {
    runtime: OdysseyRuntime,
    heartbeat: Duration,
    shutdown: CancellationToken,
}

/// The gateway's routes, ready to serve.
pub fn router(
    runtime: OdysseyRuntime,
    options: &HttpOptions,
    shutdown: CancellationToken,
) -> Router {
    // Public, as A2A discovery needs: beside the routes behind the token.
    let cards = options.a2a_cards.clone().map(|mut cards| {
        cards.http_tls = options.tls.is_some();
        crate::a2a::card::routes(runtime.clone(), cards)
    });
    // A2A's JSON-RPC binding, behind the token like every call.
    let a2a = options.a2a_cards.as_ref().map(|cards| {
        crate::a2a::jsonrpc::routes(
            runtime.clone(),
            options.heartbeat,
            shutdown.clone(),
            cards.a2a.clone(),
        )
    });
    if options.console {
        return with_console(runtime, options, shutdown, cards, a2a);
    }
    let gateway = Gateway {
        runtime,
        heartbeat: options.heartbeat,
        shutdown,
    };
    let archive_limit = bundles::body_limit(&gateway);
    let mcp = crate::mcp::service(gateway.runtime.clone(), gateway.shutdown.clone());
    let authenticated = Router::new()
        .route_service(crate::mcp::PATH, mcp)
        .route("/sessions/{session_id}/events", get(events::stream))
        .route("/approvals", get(approvals::list))
        .route("/approvals/{request_id}", post(approvals::resolve))
        .route(
            "/bundles",
            post(bundles::import).layer(DefaultBodyLimit::max(archive_limit)),
        )
        .fallback(error::no_route)
        .with_state(gateway);
    let authenticated = a2a.into_iter().fold(authenticated, Router::merge).layer(
        axum::middleware::from_fn_with_state(
            auth::Token::new(options.auth_token.clone()),
            auth::require,
        ),
    );
    cards
        .into_iter()
        .fold(authenticated, Router::merge)
        .layer(crate::grpc::web::cors(&options.cors_origins))
        .layer(axum::middleware::from_fn_with_state(
            hosts::allowed(&options.allowed_hosts, options.tls.as_ref()),
            hosts::require,
        ))
}

/// The gateway's routes with the console beside them: its page, login and assets, and the
/// API over gRPC-Web (with its own token check, answering as gRPC does). A console login
/// cookie stands in for the bearer header on same-origin requests (see [`console`]).
fn with_console(
    runtime: OdysseyRuntime,
    options: &HttpOptions,
    shutdown: CancellationToken,
    cards: Option<Router>,
    a2a: Option<Router>,
) -> Router {
    let console = console::Console::new(options.auth_token.clone(), options.tls.is_some());
    let gateway = Gateway {
        runtime: runtime.clone(),
        heartbeat: options.heartbeat,
        shutdown: shutdown.clone(),
    };
    let archive_limit = bundles::body_limit(&gateway);
    let mcp = crate::mcp::service(gateway.runtime.clone(), gateway.shutdown.clone());
    let gateway_routes = Router::new()
        .route_service(crate::mcp::PATH, mcp)
        .route("/sessions/{session_id}/events", get(events::stream))
        .route("/approvals", get(approvals::list))
        .route("/approvals/{request_id}", post(approvals::resolve))
        .route(
            "/bundles",
            post(bundles::import).layer(DefaultBodyLimit::max(archive_limit)),
        )
        .with_state(gateway);
    let gateway_routes = a2a
        .into_iter()
        .fold(gateway_routes, Router::merge)
        .route_layer(axum::middleware::from_fn_with_state(
            auth::Token::new(options.auth_token.clone()),
            auth::require,
        ));
    let web = crate::grpc::web::router(crate::grpc::web::WebApi {
        runtime,
        auth_token: options.auth_token.clone(),
        heartbeat: options.heartbeat,
        max_message_bytes: options.max_message_bytes,
        streams: shutdown,
    });
    let routes = gateway_routes
        .merge(web)
        .merge(console::router(console.clone()));
    cards
        .into_iter()
        .fold(routes, Router::merge)
        .fallback(error::no_route)
        .layer(axum::middleware::from_fn_with_state(
            console,
            console::cookie_auth,
        ))
        .layer(crate::grpc::web::cors(&options.cors_origins))
        .layer(axum::middleware::from_fn_with_state(
            hosts::allowed(&options.allowed_hosts, options.tls.as_ref()),
            hosts::require,
        ))
}

/// Serves the gateway on `listener` until `stop` fires; live event streams end then.
pub async fn serve(
    runtime: OdysseyRuntime,
    options: HttpOptions,
    listener: TcpListener,
    stop: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let streams = CancellationToken::new();
    let app = router(runtime, &options, streams.clone());
    let shutdown = async move {
        stop.await;
        streams.cancel();
    };
    serve_app(app, listener, options.tls.as_ref(), shutdown).await
}

/// Serves `app` on `listener`, over TLS (HTTP/1.1 in ALPN) when the server has a
/// certificate, until `shutdown` completes.
async fn serve_app(
    app: Router,
    listener: TcpListener,
    tls: Option<&TlsIdentity>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    match tls {
        Some(identity) => {
            let listener = TlsListener::new(listener, identity.acceptor(GATEWAY_ALPN));
            axum::serve(listener, app)
                .with_graceful_shutdown(shutdown)
                .await
        }
        None => {
            axum::serve(listener, app)
                .with_graceful_shutdown(shutdown)
                .await
        }
    }
}
