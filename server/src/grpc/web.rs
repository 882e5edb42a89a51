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

/// Parses a `--cors-origin`: `scheme://host[:port]`, exactly as a browser sends it in
/// `Origin` (no path, no trailing slash, no wildcard).
pub fn parse_origin(value: &str) -> Result<HeaderValue, String> {
    let uri: http::Uri = value
        .parse()
        .map_err(|_| format!("`{value}` is not a URL"))?;
    let scheme_ok = matches!(uri.scheme_str(), Some("http" | "https"));
    let bare = uri.authority().is_some() && uri.path_and_query().is_none_or(|p| p.as_str() == "/");
    if !scheme_ok || !bare || value.ends_with('/') || value.contains('*') {
        return Err(format!(
            "`{value}` is not an origin: expected scheme://host[:port], e.g. https://app.example.com"
        ));
    }
    HeaderValue::from_str(value).map_err(|_| format!("`{value}` is not a valid header value"))
}

#[cfg(test)]
mod tests {
    use super::parse_origin;

    #[test]
    fn origins_are_scheme_host_and_port_only() {
        for ok in ["https://app.example.com", "http://127.0.0.1:5173"] {
            assert_eq!(parse_origin(ok).expect(ok), ok);
        }
        for bad in [
            "*",
            "app.example.com",
            "https://app.example.com/",
            "https://app.example.com/path",
            "ftp://app.example.com",
            "https://*.example.com",
        ] {
            let error = parse_origin(bad).expect_err(bad);
            assert!(error.contains(bad), "{error}");
        }
    }
}
