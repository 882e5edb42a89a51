//! gRPC-Web and the HTTP gateway on a server that serves TLS. The gRPC port offers
//! `http/1.1` in ALPN beside `h2`, so a client that speaks only HTTP/1.1 (a gRPC-Web
//! library on such a stack) completes the handshake; the gateway serves HTTPS with the
//! same certificate, and plain HTTP is not answered there.

use std::time::Duration;

use eventsource_stream::Eventsource;
use futures::StreamExt;
use odyssey_api::v1 as pb;
use odyssey_runtime::{ExecutionRequest, SessionSpec};
use odyssey_server::config::ServeArgs;
use odyssey_server::serve::{self, ServerHandle};
use prost::Message;
use reqwest::StatusCode;

use crate::config::tls::{Pki, pki, write};
use crate::grpc_web::{frame, grpc_status, unframe};
use crate::support::{Project, loopback};

const TOKEN: &str = "tls-web-test-token";

async fn tls_server(dir: &std::path::Path, pki: &Pki) -> ServerHandle {
    let mut args = ServeArgs::new(loopback(), dir.join("home"));
    args.tls_cert = Some(write(dir, "cert.pem", &pki.cert));
    args.tls_key = Some(write(dir, "key.pem", &pki.key));
    args.auth_token = Some(TOKEN.into());
    args.http_listen = Some(loopback());
    args.heartbeat_seconds = Some(1);
    args.shutdown_grace_seconds = Some(1);
    serve::start(&args).await.expect("TLS server starts")
}

/// An HTTP/1.1-only client (its ALPN offers `http/1.1` alone) trusting `ca`.
fn http1_client(ca: &str) -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let ca = reqwest::Certificate::from_pem(ca.as_bytes()).expect("CA PEM");
    reqwest::Client::builder()
        .http1_only()
        .tls_certs_only([ca])
        .build()
        .expect("client")
}

#[tokio::test]
async fn grpc_web_over_http1_and_the_gateway_over_https() {
    let dir = tempfile::tempdir().expect("dir");
    let ours = pki("odyssey");
    let server = tls_server(dir.path(), &ours).await;
    let client = http1_client(&ours.ca);

    // gRPC-Web on the gRPC port, over TLS with ALPN http/1.1.
    let response = client
        .post(format!(
            "{}/odyssey.v1.ServerService/GetServerInfo",
            server.url()
        ))
        .header("content-type", "application/grpc-web+proto")
        .header("x-grpc-web", "1")
        .bearer_auth(TOKEN)
        .body(frame(&pb::GetServerInfoRequest {}))
        .send()
        .await
        .expect("gRPC-Web over HTTPS/1.1 answers");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.version(), reqwest::Version::HTTP_11);
    let headers = response.headers().clone();
    let (messages, trailers) = unframe(&response.bytes().await.expect("body"));
    assert_eq!(
        grpc_status(&headers, &trailers).as_deref(),
        Some("0"),
        "{trailers}"
    );
    let info = pb::GetServerInfoResponse::decode(messages[0].as_slice()).expect("decodes");
    assert_eq!(info.version, env!("CARGO_PKG_VERSION"));

    // A client that does not trust the CA is refused in the handshake.
    let stranger = http1_client(&pki("stranger").ca);
    let refused = stranger
        .post(format!(
            "{}/odyssey.v1.ServerService/GetServerInfo",
            server.url()
        ))
        .send()
        .await
        .expect_err("an unknown CA is refused");
    assert!(refused.is_connect(), "{refused:?}");

    // The gateway: a session's events as server-sent events, over HTTPS.
    let gateway = server.http_url().expect("the gateway runs");
    assert!(gateway.starts_with("https://127.0.0.1:"), "{gateway}");
    let session_id = finished_turn(&server).await;
    let response = client
        .get(format!("{gateway}/sessions/{session_id}/events"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("GET events over HTTPS");
    assert_eq!(response.status(), StatusCode::OK);
    let mut events = response.bytes_stream().eventsource();
    let mut kinds = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(event) = events.next().await {
            let event = event.expect("a well-formed SSE stream");
            assert_eq!(event.id, (kinds.len() + 1).to_string());
            kinds.push(event.event);
            if kinds.last().map(String::as_str) == Some("turn_completed") {
                return;
            }
        }
        panic!("the stream ended early after {kinds:?}");
    })
    .await
    .expect("the turn's events arrive within 30 s");
    assert_eq!(kinds.first().map(String::as_str), Some("turn_started"));

    // Without the token the gateway still refuses, over TLS as without.
    let anonymous = client
        .get(format!("{gateway}/sessions/{session_id}/events"))
        .send()
        .await
        .expect("answers");
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);

    // Plain HTTP is not served on the gateway's port.
    let plain = format!("http://{}", server.http_addr().expect("gateway address"));
    let plaintext = reqwest::Client::new()
        .get(format!("{plain}/sessions/{session_id}/events"))
        .bearer_auth(TOKEN)
        .send()
        .await;
    assert!(plaintext.is_err(), "{plaintext:?}");

    server.shutdown().await.expect("clean shutdown");
}

