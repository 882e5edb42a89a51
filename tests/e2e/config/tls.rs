//! TLS on the gRPC port: a CA and a server certificate made here (rcgen), the real server
//! serving them on 127.0.0.1:0. A client that verifies against the CA works; one that
//! trusts another CA, or only the system's roots, is refused; a plaintext client fails;
//! the CLI works with `--tls-ca` and fails without it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use odyssey_api::v1 as pb;
use odyssey_client::{ConnectOptions, OdysseyClient};
use odyssey_server::config::ServeArgs;
use odyssey_server::serve::{self, ServerHandle};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};

use crate::support::loopback;

/// A CA and a server certificate it signed, as PEM.
pub(crate) struct Pki {
    pub ca: String,
    pub cert: String,
    pub key: String,
}

pub(crate) fn pki(name: &str) -> Pki {
    pki_for(name, &["localhost", "127.0.0.1"])
}

/// A CA, and a certificate for `names` it signed, as PEM.
pub(crate) fn pki_for(name: &str, names: &[&str]) -> Pki {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, format!("{name} test CA"));
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().expect("CA key"))
        .expect("CA certificate");
    let key = KeyPair::generate().expect("server key");
    let names = names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
    let mut params = CertificateParams::new(names).expect("server params");
    params
        .distinguished_name
        .push(DnType::CommonName, "odysseyd");
    let cert = params.signed_by(&key, &ca).expect("server certificate");
    Pki {
        ca: ca.pem(),
        cert: cert.pem(),
        key: key.serialize_pem(),
    }
}

pub(crate) fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write PEM");
    path
}

async fn tls_server(dir: &Path, pki: &Pki) -> ServerHandle {
    let mut args = ServeArgs::new(loopback(), dir.join("home"));
    args.tls_cert = Some(write(dir, "cert.pem", &pki.cert));
    args.tls_key = Some(write(dir, "key.pem", &pki.key));
    args.shutdown_grace_seconds = Some(1);
    serve::start(&args).await.expect("TLS server starts")
}

async fn info(client: &OdysseyClient) -> Result<pb::GetServerInfoResponse, tonic::Status> {
    Ok(client
        .server()
        .get_server_info(pb::GetServerInfoRequest {})
        .await?
        .into_inner())
}

#[tokio::test]
async fn clients_that_verify_the_certificate_connect_and_others_are_refused() {
    let dir = tempfile::tempdir().expect("dir");
    let ours = pki("odyssey");
    let server = tls_server(dir.path(), &ours).await;
    let url = server.url();
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");

    let trusted = OdysseyClient::connect_with(
        url.clone(),
        ConnectOptions::new().ca_certificate_pem(ours.ca.clone()),
    )
    .await
    .expect("a client trusting the CA connects");
    let answer = info(&trusted).await.expect("RPC over TLS");
    assert!(!answer.version.is_empty());

    let stranger = pki("stranger");
    let e = OdysseyClient::connect_with(
        url.clone(),
        ConnectOptions::new().ca_certificate_pem(stranger.ca),
    )
    .await
    .expect_err("a client trusting another CA is refused");
    assert!(e.to_string().contains("certificate"), "{e}");
    assert!(
        OdysseyClient::connect(url.clone(), None).await.is_err(),
        "the system's roots do not know the test CA"
    );

    let plain = format!("http://{}", server.addr());
    let plaintext = tokio::time::timeout(Duration::from_secs(20), async {
        match OdysseyClient::connect(plain, None).await {
            Err(_) => true,
            Ok(client) => info(&client).await.is_err(),
        }
    })
    .await
    .expect("a plaintext client gives up");
    assert!(plaintext, "plaintext HTTP/2 is not served on a TLS port");

    // The CLI verifies against --tls-ca, and refuses without it.
    let ca_path = write(dir.path(), "ca.pem", &ours.ca);
    let ca = ca_path.to_string_lossy().into_owned();
    let (code, out, err) = cli(&[
        "--server", &url, "--tls-ca", &ca, "--json", "bundle", "list",
    ])
    .await;
    assert_eq!(code, 0, "{out}{err}");
    let (code, _, err) = cli(&["--server", &url, "bundle", "list"]).await;
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("certificate") && err.contains("UNAVAILABLE"),
        "{err}"
    );
    let (code, _, err) = cli(&[
        "--server",
        &format!("http://{}", server.addr()),
        "--tls-ca",
        &ca,
        "bundle",
        "list",
    ])
    .await;
    assert_eq!(code, 1);
    assert!(err.contains("not an https:// URL"), "{err}");

    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_certificate_the_tls_library_refuses_stops_the_server_at_startup() {
    let dir = tempfile::tempdir().expect("dir");
    let mut args = ServeArgs::new(loopback(), dir.path().join("home"));
    args.tls_cert = Some(write(dir.path(), "cert.pem", "not a certificate"));
    args.tls_key = Some(write(dir.path(), "key.pem", "not a key"));
    let e = serve::start(&args).await.err().expect("refused");
    let text = e.to_string();
    assert!(
        text.contains("cert.pem") && text.contains("key.pem"),
        "{text}"
    );

    args.tls_key = Some(dir.path().join("missing-key.pem"));
    let e = serve::start(&args).await.err().expect("refused");
    assert!(e.to_string().contains("missing-key.pem"), "{e}");
}

async fn cli(args: &[&str]) -> (i32, String, String) {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let args = args.iter().map(|a| a.to_string()).collect();
    let code = tokio::time::timeout(
        Duration::from_secs(60),
        odyssey_cli::run_cli(args, &mut out, &mut err),
    )
    .await
    .expect("the command finishes");
    (
        code,
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    )
}
