//! Issue 11 item 4, DNS rebinding: a page whose name was made to resolve to 127.0.0.1 calls
//! a tokenless loopback server with its own name in `Host`. gRPC-Web, the HTTP gateway and
//! the metrics endpoint answer such requests 421 Misdirected Request (gRPC clients read
//! PERMISSION_DENIED); IP literals, `localhost`, the certificate's names and the names the
//! operator allows are served, so plain gRPC clients, which send the address they dialled,
//! keep working.

use std::net::SocketAddr;

use odyssey_api::v1 as pb;
use odyssey_api::v1::server_service_client::ServerServiceClient;
use odyssey_server::config::ServeArgs;
use odyssey_server::serve::{self};
use prost::Message;
use reqwest::StatusCode;
use tonic::transport::Endpoint;

use crate::config::tls::{pki_for, write};
use crate::grpc_web::{frame, grpc_status, unframe};
use crate::support::{TestServer, error_reason, loopback};

const REBIND: &str = "rebind.attacker.example";

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// A gRPC-Web GetServerInfo over HTTP/1.1 naming `host`: the HTTP status, the gRPC status
/// and the answer, when there is one.
async fn grpc_web_info(
    client: &reqwest::Client,
    url: &str,
    host: Option<&str>,
) -> (
    StatusCode,
    Option<String>,
    Option<pb::GetServerInfoResponse>,
) {
    let mut request = client
        .post(format!("{url}/odyssey.v1.ServerService/GetServerInfo"))
        .header("content-type", "application/grpc-web+proto")
        .header("x-grpc-web", "1")
        .body(frame(&pb::GetServerInfoRequest {}));
    if let Some(host) = host {
        request = request.header("host", host);
    }
    let response = request.send().await.expect("an answer");
    let status = response.status();
    let headers = response.headers().clone();
    let (messages, trailers) = unframe(&response.bytes().await.expect("body"));
    let info = messages
        .first()
        .map(|m| pb::GetServerInfoResponse::decode(m.as_slice()).expect("decodes"));
    (status, grpc_status(&headers, &trailers), info)
}

#[tokio::test]
async fn grpc_web_the_gateway_and_metrics_refuse_other_hosts() {
    // No token: the loopback default the attack relies on.
    let server = TestServer::start_with(|args| {
        args.http_listen = Some(loopback());
        args.metrics_listen = Some(loopback());
    })
    .await;
    let client = client();
    let url = server.handle.url();
    let port = server.handle.addr().port();

    let (status, code, info) =
        grpc_web_info(&client, &url, Some(&format!("{REBIND}:{port}"))).await;
    assert_eq!(status, StatusCode::MISDIRECTED_REQUEST);
    assert_eq!(code.as_deref(), Some("7"), "PERMISSION_DENIED");
    assert!(info.is_none(), "no data for a rebound host");

    for host in [
        None,
        Some(format!("localhost:{port}")),
        Some(format!("[::1]:{port}")),
    ] {
        let (status, code, info) = grpc_web_info(&client, &url, host.as_deref()).await;
        assert_eq!(status, StatusCode::OK, "{host:?}");
        assert_eq!(code.as_deref(), Some("0"), "{host:?}");
        assert!(info.is_some(), "{host:?}");
    }

    // A CORS preflight from the rebound name gets nothing either.
    let preflight = client
        .request(
            reqwest::Method::OPTIONS,
            format!("{url}/odyssey.v1.ServerService/GetServerInfo"),
        )
        .header("host", REBIND)
        .header("origin", format!("http://{REBIND}"))
        .header("access-control-request-method", "POST")
        .send()
        .await
        .expect("an answer");
    assert_eq!(preflight.status(), StatusCode::MISDIRECTED_REQUEST);

    let project = crate::support::Project::replay("hosts", &[r#"{"text": ["hi"]}"#]);
    let session = server.session_on(&project).await;
    let gateway = server.handle.http_url().expect("gateway");
    let refused = client
        .get(format!("{gateway}/sessions/{}/events", session.id))
        .header("host", REBIND)
        .send()
        .await
        .expect("an answer");
    assert_eq!(refused.status(), StatusCode::MISDIRECTED_REQUEST);
    let body: serde_json::Value = refused.json().await.expect("JSON error");
    assert_eq!(body["error"]["code"], "PERMISSION_DENIED");
    assert_eq!(body["error"]["reason"], "HOST_NOT_ALLOWED");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains(REBIND) && m.contains("--allowed-host")),
        "{body}"
    );

    let metrics = server.handle.metrics_addr().expect("metrics");
    let refused = client
        .get(format!("http://{metrics}/metrics"))
        .header("host", REBIND)
        .send()
        .await
        .expect("an answer");
    assert_eq!(refused.status(), StatusCode::MISDIRECTED_REQUEST);
    let served = client
        .get(format!("http://{metrics}/metrics"))
        .header("host", format!("localhost:{}", metrics.port()))
        .send()
        .await
        .expect("an answer");
    assert_eq!(served.status(), StatusCode::OK);
}

