//! TLS for the gRPC port: rustls (ring) through tonic. The certificate chain and key are
//! read from PEM files by the server at startup and never logged.

use tonic::transport::{Identity, ServerTlsConfig};

/// A certificate chain and its private key, PEM-encoded.
#[derive(Clone)]
pub struct TlsIdentity {
    cert_pem: Vec<u8>,
    key_pem: Vec<u8>,
}

impl TlsIdentity {
    pub fn new(cert_pem: Vec<u8>, key_pem: Vec<u8>) -> Self {
        Self { cert_pem, key_pem }
    }

    pub(super) fn server_config(&self) -> ServerTlsConfig {
        install_crypto_provider();
        ServerTlsConfig::new().identity(Identity::from_pem(&self.cert_pem, &self.key_pem))
    }
}

/// The key stays out of debug output.
impl std::fmt::Debug for TlsIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsIdentity")
            .field("cert_pem", &format_args!("{} bytes", self.cert_pem.len()))
            .field("key_pem", &format_args!("[REDACTED]"))
            .finish()
    }
}

/// Builds the TLS acceptor once, so a certificate or key rustls refuses (not PEM, a key
/// that does not match) stops the server at startup with the reason.
pub fn check_tls(identity: &TlsIdentity) -> Result<(), String> {
    tonic::transport::Server::builder()
        .tls_config(identity.server_config())
        .map(drop)
        .map_err(|e| error_chain(&e))
}

/// rustls needs one process-wide crypto provider; ring, as for the providers' HTTPS,
/// unless the embedding program installed its own first.
fn install_crypto_provider() {
    // An error means a provider is already installed, which is just as good.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// tonic's transport errors say little at the top; the reason is in the source chain.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
