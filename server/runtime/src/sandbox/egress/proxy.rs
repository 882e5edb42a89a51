//! One session's egress proxy: HTTP/1.1 on a Unix socket the session's sandboxes reach
//! through their relay.
//!
//! Two kinds of request are served. `CONNECT host:port` opens a tunnel (what clients use
//! for `https://`, and for anything else they tunnel). A request with an absolute URI
//! (`GET http://host/path`) is forwarded on a connection of its own, with the `Proxy-*`
//! and hop-by-hop headers removed, `Host` set from the URI and `Connection: close`; the
//! sandbox's connection to the proxy may stay open for its next request, which is
//! decided afresh. Everything else is refused with `400`.
//!
//! Every task the proxy starts (connections, tunnels, forwarded requests) is tracked and
//! watches one cancellation token, so stopping the proxy ends them all and waits for them.
//!
//! Every attempt is an event in the session's log, so attempts draw on a budget (a burst,
//! then a steady rate, see [`AttemptBudget`]): a process looping on connections cannot
//! grow the log without bound. Past it, attempts are refused with `429` and not recorded
//! one by one; the server's log says when that starts.

use std::convert::Infallible;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode, Uri, Version};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpStream, UnixListener, UnixStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::NetworkGrant;
use super::addresses::AddressPolicy;
use super::connect::{self, Outcome, Target};

/// Connections one session may have open through the proxy at once; more wait.
const MAX_CONNECTIONS: usize = 256;
/// How long a request's head may take to arrive.
const HEADER_TIMEOUT: Duration = Duration::from_secs(30);
/// How long stopping waits for the proxy's tasks.
const STOP_WAIT: Duration = Duration::from_secs(5);
/// Connection attempts a session may make at once, and per second after that.
const ATTEMPT_BURST: f64 = 500.0;
const ATTEMPTS_PER_SECOND: f64 = 50.0;

type Body = BoxBody<Bytes, hyper::Error>;

/// A running proxy.
#[derive(Debug)]
pub(super) struct SessionProxy {
    shared: Arc<Shared>,
    socket: PathBuf,
}

#[derive(Debug)]
struct Shared {
    /// The latest grant of the session: its domain lists and where attempts are reported.
    grant: RwLock<NetworkGrant>,
    addresses: Arc<AddressPolicy>,
    budget: Mutex<AttemptBudget>,
    tasks: TaskTracker,
    stop: CancellationToken,
}

/// A token bucket of connection attempts: [`ATTEMPT_BURST`] at once, refilled at
/// [`ATTEMPTS_PER_SECOND`].
#[derive(Debug)]
struct AttemptBudget {
    tokens: f64,
    refilled: Instant,
    /// Attempts are being refused (logged once when it starts).
    exhausted: bool,
}

impl AttemptBudget {
    fn new(now: Instant) -> Self {
        Self {
            tokens: ATTEMPT_BURST,
            refilled: now,
            exhausted: false,
        }
    }

    /// Takes one attempt; `Err(true)` for the first refusal of a run of them.
    fn take(&mut self, now: Instant) -> Result<(), bool> {
        let elapsed = now.saturating_duration_since(self.refilled).as_secs_f64();
        self.tokens = (self.tokens + elapsed * ATTEMPTS_PER_SECOND).min(ATTEMPT_BURST);
        self.refilled = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            self.exhausted = false;
            return Ok(());
        }
        let first = !self.exhausted;
        self.exhausted = true;
        Err(first)
    }
}