/// A tonic channel to `addr` whose requests name `authority`.
async fn info_as(
    addr: SocketAddr,
    authority: &str,
) -> Result<pb::GetServerInfoResponse, tonic::Status> {
    let channel = Endpoint::from_shared(format!("http://{addr}"))
        .expect("endpoint")
        .origin(format!("http://{authority}").parse().expect("origin"))
        .connect()
        .await
        .expect("connect");
    ServerServiceClient::new(channel)
        .get_server_info(pb::GetServerInfoRequest {})
        .await
        .map(tonic::Response::into_inner)
}

#[tokio::test]
async fn grpc_clients_name_the_address_they_dialled_and_allowed_hosts_are_served() {
    let server = TestServer::start().await;
    // The test's own channel dialled 127.0.0.1:PORT, as tonic, grpcurl and the SDKs do.
    server
        .server()
        .get_server_info(pb::GetServerInfoRequest {})
        .await
        .expect("an IP literal is served");
    let addr = server.handle.addr();
    info_as(addr, &format!("localhost:{}", addr.port()))
        .await
        .expect("localhost is served");
    let refused = info_as(addr, &format!("{REBIND}:{}", addr.port()))
        .await
        .expect_err("a rebound name is refused");
    assert_eq!(refused.code(), tonic::Code::PermissionDenied);
    assert_eq!(error_reason(&refused).as_deref(), Some("HOST_NOT_ALLOWED"));
    assert!(refused.message().contains(REBIND), "{}", refused.message());
    // Health checks answer whatever host a probe names, as they need no token.
    let channel = Endpoint::from_shared(format!("http://{addr}"))
        .expect("endpoint")
        .origin(
            format!("http://{REBIND}:{}", addr.port())
                .parse()
                .expect("origin"),
        )
        .connect()
        .await
        .expect("connect");
    tonic_health::pb::health_client::HealthClient::new(channel)
        .check(tonic_health::pb::HealthCheckRequest::default())
        .await
        .expect("health answers any host");

    let allowing = TestServer::start_with(|args| {
        args.allowed_hosts = vec![REBIND.to_owned(), "*.odyssey.internal".to_owned()];
    })
    .await;
    let addr = allowing.handle.addr();
    for host in [REBIND, "node-1.odyssey.internal"] {
        info_as(addr, &format!("{host}:{}", addr.port()))
            .await
            .unwrap_or_else(|e| panic!("{host} is allowed: {e:?}"));
    }
    let refused = info_as(addr, &format!("a.b.odyssey.internal:{}", addr.port()))
        .await
        .expect_err("one label only");
    assert_eq!(refused.code(), tonic::Code::PermissionDenied);
}

#[tokio::test]
async fn the_names_of_the_certificate_are_served() {
    let dir = tempfile::tempdir().expect("dir");
    let pki = pki_for("hosts", &["odyssey.test"]);
    let mut args = ServeArgs::new(loopback(), dir.path().join("home"));
    args.tls_cert = Some(write(dir.path(), "cert.pem", &pki.cert));
    args.tls_key = Some(write(dir.path(), "key.pem", &pki.key));
    args.shutdown_grace_seconds = Some(1);
    let server = serve::start(&args).await.expect("TLS server starts");
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .http1_only()
        .tls_certs_only([reqwest::Certificate::from_pem(pki.ca.as_bytes()).expect("CA")])
        .resolve("odyssey.test", server.addr())
        .build()
        .expect("client");
    let url = format!("https://odyssey.test:{}", server.addr().port());
    let (status, code, info) = grpc_web_info(&client, &url, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(code.as_deref(), Some("0"));
    assert!(info.is_some());
    server.shutdown().await.expect("shutdown");
}
