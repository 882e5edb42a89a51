//! A loopback HTTP server that plays a registry wanting credentials: every request gets
//! `401 Unauthorized` with a basic-auth challenge and an OCI error body, and every request's
//! `Authorization` header is recorded. Tests point a push or pull at it to prove which
//! credentials a client offers to a host (none, for a host it has none for).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// One request the probe received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbedRequest {
    pub method: String,
    pub path: String,
    pub authorization: Option<String>,
}

/// A running probe; stops when dropped.
pub struct AuthProbe {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<ProbedRequest>>>,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl AuthProbe {
    /// Listens on `127.0.0.1:0`. Needs a tokio runtime.
    pub async fn start() -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let recorder = seen.clone();
        let app = Router::new().fallback(move |method: Method, uri: Uri, headers: HeaderMap| {
            let recorder = recorder.clone();
            async move { challenge(&recorder, method, uri, headers) }
        });
        let (shutdown, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let serve = axum::serve(listener, app).with_graceful_shutdown(async {
                let _ = stopped.await;
            });
            if let Err(e) = serve.await {
                tracing::warn!(error = %e, "auth probe stopped");
            }
        });
        Ok(Self {
            addr,
            seen,
            shutdown: Some(shutdown),
            task,
        })
    }

    /// `127.0.0.1:PORT`, the host as references name it.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<ProbedRequest> {
        lock(&self.seen).clone()
    }
}

impl Drop for AuthProbe {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        self.task.abort();
    }
}

fn lock(seen: &Mutex<Vec<ProbedRequest>>) -> MutexGuard<'_, Vec<ProbedRequest>> {
    // Test state stays usable after a panicking handler; the panic is what matters.
    seen.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn challenge(
    seen: &Mutex<Vec<ProbedRequest>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    lock(seen).push(ProbedRequest {
        method: method.to_string(),
        path: uri.path().to_owned(),
        authorization: headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
    });
    (
        StatusCode::UNAUTHORIZED,
        [
            (header::WWW_AUTHENTICATE, "Basic realm=\"probe\""),
            (header::CONTENT_TYPE, "application/json"),
        ],
        r#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required","detail":null}]}"#,
    )
        .into_response()
}
