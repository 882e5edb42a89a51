//! Model servers that behave like the ones users run, each in a child process of the
//! harness (started with [`MODEL_SERVER_ARG`]), speaking OpenAI's chat-completions SSE:
//!
//! - [`Transport::KeepAlive`]: HTTP/1.1, the connection kept open between answers, each
//!   answer a chunked stream (as llama.cpp's and vLLM's servers answer);
//! - [`Transport::Close`]: the connection closed after every answer (as simple Python
//!   servers do), so every call opens a new one;
//! - [`Transport::TlsH2`]: TLS with HTTP/2 chosen by ALPN (as hosted APIs answer), with a
//!   certificate for `localhost` signed by a CA the harness made for the run.
//!
//! Every answer sends its headers at once, its first event after the first-token delay and
//! the rest one event per write, as a model streams its tokens. The server times each call
//! from its request read to its last event handed to the connection (the model's own time,
//! which no client can avoid) and hands the timings over on `GET /timings`, so a figure can
//! subtract exactly the model's time, delays and timer jitter included.

use std::convert::Infallible;
use std::ffi::OsStr;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::Stream;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::{http1, http2};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode, header};
use hyper_util::rt::{TokioExecutor, TokioIo};
use odyssey_testing::openai_wire::{Reply, WireEvent};
use tokio::net::TcpListener;
use tokio::process::Child;

use crate::daemon::MODEL_KEY;
use crate::error::{BenchError, Result};
use crate::replies;

/// The first argument that makes this harness a model server's process.
pub const MODEL_SERVER_ARG: &str = "__model-server";

/// How the server holds its connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    KeepAlive,
    Close,
    TlsH2,
}

impl Transport {
    pub const EACH: [Transport; 3] = [Transport::KeepAlive, Transport::Close, Transport::TlsH2];

    pub fn name(self) -> &'static str {
        match self {
            Transport::KeepAlive => "keep-alive",
            Transport::Close => "close",
            Transport::TlsH2 => "tls-h2",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Transport::KeepAlive => "HTTP/1.1 keep-alive, chunked SSE",
            Transport::Close => "HTTP/1.1, connection closed after every answer",
            Transport::TlsH2 => "TLS with HTTP/2",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        Self::EACH.into_iter().find(|t| t.name() == name)
    }
}

/// The TLS material of a run: a CA the daemon and the harness trust, and the server's
/// certificate for `localhost` and `127.0.0.1`.
pub struct Tls {
    /// PEM of the CA (what `SSL_CERT_FILE` names for the daemon).
    pub ca_file: PathBuf,
    pub ca_pem: Vec<u8>,
    cert_file: PathBuf,
    key_file: PathBuf,
}

impl Tls {
    /// Makes the CA and the server's certificate, written into `dir`.
    pub fn new(dir: &Path) -> Result<Self> {
        let setup = |e: rcgen::Error| BenchError::check(format!("make a test certificate: {e}"));
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(setup)?;
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "odyssey-bench CA");
        let ca_key = rcgen::KeyPair::generate().map_err(setup)?;
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).map_err(setup)?;
        let key = rcgen::KeyPair::generate().map_err(setup)?;
        let params =
            rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
                .map_err(setup)?;
        let cert = params.signed_by(&key, &ca).map_err(setup)?;
        let tls = Self {
            ca_file: dir.join("model-ca.pem"),
            ca_pem: ca.pem().into_bytes(),
            cert_file: dir.join("model-cert.pem"),
            key_file: dir.join("model-key.pem"),
        };
        for (path, contents) in [
            (&tls.ca_file, tls.ca_pem.clone()),
            (&tls.cert_file, cert.pem().into_bytes()),
            (&tls.key_file, key.serialize_pem().into_bytes()),
        ] {
            std::fs::write(path, contents).map_err(|e| BenchError::io("write", path, e))?;
        }
        Ok(tls)
    }
}

/// A model server's process; killed when dropped (and when the harness dies).
pub struct ModelServer {
    /// `http://127.0.0.1:PORT/v1` or `https://localhost:PORT/v1`.
    pub base_url: String,
    /// A client of the harness's own, for the timings.
    control: reqwest::Client,
    _child: Child,
}

