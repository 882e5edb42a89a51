//! Browsers on the main port: gRPC-Web (tonic-web translates it to gRPC in front of the
//! services) and CORS for the origins the operator lists. With no origin listed, no
//! cross-origin request is allowed; same-origin pages and non-browser clients need none.

use std::time::Duration;

use http::header::{AUTHORIZATION, CONTENT_TYPE};
use http::{HeaderName, HeaderValue, Method};
use tower_http::cors::{AllowOrigin, CorsLayer};

/// Request headers a gRPC-Web (or Connect) client in a browser sends besides the simple ones.
const REQUEST_HEADERS: &[&str] = &[
    "x-grpc-web",
    "x-user-agent",
    "grpc-timeout",
    "connect-protocol-version",
    "connect-timeout-ms",
    "last-event-id",
];

/// Response headers a browser script must be able to read: the call's status.
const EXPOSED_HEADERS: &[&str] = &["grpc-status", "grpc-message", "grpc-status-details-bin"];

/// How long a browser may cache a preflight answer.
const PREFLIGHT_MAX_AGE: Duration = Duration::from_secs(3600);

/// CORS restricted to `origins` (exact matches), for the gRPC port and the HTTP gateway.
pub fn cors(origins: &[HeaderValue]) -> CorsLayer {
    let mut headers: Vec<HeaderName> = vec![AUTHORIZATION, CONTENT_TYPE];
    headers.extend(REQUEST_HEADERS.iter().map(|h| HeaderName::from_static(h)));
    CorsLayer::new()
        .allow_origin(AllowOrigin::list(origins.iter().cloned()))
        .allow_methods([Method::GET, Method::POST])
        .allow_headers(headers)
        .expose_headers(
            EXPOSED_HEADERS
                .iter()
                .map(|h| HeaderName::from_static(h))
                .collect::<Vec<_>>(),
        )
        .max_age(PREFLIGHT_MAX_AGE)
}

/// What the API needs to be served on another listener than the gRPC port.
pub(crate) struct WebApi {
    pub runtime: odyssey_runtime::OdysseyRuntime,
    pub auth_token: Option<String>,
    pub heartbeat: Duration,
    pub max_message_bytes: usize,
    /// Ends live streams (event subscriptions, approval watches) at shutdown.
    pub streams: tokio_util::sync::CancellationToken,
}

/// The `odyssey.v1` services over gRPC-Web only, as routes of an HTTP router: what the
/// console calls on the HTTP gateway's address, so that it stays same-origin. The same
/// services, auth, deadlines and decoding errors as the gRPC port; health and reflection
/// stay on the gRPC port.
pub(crate) fn router(api: WebApi) -> axum::Router {
    use odyssey_api::v1::{
        approval_service_server::ApprovalServiceServer, bundle_service_server::BundleServiceServer,
        execution_service_server::ExecutionServiceServer,
        server_service_server::ServerServiceServer, session_service_server::SessionServiceServer,
    };

    let max = api.max_message_bytes;
    let runtime = api.runtime;
    let routes = tonic::service::Routes::new(
        BundleServiceServer::new(super::bundle::Bundles::new(runtime.clone()))
            .max_decoding_message_size(max)
            .max_encoding_message_size(max),
    )
    .add_service(
        SessionServiceServer::new(super::session::Sessions::new(
            runtime.clone(),
            api.heartbeat,
            api.streams.clone(),
        ))
        .max_decoding_message_size(max)
        .max_encoding_message_size(max),
    )
    .add_service(
        ExecutionServiceServer::new(super::execution::Executions::new(runtime.clone()))
            .max_decoding_message_size(max)
            .max_encoding_message_size(max),
    )
    .add_service(
        ApprovalServiceServer::new(super::approval::Approvals::new(
            runtime.clone(),
            api.heartbeat,
            api.streams,
        ))
        .max_decoding_message_size(max)
        .max_encoding_message_size(max),
    )
    .add_service(
        ServerServiceServer::new(super::server_info::ServerInfo::new(runtime, max))
            .max_decoding_message_size(max)
            .max_encoding_message_size(max),
    )
    .prepare();
    let service = tower::ServiceBuilder::new()
        .layer(tonic_web::GrpcWebLayer::new())
        .layer(super::deadline::DeadlineLayer)
        .layer(super::auth::AuthLayer::new(api.auth_token))
        .layer(super::malformed::MalformedRequestLayer)
        .service(routes);
    super::SERVICE_NAMES
        .iter()
        .fold(axum::Router::new(), |router, name| {
            router.route_service(&format!("/{name}/{{*method}}"), service.clone())
        })
}