/// Runs a one-answer turn through the core and returns its session id.
async fn finished_turn(server: &ServerHandle) -> String {
    let project = Project::replay("tlsweb", &[r#"{"text": "Over TLS."}"#]);
    let runtime = server.runtime();
    let bundle = runtime
        .build_and_install(project.path(), Default::default())
        .await
        .expect("bundle installs");
    let session = runtime
        .create_session(SessionSpec::new(bundle.id.to_string()))
        .await
        .expect("session");
    runtime
        .submit(ExecutionRequest {
            session_id: session.record.id,
            prompt: "hello".into(),
            ..Default::default()
        })
        .await
        .expect("submitted");
    session.record.id.to_string()
}

#[tokio::test]
async fn the_consoles_login_cookie_is_secure_and_host_bound_under_tls() {
    let dir = tempfile::tempdir().expect("dir");
    let ours = pki("odyssey");
    let mut args = ServeArgs::new(loopback(), dir.path().join("home"));
    args.tls_cert = Some(write(dir.path(), "cert.pem", &ours.cert));
    args.tls_key = Some(write(dir.path(), "key.pem", &ours.key));
    args.auth_token = Some(TOKEN.into());
    args.http_listen = Some(loopback());
    args.console = true;
    let server = serve::start(&args).await.expect("TLS server starts");
    let client = http1_client(&ours.ca);
    let gateway = server.http_url().expect("the gateway runs");

    let login = client
        .post(format!("{gateway}/console/login"))
        .header("origin", &gateway)
        .json(&serde_json::json!({ "token": TOKEN }))
        .send()
        .await
        .expect("login answers");
    assert_eq!(login.status(), StatusCode::NO_CONTENT);
    let set = login.headers()["set-cookie"]
        .to_str()
        .expect("ASCII")
        .to_owned();
    assert!(set.starts_with("__Host-odyssey_console="), "{set}");
    for attribute in ["; Secure", "; HttpOnly", "; SameSite=Strict", "; Path=/"] {
        assert!(set.contains(attribute), "{set}");
    }
    let cookie = set.split(';').next().unwrap_or_default().to_owned();

    // The page's own origin is the https one: the plain-http spelling is another origin.
    let call = |origin: String| {
        client
            .post(format!("{gateway}/odyssey.v1.ServerService/GetServerInfo"))
            .header("content-type", "application/grpc-web+proto")
            .header("x-grpc-web", "1")
            .header("cookie", &cookie)
            .header("origin", origin)
            .body(frame(&pb::GetServerInfoRequest {}))
            .send()
    };
    for (origin, expected) in [
        (gateway.clone(), "0"),
        (gateway.replace("https://", "http://"), "16"),
    ] {
        let response = call(origin.clone()).await.expect("gRPC-Web answers");
        let headers = response.headers().clone();
        let (_, trailers) = unframe(&response.bytes().await.expect("body"));
        assert_eq!(
            grpc_status(&headers, &trailers).as_deref(),
            Some(expected),
            "{origin}"
        );
    }
    server.shutdown().await.expect("clean shutdown");
}