impl SessionProxy {
    /// Listens on `socket` (`bind_path` names the same file by a path short enough for a
    /// socket address) and serves in the background.
    pub(super) fn start(
        socket: PathBuf,
        bind_path: &Path,
        grant: NetworkGrant,
        addresses: Arc<AddressPolicy>,
    ) -> io::Result<Self> {
        // A socket file left by a previous server (the cell outlives it) is stale.
        match std::fs::remove_file(bind_path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let listener = UnixListener::bind(bind_path)?;
        let shared = Arc::new(Shared {
            grant: RwLock::new(grant),
            addresses,
            budget: Mutex::new(AttemptBudget::new(Instant::now())),
            tasks: TaskTracker::new(),
            stop: CancellationToken::new(),
        });
        shared.tasks.spawn(accept(listener, shared.clone()));
        Ok(Self { shared, socket })
    }

    /// Hands the proxy the session's latest grant (its bundle may have changed).
    pub(super) fn update(&self, grant: NetworkGrant) {
        if let Ok(mut current) = self.shared.grant.write() {
            *current = grant;
        }
    }

    /// Ends every task, waits for them (a few seconds at most) and removes the socket.
    pub(super) async fn stop(self) {
        self.shared.stop.cancel();
        self.shared.tasks.close();
        if tokio::time::timeout(STOP_WAIT, self.shared.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!(socket = %self.socket.display(), "egress proxy tasks still running after stop");
        }
        let _ = std::fs::remove_file(&self.socket);
    }

    /// How many of its tasks are alive (the accept loop included).
    pub(super) fn tasks(&self) -> usize {
        self.shared.tasks.len()
    }
}

impl Drop for SessionProxy {
    /// A proxy dropped without [`SessionProxy::stop`] (a runtime dropped without a
    /// shutdown, a failed start) still ends its tasks.
    fn drop(&mut self) {
        self.shared.stop.cancel();
    }
}

async fn accept(listener: UnixListener, shared: Arc<Shared>) {
    let permits = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => return,
            },
            () = shared.stop.cancelled() => return,
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = shared.stop.cancelled() => return,
        };
        match accepted {
            Ok((stream, _)) => {
                shared
                    .tasks
                    .spawn(serve_connection(stream, shared.clone(), Arc::new(permit)));
            }
            Err(e) => {
                // Out of descriptors or memory: let the moment pass instead of spinning.
                tracing::warn!(error = %e, "egress proxy cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

async fn serve_connection(
    stream: UnixStream,
    shared: Arc<Shared>,
    permit: Arc<OwnedSemaphorePermit>,
) {
    let service_shared = shared.clone();
    let service =
        service_fn(move |request| handle(request, service_shared.clone(), permit.clone()));
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    tokio::select! {
        _ = connection => {}
        () = shared.stop.cancelled() => {}
    }
}

async fn handle(
    request: Request<Incoming>,
    shared: Arc<Shared>,
    permit: Arc<OwnedSemaphorePermit>,
) -> Result<Response<Body>, Infallible> {
    Ok(if request.method() == Method::CONNECT {
        tunnel(request, shared, permit).await
    } else {
        forward(request, shared).await
    })
}

/// `CONNECT host:port`: decide, connect, answer 200, then copy bytes both ways.
async fn tunnel(
    request: Request<Incoming>,
    shared: Arc<Shared>,
    permit: Arc<OwnedSemaphorePermit>,
) -> Response<Body> {
    let Some(authority) = request.uri().authority().cloned() else {
        return text(StatusCode::BAD_REQUEST, "CONNECT needs host:port");
    };
    let Some(port) = authority.port_u16() else {
        return text(StatusCode::BAD_REQUEST, "CONNECT needs host:port");
    };
    let target = Target {
        host: authority.host(),
        port,
    };
    let mut upstream = match open(&shared, target).await {
        Ok(stream) => stream,
        Err(refused) => return refused,
    };
    let stop = shared.stop.clone();
    shared.tasks.spawn(async move {
        let _permit = permit;
        let upgraded = tokio::select! {
            upgraded = hyper::upgrade::on(request) => upgraded,
            () = stop.cancelled() => return,
        };
        let Ok(upgraded) = upgraded else { return };
        let mut client = TokioIo::new(upgraded);
        tokio::select! {
            _ = tokio::io::copy_bidirectional(&mut client, &mut upstream) => {}
            () = stop.cancelled() => {}
        }
    });
    Response::new(empty())
}

/// `METHOD http://host[:port]/path`: decide, connect, send the request on, stream back.
async fn forward(request: Request<Incoming>, shared: Arc<Shared>) -> Response<Body> {
    let uri = request.uri().clone();
    match uri.scheme_str() {
        Some("http") => {}
        Some(_) => {
            return text(
                StatusCode::BAD_REQUEST,
                "only http:// URIs are forwarded; use CONNECT for https and other protocols",
            );
        }
        None => {
            return text(
                StatusCode::BAD_REQUEST,
                "this is a proxy: send an absolute URI (http://host/path) or CONNECT host:port",
            );
        }
    }
    let Some(host) = uri.host() else {
        return text(StatusCode::BAD_REQUEST, "the URI has no host");
    };
    let port = uri.port_u16().unwrap_or(80);
    let upstream = match open(&shared, Target { host, port }).await {
        Ok(stream) => stream,
        Err(refused) => return refused,
    };
    let (mut sender, connection) =
        match hyper::client::conn::http1::handshake::<_, Incoming>(TokioIo::new(upstream)).await {
            Ok(pair) => pair,
            Err(e) => return text(StatusCode::BAD_GATEWAY, &format!("upstream: {e}")),
        };
    let stop = shared.stop.clone();
    shared.tasks.spawn(async move {
        tokio::select! {
            _ = connection => {}
            () = stop.cancelled() => {}
        }
    });
    let Ok(outgoing) = outgoing(request, &uri) else {
        return text(StatusCode::BAD_REQUEST, "the request cannot be forwarded");
    };
    match sender.send_request(outgoing).await {
        Ok(response) => {
            let (mut parts, body) = response.into_parts();
            strip_hop_by_hop(&mut parts.headers);
            Response::from_parts(parts, body.boxed())
        }
        Err(e) => text(StatusCode::BAD_GATEWAY, &format!("upstream: {e}")),
    }
}

/// The request as the origin server gets it: origin-form URI, its own `Host`, no proxy
/// or hop-by-hop headers, one request per connection.
fn outgoing(request: Request<Incoming>, uri: &Uri) -> Result<Request<Incoming>, http::Error> {
    let (mut parts, body) = request.into_parts();
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    parts.uri = Uri::builder().path_and_query(path).build()?;
    parts.version = Version::HTTP_11;
    strip_hop_by_hop(&mut parts.headers);
    let host = match (uri.host(), uri.port()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_owned(),
        (None, _) => String::new(),
    };
    parts
        .headers
        .insert(header::HOST, HeaderValue::from_str(&host)?);
    parts
        .headers
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    Ok(Request::from_parts(parts, body))
}

/// Removes the headers that concern one hop only: those `Connection` names, the standard
/// hop-by-hop ones and every `Proxy-*` header (credentials meant for the proxy).
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in [
        header::CONNECTION,
        header::TE,
        header::TRAILER,
        header::TRANSFER_ENCODING,
        header::UPGRADE,
        HeaderName::from_static("keep-alive"),
    ] {
        headers.remove(name);
    }
    let proxy: Vec<HeaderName> = headers
        .keys()
        .filter(|name| name.as_str().starts_with("proxy-"))
        .cloned()
        .collect();
    for name in proxy {
        headers.remove(name);
    }
}

/// Decides and connects, reporting the attempt; a refusal comes back as the response.
async fn open(shared: &Shared, target: Target<'_>) -> Result<TcpStream, Response<Body>> {
    let budget = shared
        .budget
        .lock()
        .map_or(Ok(()), |mut b| b.take(Instant::now()));
    if let Err(first) = budget {
        if first {
            tracing::warn!(
                "a sandbox makes connection attempts faster than {ATTEMPTS_PER_SECOND}/s; \
                 refusing them unrecorded until it slows down"
            );
        }
        return Err(text(
            StatusCode::TOO_MANY_REQUESTS,
            "odyssey egress proxy: too many connection attempts; try again in a moment",
        ));
    }
    let Ok(grant) = shared.grant.read().map(|g| g.clone()) else {
        return Err(text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "proxy state unavailable",
        ));
    };
    let report = |attempt| (grant.report)(attempt);
    match connect::open(target, &grant.domains, &shared.addresses, report).await {
        Outcome::Connected(stream) => Ok(stream),
        Outcome::Refused { status, message } => Err(text(
            StatusCode::from_u16(status).unwrap_or(StatusCode::FORBIDDEN),
            message.trim_end(),
        )),
    }
}

fn text(status: StatusCode, message: &str) -> Response<Body> {
    let mut response = Response::new(
        Full::new(Bytes::from(format!("{message}\n")))
            .map_err(|never| match never {})
            .boxed(),
    );
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn empty() -> Body {
    Full::new(Bytes::new())
        .map_err(|never| match never {})
        .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_past_the_burst_are_refused_until_the_budget_refills() {
        let start = Instant::now();
        let mut budget = AttemptBudget::new(start);
        for _ in 0..ATTEMPT_BURST as usize {
            assert_eq!(budget.take(start), Ok(()));
        }
        assert_eq!(
            budget.take(start),
            Err(true),
            "the first refusal is reported"
        );
        assert_eq!(budget.take(start), Err(false), "the next ones are not");
        let later = start + Duration::from_millis(100);
        for _ in 0..(ATTEMPTS_PER_SECOND / 10.0) as usize {
            assert_eq!(budget.take(later), Ok(()));
        }
        assert_eq!(budget.take(later), Err(true));
        let much_later = later + Duration::from_secs(3600);
        for _ in 0..ATTEMPT_BURST as usize {
            assert_eq!(budget.take(much_later), Ok(()));
        }
        assert!(
            budget.take(much_later).is_err(),
            "the burst does not grow past its size"
        );
    }

    #[test]
    fn proxy_and_hop_by_hop_headers_are_removed() {
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("proxy-authorization", "Basic c2VjcmV0"),
            ("proxy-connection", "keep-alive"),
            ("connection", "keep-alive, x-private"),
            ("x-private", "1"),
            ("keep-alive", "timeout=5"),
            ("accept", "*/*"),
            ("user-agent", "curl"),
        ] {
            headers.append(
                HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
        }
        strip_hop_by_hop(&mut headers);
        let mut left: Vec<&str> = headers.keys().map(HeaderName::as_str).collect();
        left.sort_unstable();
        assert_eq!(left, ["accept", "user-agent"]);
    }
}