impl ModelServer {
    /// Starts a server with `transport` whose answers start after `first_token`.
    pub async fn start(transport: Transport, first_token: Duration, tls: &Tls) -> Result<Self> {
        let delay_ms = first_token.as_millis().to_string();
        let args: [&OsStr; 4] = [
            transport.name().as_ref(),
            delay_ms.as_ref(),
            tls.cert_file.as_os_str(),
            tls.key_file.as_os_str(),
        ];
        let (child, line) = crate::child::start(MODEL_SERVER_ARG, args).await?;
        let Some(port) = line.strip_prefix("port ") else {
            return Err(BenchError::check(format!(
                "the model server did not start (it said `{line}`)"
            )));
        };
        let base_url = match transport {
            Transport::TlsH2 => format!("https://localhost:{port}/v1"),
            _ => format!("http://127.0.0.1:{port}/v1"),
        };
        Ok(Self {
            base_url,
            control: client(tls)?,
            _child: child,
        })
    }

    /// The server's time on each call answered since the last take, in order.
    pub async fn take_timings(&self) -> Result<Vec<Duration>> {
        let (url, text) = self.control_get("timings").await?;
        text.split_whitespace()
            .map(|n| {
                n.parse::<u64>()
                    .map(Duration::from_nanos)
                    .map_err(|_| BenchError::check(format!("GET {url} answered `{n}`")))
            })
            .collect()
    }

    /// How many connections have carried model calls so far.
    pub async fn connections(&self) -> Result<u64> {
        let (url, text) = self.control_get("connections").await?;
        text.trim()
            .parse()
            .map_err(|_| BenchError::check(format!("GET {url} answered `{text}`")))
    }

    /// The text of the server's control endpoint `name`, with its URL for messages.
    async fn control_get(&self, name: &str) -> Result<(String, String)> {
        let url = format!("{}/{name}", self.base_url);
        let text = self
            .control
            .get(&url)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|e| BenchError::check(format!("GET {url}: {e}")))?
            .text()
            .await
            .map_err(|e| BenchError::check(format!("GET {url}: {e}")))?;
        Ok((url, text))
    }

    /// One call as a client of the model makes it, without the runtime: from sending the
    /// request to the answer's last byte read.
    pub async fn direct_call(&self, client: &reqwest::Client) -> Result<Duration> {
        let url = format!("{}/chat/completions", self.base_url);
        let body = serde_json::json!({
            "model": "gpt-4o-mini",
            "stream": true,
            "stream_options": {"include_usage": true},
            "messages": [{"role": "user", "content": "What is the answer?"}],
        });
        let started = Instant::now();
        let response = client
            .post(&url)
            .bearer_auth(MODEL_KEY)
            .json(&body)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|e| BenchError::check(format!("POST {url}: {e}")))?;
        let answer = response
            .bytes()
            .await
            .map_err(|e| BenchError::check(format!("read the answer of POST {url}: {e}")))?;
        let elapsed = started.elapsed();
        if !answer.ends_with(b"data: [DONE]\n\n") {
            return Err(BenchError::check(format!(
                "POST {url} answered without [DONE]"
            )));
        }
        Ok(elapsed)
    }
}

/// A client made as the daemon makes its providers' clients (one pool, the same
/// connection settings), trusting the run's CA.
pub fn client(tls: &Tls) -> Result<reqwest::Client> {
    install_crypto_provider();
    let ca = reqwest::Certificate::from_pem(&tls.ca_pem)
        .map_err(|e| BenchError::check(format!("read the test CA: {e}")))?;
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .tls_certs_merge([ca])
        .build()
        .map_err(|e| BenchError::check(format!("build an HTTP client: {e}")))
}

/// The model server's process: serves on `127.0.0.1:0`, prints `port N`, and serves until
/// killed. `args`: transport, first-token delay in ms, certificate and key files.
pub async fn serve(args: &[String]) -> Result<()> {
    let [transport, delay, cert, key] = args else {
        return Err(BenchError::check(
            "usage: __model-server TRANSPORT DELAY_MS CERT KEY",
        ));
    };
    let transport = Transport::parse(transport)
        .ok_or_else(|| BenchError::check(format!("no transport `{transport}`")))?;
    let delay = Duration::from_millis(
        delay
            .parse()
            .map_err(|_| BenchError::check(format!("bad delay `{delay}`")))?,
    );
    let acceptor = match transport {
        Transport::TlsH2 => Some(acceptor(Path::new(cert), Path::new(key))?),
        _ => None,
    };
    let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .await
        .map_err(|e| BenchError::io("bind", "127.0.0.1:0", e))?;
    let port = listener
        .local_addr()
        .map_err(|e| BenchError::io("bind", "127.0.0.1:0", e))?
        .port();
    println!("port {port}");
    let state = Arc::new(State {
        answer: render(&replies::short()),
        delay,
        timings: Mutex::new(Vec::new()),
        connections: AtomicU64::new(0),
    });
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            continue;
        };
        let _ = tcp.set_nodelay(true);
        let state = state.clone();
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let counted = Arc::new(AtomicBool::new(false));
            let service =
                service_fn(move |request| answer(request, state.clone(), counted.clone()));
            // A connection that fails (a client gone mid-answer) ends only itself.
            let _ = match (transport, acceptor) {
                (Transport::TlsH2, Some(acceptor)) => match acceptor.accept(tcp).await {
                    Ok(tls) => {
                        http2::Builder::new(TokioExecutor::new())
                            .serve_connection(TokioIo::new(tls), service)
                            .await
                    }
                    Err(_) => return,
                },
                (Transport::Close, _) => {
                    http1::Builder::new()
                        .keep_alive(false)
                        .serve_connection(TokioIo::new(tcp), service)
                        .await
                }
                _ => {
                    http1::Builder::new()
                        .serve_connection(TokioIo::new(tcp), service)
                        .await
                }
            };
        });
    }
}

