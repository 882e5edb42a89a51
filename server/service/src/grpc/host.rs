//! Which hosts the server answers to: the defence against DNS rebinding. A web page the
//! operator visits can make its browser resolve the page's own name to 127.0.0.1 and then
//! call a tokenless loopback server "same-origin"; such a request still carries the page's
//! name in `Host`. So every request's `Host` (HTTP/1.1) and `:authority` (HTTP/2) must be
//! an IP literal (the listen addresses among them), `localhost`, a name of the server's
//! TLS certificate or a name the operator lists (`server.allowed_hosts`,
//! `--allowed-host`; `*.example.com` for its subdomains, `*` for any host). Anything else
//! is answered 421 Misdirected Request before it reaches a service. Plain gRPC clients
//! send the address they dialled, which is one of these.
//!
//! Used by the gRPC port (as the outermost layer, so CORS preflights are checked too) and
//! by the HTTP gateway and metrics endpoint. Health checks are exempt, as from the token:
//! probes send whatever host their platform uses, and health reveals nothing.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;
use std::task::{Context, Poll};

use http::header::{CONTENT_TYPE, HOST};
use http::{HeaderValue, StatusCode};
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};
use tower::{Layer, Service};

use super::status::ERROR_DOMAIN;

/// The `ErrorInfo` reason of a refused host.
pub const REASON: &str = "HOST_NOT_ALLOWED";

/// Where the refusal tells the operator to allow a name.
const HOW_TO_ALLOW: &str = "start the server with --allowed-host NAME (server.allowed_hosts)";

/// The hosts a server answers to, besides IP literals and `localhost`.
#[derive(Clone, Debug, Default)]
pub struct AllowedHosts {
    /// Lower case; `*.example.com` for subdomains.
    names: Arc<[String]>,
    /// `*` was listed: the check is off.
    any: bool,
}

impl AllowedHosts {
    /// The operator's names (checked by [`crate::config::parse_allowed_host`]) and the certificate's.
    pub fn new(configured: &[String], certificate: &[String]) -> Self {
        let any = configured.iter().any(|name| name == "*");
        let names = configured
            .iter()
            .chain(certificate)
            .filter(|name| *name != "*")
            .map(|name| name.trim_end_matches('.').to_ascii_lowercase())
            .collect();
        Self { names, any }
    }

    /// Whether a request whose `Host`/`:authority` is `host` (`name[:port]`) is served.
    pub fn allows(&self, host: &str) -> bool {
        if self.any {
            return true;
        }
        let Some(name) = host_name(host) else {
            return false;
        };
        if name.parse::<IpAddr>().is_ok() || name == "localhost" {
            return true;
        }
        self.names
            .iter()
            .any(|allowed| match allowed.strip_prefix("*.") {
                Some(parent) => name
                    .strip_suffix(parent)
                    .and_then(|label| label.strip_suffix('.'))
                    .is_some_and(|label| !label.is_empty() && !label.contains('.')),
                None => *allowed == name,
            })
    }

    /// The first host a request names that is not allowed, if any. A request naming no
    /// host at all (HTTP/1.0) is served: browsers always send one.
    pub fn refused<'a, B>(&self, request: &'a http::Request<B>) -> Option<&'a str> {
        let authority = request.uri().authority().map(|a| a.as_str());
        let headers = request.headers().get_all(HOST).iter().map(|value| {
            // A Host that is not text cannot be a name this server has.
            value.to_str().unwrap_or("\u{fffd}")
        });
        authority
            .into_iter()
            .chain(headers)
            .find(|host| !self.allows(host))
    }
}

