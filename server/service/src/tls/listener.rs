//! TLS connections of a TCP listener, handshaken concurrently: one slow or silent client
//! never holds up the others, and a handshake that does not finish in time is dropped.
//! Served to tonic as a stream of connections and to axum as a `Listener`.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// How long a client may take to finish the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Handshaken connections waiting for the server to take them.
const READY_CONNECTIONS: usize = 64;
/// The pause after an accept error that is not the client's (out of file descriptors):
/// retrying at once would spin.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(500);

/// Accepts TCP connections and hands out those whose TLS handshake succeeded.
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    /// `None` if the socket could not say (it is bound, so in practice never).
    local_addr: Option<SocketAddr>,
}

impl TlsListener {
    /// Starts accepting on `listener`. Accepting stops when this is dropped.
    pub fn new(listener: TcpListener, acceptor: TlsAcceptor) -> Self {
        let local_addr = listener.local_addr().ok();
        let (sender, ready) = mpsc::channel(READY_CONNECTIONS);
        tokio::spawn(accept_loop(listener, acceptor, sender));
        Self { ready, local_addr }
    }

    /// The connections as a stream, for `tonic`'s `serve_with_incoming*`.
    pub fn into_stream(
        self,
    ) -> impl futures::Stream<Item = std::io::Result<TlsStream<TcpStream>>> + Send + 'static {
        futures::stream::unfold(self.ready, |mut ready| async move {
            let (stream, _) = ready.recv().await?;
            Some((Ok(stream), ready))
        })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(connection) => connection,
            // The accept loop only ends once this listener is gone, so this is never
            // reached; waiting forever is what a listener with no more clients does.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.local_addr
            .ok_or_else(|| std::io::Error::other("the listener's address is unknown"))
    }
}

async fn accept_loop(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    ready: mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
) {
    loop {
        let accepted = tokio::select! {
            () = ready.closed() => return,
            accepted = listener.accept() => accepted,
        };
        let (tcp, peer) = match accepted {
            Ok(connection) => connection,
            Err(error) if is_connection_error(&error) => continue,
            Err(error) => {
                tracing::warn!(%error, "accepting a connection failed");
                tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                continue;
            }
        };
        // Event streams are many small frames; Nagle's delay would hold each one back.
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let ready = ready.clone();
        tokio::spawn(async move {
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(stream)) => {
                    // Fails only when the server has stopped; the connection just closes.
                    let _ = ready.send((stream, peer)).await;
                }
                Ok(Err(error)) => tracing::debug!(%peer, %error, "TLS handshake failed"),
                Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
            }
        });
    }
}

/// Errors of one connection, not of the listener: the next accept is fine.
fn is_connection_error(error: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    matches!(
        error.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset
    )
}