fn acceptor(cert: &Path, key: &Path) -> Result<tokio_rustls::TlsAcceptor> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    install_crypto_provider();
    let bad = |what: &str, e: &dyn std::fmt::Display| BenchError::check(format!("{what}: {e}"));
    let certs = CertificateDer::pem_file_iter(cert)
        .map_err(|e| bad("read the certificate", &e))?
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| bad("read the certificate", &e))?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| bad("read the key", &e))?;
    let mut config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| bad("set up TLS", &e))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

struct State {
    /// The answer's SSE events, one write each.
    answer: Vec<Bytes>,
    delay: Duration,
    /// Nanoseconds per answered call.
    timings: Mutex<Vec<u64>>,
    /// Connections that carried at least one model call.
    connections: AtomicU64,
}

/// The SSE events of a scripted reply, one buffer per event.
fn render(reply: &Reply) -> Vec<Bytes> {
    let Reply::Stream(events) = reply else {
        return Vec::new();
    };
    events
        .iter()
        .filter_map(|event| match event {
            WireEvent::Data(value) => Some(Bytes::from(format!("data: {value}\n\n"))),
            WireEvent::Done => Some(Bytes::from_static(b"data: [DONE]\n\n")),
            WireEvent::Raw(raw) => Some(Bytes::from(raw.clone())),
            WireEvent::Pause(_) => None,
        })
        .collect()
}

/// The process's TLS crypto provider, as the daemon installs it (an error means one is
/// installed already, which is just as good).
fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

async fn answer(
    request: Request<Incoming>,
    state: Arc<State>,
    counted: Arc<AtomicBool>,
) -> std::result::Result<Response<Body>, Infallible> {
    let plain = |status: StatusCode, text: String| {
        let mut response = Response::new(Full::new(Bytes::from(text)).boxed());
        *response.status_mut() = status;
        response
    };
    if request.uri().path().ends_with("/timings") {
        let taken = std::mem::take(&mut *lock(&state.timings));
        let text: Vec<String> = taken.iter().map(u64::to_string).collect();
        return Ok(plain(StatusCode::OK, text.join("\n")));
    }
    if request.uri().path().ends_with("/connections") {
        let count = state.connections.load(Ordering::Relaxed);
        return Ok(plain(StatusCode::OK, count.to_string()));
    }
    if !counted.swap(true, Ordering::Relaxed) {
        state.connections.fetch_add(1, Ordering::Relaxed);
    }
    let authorized = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        == Some(&format!("Bearer {MODEL_KEY}"));
    // The whole request is read before the model's time starts, as a server must.
    let body = request.into_body().collect().await;
    let received = Instant::now();
    if !authorized || body.is_err() {
        return Ok(plain(StatusCode::UNAUTHORIZED, "no".to_owned()));
    }
    let events = Events {
        state: state.clone(),
        next: 0,
        sleep: (!state.delay.is_zero()).then(|| Box::pin(tokio::time::sleep(state.delay))),
        received,
    };
    let mut response = Response::new(StreamBody::new(events).boxed());
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/event-stream"),
    );
    Ok(response)
}

/// An answer's events: the first after the delay, then one per poll; the call's time is
/// recorded when the last one has been taken.
struct Events {
    state: Arc<State>,
    next: usize,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    received: Instant,
}

impl Stream for Events {
    type Item = std::result::Result<Frame<Bytes>, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if let Some(sleep) = self.sleep.as_mut() {
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.sleep = None;
        }
        let Some(event) = self.state.answer.get(self.next).cloned() else {
            return Poll::Ready(None);
        };
        self.next += 1;
        if self.next == self.state.answer.len() {
            let nanos = u64::try_from(self.received.elapsed().as_nanos()).unwrap_or(u64::MAX);
            lock(&self.state.timings).push(nanos);
        }
        Poll::Ready(Some(Ok(Frame::data(event))))
    }
}