/// The name of `host[:port]` (brackets kept off an IPv6 literal), lower case and without
/// a final dot; `None` when it is not a host at all.
fn host_name(host: &str) -> Option<String> {
    let host = host.trim();
    if let Some(rest) = host.strip_prefix('[') {
        let (literal, after) = rest.split_once(']')?;
        let port_ok = after.is_empty() || after.strip_prefix(':').is_some_and(is_port);
        return (port_ok && literal.parse::<Ipv6Addr>().is_ok()).then(|| literal.to_owned());
    }
    let name = match host.rsplit_once(':') {
        Some((name, port)) if is_port(port) => name,
        Some(_) => return None,
        None => host,
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    (!name.is_empty()).then_some(name)
}

fn is_port(text: &str) -> bool {
    !text.is_empty() && text.len() <= 5 && text.bytes().all(|b| b.is_ascii_digit())
}

/// The message of a refusal.
pub fn refusal(host: &str) -> String {
    format!(
        "this server does not answer to host `{}`: requests must name an IP address, \
         localhost, a name of the server's certificate or an allowed host; {HOW_TO_ALLOW}",
        odyssey_runtime::error::shorten(host)
    )
}

/// The gRPC status of a refused host: PERMISSION_DENIED with `ErrorInfo` naming it.
pub fn refused_status(host: &str) -> Status {
    let metadata = HashMap::from([("host".to_owned(), host.chars().take(256).collect())]);
    Status::with_error_details(
        Code::PermissionDenied,
        refusal(host),
        ErrorDetails::with_error_info(REASON, ERROR_DOMAIN, metadata),
    )
}

/// The authority (`host[:port]`) a request named to reach the server, once allowed: the
/// services that tell a client where they are (A2A's cards) answer with the name it used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedHost(pub http::uri::Authority);

impl NamedHost {
    /// `:authority` (HTTP/2), else `Host` (HTTP/1.1); `None` when neither is an authority.
    pub fn of(uri: &http::Uri, headers: &http::HeaderMap) -> Option<Self> {
        uri.authority()
            .cloned()
            .or_else(|| {
                headers
                    .get(HOST)
                    .and_then(|h| h.to_str().ok())
                    .and_then(|h| h.parse::<http::uri::Authority>().ok())
            })
            .map(Self)
    }
}

/// Answers requests for hosts that are not allowed with 421, on the gRPC port; allowed
/// ones carry their [`NamedHost`] on.
#[derive(Clone)]
pub struct HostLayer {
    hosts: AllowedHosts,
}

impl HostLayer {
    pub fn new(hosts: AllowedHosts) -> Self {
        Self { hosts }
    }
}

impl<S> Layer<S> for HostLayer {
    type Service = HostCheck<S>;

    fn layer(&self, inner: S) -> Self::Service {
        HostCheck {
            inner,
            hosts: self.hosts.clone(),
        }
    }
}

#[derive(Clone)]
pub struct HostCheck<S> {
    inner: S,
    hosts: AllowedHosts,
}

impl<S, B> Service<http::Request<B>> for HostCheck<S>
where
    S: Service<http::Request<B>, Response = http::Response<tonic::body::Body>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = futures::future::Either<
        S::Future,
        futures::future::Ready<Result<Self::Response, Self::Error>>,
    >;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        let health = request.uri().path().starts_with(super::auth::OPEN_PREFIX);
        let refused = (!health).then(|| self.hosts.refused(&request)).flatten();
        let Some(host) = refused else {
            if let Some(named) = NamedHost::of(request.uri(), request.headers()) {
                request.extensions_mut().insert(named);
            }
            return futures::future::Either::Left(self.inner.call(request));
        };
        tracing::debug!(host, "request for a host this server does not answer to");
        futures::future::Either::Right(futures::future::ready(Ok(misdirected(&request, host))))
    }
}

/// 421 Misdirected Request: with the gRPC status in the headers for a gRPC (or gRPC-Web)
/// request, so its client reads a proper code; as text for anything else.
fn misdirected<B>(request: &http::Request<B>, host: &str) -> http::Response<tonic::body::Body> {
    let content_type = request
        .headers()
        .get(CONTENT_TYPE)
        .filter(|v| v.as_bytes().starts_with(b"application/grpc"));
    let mut response = match content_type {
        Some(content_type) => {
            let mut response = refused_status(host).into_http::<tonic::body::Body>();
            response
                .headers_mut()
                .insert(CONTENT_TYPE, content_type.clone());
            response
        }
        None => {
            let mut response =
                http::Response::new(tonic::body::Body::new(format!("{}\n", refusal(host))));
            response.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            response
        }
    };
    *response.status_mut() = StatusCode::MISDIRECTED_REQUEST;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_literals_localhost_and_listed_names_are_allowed() {
        let hosts = AllowedHosts::new(
            &["odyssey.example.com".into(), "*.internal.test".into()],
            &["cert.example.org".into()],
        );
        for host in [
            "127.0.0.1:8472",
            "127.0.0.1",
            "10.1.2.3:80",
            "[::1]:8472",
            "[::1]",
            "localhost:8472",
            "LOCALHOST.",
            "odyssey.example.com",
            "Odyssey.Example.Com:443",
            "a.internal.test:1",
            "cert.example.org",
        ] {
            assert!(hosts.allows(host), "{host}");
        }
        for host in [
            "rebind.attacker.example",
            "rebind.attacker.example:8472",
            "internal.test",
            "a.b.internal.test",
            "localhost.attacker.example",
            "127.0.0.1.attacker.example",
            "odyssey.example.com.attacker.example",
            "[::1",
            "host:port",
            "",
        ] {
            assert!(!hosts.allows(host), "{host}");
        }
        assert!(AllowedHosts::new(&["*".into()], &[]).allows("anything.example"));
    }

    #[test]
    fn every_named_host_of_a_request_is_checked() {
        let hosts = AllowedHosts::default();
        let request = |uri: &str, host: Option<&str>| {
            let mut builder = http::Request::builder().uri(uri);
            if let Some(host) = host {
                builder = builder.header(HOST, host);
            }
            builder.body(()).expect("request")
        };
        assert_eq!(hosts.refused(&request("/x", None)), None);
        assert_eq!(hosts.refused(&request("/x", Some("127.0.0.1:1"))), None);
        assert_eq!(
            hosts.refused(&request("/x", Some("evil.example"))),
            Some("evil.example")
        );
        assert_eq!(
            hosts.refused(&request("http://evil.example/x", Some("127.0.0.1"))),
            Some("evil.example")
        );
    }
}
