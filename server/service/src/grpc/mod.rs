//! The gRPC adapter: `odyssey.v1` services over the runtime core, plus health and
//! reflection (v1 and v1alpha, so grpcurl works without proto files), bearer-token auth,
//! message size limits, and gRPC-Web with CORS for browsers. Translation only: decisions
//! live in `odyssey_runtime`.

mod approval;
pub(crate) mod auth;
mod bundle;
pub(crate) mod convert;
mod deadline;
mod execution;
pub mod host;
mod malformed;
pub mod metrics;
mod server_info;
mod session;
mod status;
pub mod web;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use odyssey_api::a2a::v1::a2a_service_server::A2aServiceServer;
use odyssey_api::v1::{
    approval_service_server::ApprovalServiceServer, bundle_service_server::BundleServiceServer,
    execution_service_server::ExecutionServiceServer, server_service_server::ServerServiceServer,
    session_service_server::SessionServiceServer,
};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::transport::Server;

pub use metrics::RpcMetrics;
pub use status::{ERROR_DOMAIN, to_status};
pub(crate) use status::{invalid, shorten, to_status_at};

use crate::config::ApiSettings;
use crate::tls::{GRPC_ALPN, TlsIdentity, TlsListener};
use odyssey_runtime::OdysseyRuntime;

/// Transport settings of the gRPC surface.
#[derive(Clone)]
pub struct GrpcOptions {
    /// When set, every RPC but health checks and reflection needs `authorization: Bearer
    /// <token>`.
    pub auth_token: Option<String>,
    /// Interval of heartbeats on idle SubscribeSession and WatchApprovals streams.
    pub heartbeat: Duration,
    /// Largest request or response message, in bytes.
    pub max_message_bytes: usize,
    /// Serve TLS with this identity (ALPN `h2`, and `http/1.1` for gRPC-Web); plaintext
    /// when `None`.
    pub tls: Option<TlsIdentity>,
    /// Browser origins allowed to call the API cross-origin (gRPC-Web); none by default.
    pub cors_origins: Vec<http::HeaderValue>,
    /// Host names requests may name besides IP literals, `localhost` and the certificate's
    /// names (see [`host`]); `*` turns the check off.
    pub allowed_hosts: Vec<String>,
    /// Where every call is counted, when the metrics endpoint is on.
    pub metrics: Option<Arc<RpcMetrics>>,
    /// The A2A binding's settings and shared state (see [`crate::a2a`]).
    pub a2a: crate::a2a::A2aOptions,
}

impl GrpcOptions {
    /// The operator's settings, with what the running server adds.
    pub fn new(
        settings: ApiSettings,
        tls: Option<TlsIdentity>,
        metrics: Option<Arc<RpcMetrics>>,
    ) -> Self {
        let ApiSettings {
            auth_token,
            heartbeat,
            max_message_bytes,
            cors_origins,
            allowed_hosts,
            a2a_default_agent,
            a2a_push_allowed_urls,
        } = settings;
        Self {
            auth_token,
            heartbeat,
            max_message_bytes,
            tls,
            cors_origins,
            allowed_hosts,
            metrics,
            a2a: crate::a2a::A2aOptions::new(a2a_default_agent, a2a_push_allowed_urls),
        }
    }
}

impl Default for GrpcOptions {
    fn default() -> Self {
        Self::new(ApiSettings::default(), None, None)
    }
}

/// The token stays out of debug output.
impl std::fmt::Debug for GrpcOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcOptions")
            .field(
                "auth_token",
                &self.auth_token.as_ref().map(|_| crate::config::MASK),
            )
            .field("heartbeat", &self.heartbeat)
            .field("max_message_bytes", &self.max_message_bytes)
            .field("tls", &self.tls)
            .field("cors_origins", &self.cors_origins)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("metrics", &self.metrics.is_some())
            .field("a2a_default_agent", &self.a2a.default_agent)
            .finish()
    }
}

/// The fully qualified names of the services this server offers.
pub const SERVICE_NAMES: &[&str] = &[
    "odyssey.v1.BundleService",
    "odyssey.v1.SessionService",
    "odyssey.v1.ExecutionService",
    "odyssey.v1.ApprovalService",
    "odyssey.v1.ServerService",
    crate::a2a::SERVICE_NAME,
];

