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
