//! TLS for the server's ports (rustls with ring). The certificate chain and key are read
//! from PEM files at startup, checked then, and never logged.
//!
//! The server runs its own acceptor rather than tonic's, because tonic's offers only `h2`
//! in ALPN: a client that offers only `http/1.1` (a gRPC-Web library on an HTTP/1.1 stack,
//! `curl --http1.1`, an `EventSource` on the gateway) would be refused in the handshake.

mod listener;

use std::sync::Arc;

use rustls::ServerConfig;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

pub use listener::TlsListener;

/// What the gRPC port offers, preferred first: gRPC needs `h2` (and browsers pick it);
/// gRPC-Web also works over HTTP/1.1.
pub const GRPC_ALPN: &[&[u8]] = &[b"h2", b"http/1.1"];
/// The HTTP gateway speaks HTTP/1.1 only.
pub const GATEWAY_ALPN: &[&[u8]] = &[b"http/1.1"];

/// Why a certificate chain and key cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("the certificate file is not PEM: {0}")]
    CertificatePem(#[source] pem::Error),
    #[error("the certificate file holds no certificate (-----BEGIN CERTIFICATE-----)")]
    NoCertificate,
    #[error("the key file holds no private key: {0}")]
    KeyPem(#[source] pem::Error),
    #[error("the TLS library refuses them: {0}")]
    Refused(#[source] rustls::Error),
}

/// A certificate chain and its private key, checked: the TLS library accepted them.
#[derive(Clone)]
pub struct TlsIdentity {
    /// Without ALPN; each port adds its own.
    config: Arc<ServerConfig>,
    /// The DNS names of the leaf certificate (`*.example.com` included), lower case.
    names: Arc<[String]>,
}

impl TlsIdentity {
    /// Parses a PEM certificate chain (leaf first) and its private key (PKCS#8, PKCS#1 or
    /// SEC1), and checks that they can be served.
    pub fn from_pem(cert_pem: &[u8], key_pem: &[u8]) -> Result<Self, TlsError> {
        let chain = CertificateDer::pem_slice_iter(cert_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(TlsError::CertificatePem)?;
        if chain.is_empty() {
            return Err(TlsError::NoCertificate);
        }
        let names = dns_names(&chain[0]);
        let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(TlsError::KeyPem)?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(TlsError::Refused)?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(TlsError::Refused)?;
        Ok(Self {
            config: Arc::new(config),
            names,
        })
    }

    /// The DNS names the certificate is for: clients that reach the server by one of them
    /// send it as the request's host, so the host check allows them.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// An acceptor for this identity that offers `alpn`, preferred first.
    pub fn acceptor(&self, alpn: &[&[u8]]) -> TlsAcceptor {
        let mut config = ServerConfig::clone(&self.config);
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        TlsAcceptor::from(Arc::new(config))
    }
}

/// The subject alternative DNS names of a certificate (none when it does not parse, which
/// the TLS library then reports on its own).
fn dns_names(leaf: &CertificateDer<'_>) -> Arc<[String]> {
    webpki::EndEntityCert::try_from(leaf)
        .map(|cert| {
            cert.valid_dns_names()
                .map(str::to_ascii_lowercase)
                .collect::<Vec<_>>()
        })
        .unwrap_or_default()
        .into()
}

/// The key stays out of debug output.
impl std::fmt::Debug for TlsIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsIdentity").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pki() -> (String, String) {
        let key = rcgen::KeyPair::generate().expect("key");
        let params = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).expect("params");
        let cert = params.self_signed(&key).expect("certificate");
        (cert.pem(), key.serialize_pem())
    }

    #[test]
    fn a_certificate_and_its_key_are_accepted() {
        let (cert, key) = pki();
        TlsIdentity::from_pem(cert.as_bytes(), key.as_bytes()).expect("served");
    }

    #[test]
    fn the_certificate_names_are_known() {
        let key = rcgen::KeyPair::generate().expect("key");
        let names = vec!["Odyssey.Example".to_owned(), "*.odyssey.test".to_owned()];
        let params = rcgen::CertificateParams::new(names).expect("params");
        let cert = params.self_signed(&key).expect("certificate");
        let identity = TlsIdentity::from_pem(cert.pem().as_bytes(), key.serialize_pem().as_bytes())
            .expect("served");
        assert_eq!(identity.names(), ["odyssey.example", "*.odyssey.test"]);
    }

    #[test]
    fn what_cannot_be_served_is_named() {
        let (cert, key) = pki();
        let (_, other_key) = pki();
        let cases: [(&str, &str, &str); 4] = [
            ("not a certificate", &key, "no certificate"),
            (&cert, "not a key", "no private key"),
            (&key, &key, "no certificate"),
            (&cert, &other_key, "refuses"),
        ];
        for (cert, key, expected) in cases {
            let error = TlsIdentity::from_pem(cert.as_bytes(), key.as_bytes())
                .expect_err(expected)
                .to_string();
            assert!(error.contains(expected), "{error}");
        }
    }
}