/// Serves the API on `listener` until `stop` fires. Then health turns NOT_SERVING, the
/// runtime finishes or interrupts its turns (`grace`), live streams end, and the
/// transport closes once in-flight calls are answered.
pub async fn serve(
    runtime: OdysseyRuntime,
    options: GrpcOptions,
    listener: TcpListener,
    stop: impl Future<Output = ()> + Send + 'static,
    grace: Duration,
) -> Result<(), tonic::transport::Error> {
    let (health, health_service) = tonic_health::server::health_reporter();
    for name in SERVICE_NAMES.iter().chain(&[""]) {
        health
            .set_service_status(*name, tonic_health::ServingStatus::Serving)
            .await;
    }
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(odyssey_api::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
            // google.rpc error details (ErrorInfo, BadRequest, RetryInfo), so grpcurl can
            // decode the details every error carries.
            .register_encoded_file_descriptor_set(tonic_types::pb::FILE_DESCRIPTOR_SET)
    };
    let reflection_v1 = reflection()
        .build_v1()
        .map_err(|e| tracing::error!(error = %e, "reflection v1 unavailable"))
        .ok();
    let reflection_v1alpha = reflection()
        .build_v1alpha()
        .map_err(|e| tracing::error!(error = %e, "reflection v1alpha unavailable"))
        .ok();

    let streams = CancellationToken::new();
    let a2a_streams = streams.clone();
    let max = options.max_message_bytes;
    let shutdown = {
        let runtime = runtime.clone();
        let streams = streams.clone();
        async move {
            stop.await;
            tracing::info!("shutting down: health NOT_SERVING, finishing turns");
            for name in SERVICE_NAMES.iter().chain(&[""]) {
                health
                    .set_service_status(*name, tonic_health::ServingStatus::NotServing)
                    .await;
            }
            runtime.shutdown(grace).await;
            streams.cancel();
        }
    };

    // Outermost first: requests naming a host this server does not answer to get 421
    // (DNS rebinding), CORS answers preflights (which carry no token), tonic-web turns
    // gRPC-Web into gRPC (and the answers back, auth refusals included), a call past its
    // deadline is answered DEADLINE_EXCEEDED (not tonic's CANCELLED), metrics count
    // every gRPC call (refused ones too), then auth, then requests that do not decode are
    // answered INVALID_ARGUMENT rather than tonic's INTERNAL. HTTP/1.1 is accepted for gRPC-Web;
    // gRPC itself stays on HTTP/2. TLS is done by our own listener, which offers HTTP/1.1
    // in ALPN too.
    let certificate_names = options.tls.as_ref().map_or(&[][..], TlsIdentity::names);
    let hosts = host::AllowedHosts::new(&options.allowed_hosts, certificate_names);
    let router = Server::builder()
        .accept_http1(true)
        .layer(host::HostLayer::new(hosts))
        .layer(web::cors(&options.cors_origins))
        .layer(tonic_web::GrpcWebLayer::new())
        .layer(deadline::DeadlineLayer)
        .layer(metrics::RpcMetricsLayer::new(options.metrics.clone()))
        .layer(auth::AuthLayer::new(options.auth_token.clone()))
        .layer(malformed::MalformedRequestLayer)
        .add_service(health_service)
        .add_optional_service(reflection_v1)
        .add_optional_service(reflection_v1alpha)
        .add_service(
            BundleServiceServer::new(bundle::Bundles::new(runtime.clone()))
                .max_decoding_message_size(max)
                .max_encoding_message_size(max),
        )
        .add_service(
            SessionServiceServer::new(session::Sessions::new(
                runtime.clone(),
                options.heartbeat,
                streams.clone(),
            ))
            .max_decoding_message_size(max)
            .max_encoding_message_size(max),
        )
        .add_service(
            ExecutionServiceServer::new(execution::Executions::new(runtime.clone()))
                .max_decoding_message_size(max)
                .max_encoding_message_size(max),
        )
        .add_service(
            ApprovalServiceServer::new(approval::Approvals::new(
                runtime.clone(),
                options.heartbeat,
                streams,
            ))
            .max_decoding_message_size(max)
            .max_encoding_message_size(max),
        )
        .add_service(
            A2aServiceServer::new(crate::a2a::A2a::new(
                runtime.clone(),
                a2a_streams,
                options.a2a.clone(),
            ))
            .max_decoding_message_size(max)
            .max_encoding_message_size(max),
        )
        .add_service(
            ServerServiceServer::new(server_info::ServerInfo::new(runtime, max))
                .max_decoding_message_size(max)
                .max_encoding_message_size(max),
        );
    match &options.tls {
        Some(identity) => {
            let listener = TlsListener::new(listener, identity.acceptor(GRPC_ALPN));
            router
                .serve_with_incoming_shutdown(listener.into_stream(), shutdown)
                .await
        }
        None => {
            router
                .serve_with_incoming_shutdown(without_nagle(listener), shutdown)
                .await
        }
    }
}

/// The listener's connections with Nagle's algorithm off, as tonic sets up the listeners it
/// binds itself (it leaves given ones alone). With it on, a small frame written while an
/// earlier one is unacknowledged waits for the peer's delayed ACK: a streamed event or a
/// short answer could stall for tens of milliseconds.
fn without_nagle(
    listener: TcpListener,
) -> impl futures::Stream<Item = std::io::Result<tokio::net::TcpStream>> {
    use futures::StreamExt;
    tokio_stream::wrappers::TcpListenerStream::new(listener).map(|connection| {
        let connection = connection?;
        if let Err(e) = connection.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot turn Nagle's algorithm off");
        }
        Ok(connection)
    })
}
