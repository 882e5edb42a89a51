//! gRPC-Web on the main port, spoken by a plain HTTP/1.1 client as a browser would, and
//! CORS limited to the configured origins.

use odyssey_api::v1 as pb;
use prost::Message;
use reqwest::StatusCode;

use crate::support::TestServer;

const TOKEN: &str = "grpc-web-test-token";
const ALLOWED: &str = "http://app.allowed.test";

async fn server() -> TestServer {
    TestServer::start_with(|args| {
        args.auth_token = Some(TOKEN.into());
        args.cors_origins = vec![ALLOWED.to_owned()];
    })
    .await
}

fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// One gRPC-Web message frame: flag 0, big-endian length, the message.
pub(crate) fn frame(message: &impl Message) -> Vec<u8> {
    let body = message.encode_to_vec();
    let mut framed = vec![0u8];
    framed.extend_from_slice(&(body.len() as u32).to_be_bytes());
    framed.extend_from_slice(&body);
    framed
}

/// Splits a gRPC-Web response body into its data messages and its trailer block.
pub(crate) fn unframe(mut body: &[u8]) -> (Vec<Vec<u8>>, String) {
    let mut messages = Vec::new();
    let mut trailers = String::new();
    while body.len() >= 5 {
        let flag = body[0];
        let len = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
        let payload = &body[5..5 + len];
        if flag & 0x80 != 0 {
            trailers.push_str(&String::from_utf8_lossy(payload));
        } else {
            messages.push(payload.to_vec());
        }
        body = &body[5 + len..];
    }
    assert!(body.is_empty(), "a truncated frame");
    (messages, trailers)
}

pub(crate) fn grpc_status(
    response_headers: &reqwest::header::HeaderMap,
    trailers: &str,
) -> Option<String> {
    if let Some(status) = response_headers.get("grpc-status") {
        return status.to_str().ok().map(str::to_owned);
    }
    trailers
        .lines()
        .find_map(|l| l.trim().strip_prefix("grpc-status:"))
        .map(|s| s.trim().to_owned())
}

async fn call(
    server: &TestServer,
    path: &str,
    request: &impl Message,
    token: Option<&str>,
    origin: Option<&str>,
) -> (reqwest::header::HeaderMap, Vec<Vec<u8>>, String) {
    let mut builder = http_client()
        .post(format!("{}{path}", server.handle.url()))
        .header("content-type", "application/grpc-web+proto")
        .header("x-grpc-web", "1")
        .body(frame(request));
    if let Some(token) = token {
        builder = builder.header("authorization", format!("Bearer {token}"));
    }
    if let Some(origin) = origin {
        builder = builder.header("origin", origin);
    }
    let response = builder.send().await.expect("gRPC-Web answers");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.version(), reqwest::Version::HTTP_11);
    let headers = response.headers().clone();
    let body = response.bytes().await.expect("body");
    let (messages, trailers) = unframe(&body);
    (headers, messages, trailers)
}

#[tokio::test]
async fn grpc_web_calls_work_over_http1_behind_the_token() {
    let server = server().await;
    let path = "/odyssey.v1.ServerService/GetServerInfo";

    let (headers, messages, trailers) = call(
        &server,
        path,
        &pb::GetServerInfoRequest {},
        Some(TOKEN),
        None,
    )
    .await;
    assert_eq!(
        grpc_status(&headers, &trailers).as_deref(),
        Some("0"),
        "{trailers}"
    );
    assert!(
        headers
            .get("content-type")
            .is_some_and(|v| v.to_str().unwrap_or("").starts_with("application/grpc-web")),
        "{headers:?}"
    );
    assert_eq!(messages.len(), 1);
    let info = pb::GetServerInfoResponse::decode(messages[0].as_slice()).expect("decodes");
    assert_eq!(info.version, env!("CARGO_PKG_VERSION"));

    let (headers, messages, trailers) =
        call(&server, path, &pb::GetServerInfoRequest {}, None, None).await;
    assert!(messages.is_empty());
    assert_eq!(
        grpc_status(&headers, &trailers).as_deref(),
        Some("16"),
        "UNAUTHENTICATED"
    );

    // Errors keep their code: an unknown session is NOT_FOUND (5).
    let (headers, _, trailers) = call(
        &server,
        "/odyssey.v1.SessionService/GetSession",
        &pb::GetSessionRequest {
            session_id: uuid::Uuid::new_v4().to_string(),
        },
        Some(TOKEN),
        None,
    )
    .await;
    assert_eq!(grpc_status(&headers, &trailers).as_deref(), Some("5"));
}

#[tokio::test]
async fn cors_allows_only_the_configured_origins() {
    let server = server().await;
    let path = "/odyssey.v1.ServerService/GetServerInfo";
    let preflight = |origin: &'static str| {
        http_client()
            .request(
                reqwest::Method::OPTIONS,
                format!("{}{path}", server.handle.url()),
            )
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header(
                "access-control-request-headers",
                "authorization,content-type,x-grpc-web",
            )
            .send()
    };

    let allowed = preflight(ALLOWED).await.expect("preflight answers");
    assert!(allowed.status().is_success(), "{}", allowed.status());
    let headers = allowed.headers();
    assert_eq!(headers["access-control-allow-origin"], ALLOWED);
    let allowed_headers = headers["access-control-allow-headers"]
        .to_str()
        .expect("ascii")
        .to_ascii_lowercase();
    for needed in ["authorization", "content-type", "x-grpc-web"] {
        assert!(allowed_headers.contains(needed), "{allowed_headers}");
    }

    let other = preflight("http://elsewhere.test")
        .await
        .expect("preflight answers");
    assert!(other.headers().get("access-control-allow-origin").is_none());

    // The real call from the allowed origin can read the gRPC status.
    let (headers, messages, trailers) = call(
        &server,
        path,
        &pb::GetServerInfoRequest {},
        Some(TOKEN),
        Some(ALLOWED),
    )
    .await;
    assert_eq!(headers["access-control-allow-origin"], ALLOWED);
    assert!(
        headers["access-control-expose-headers"]
            .to_str()
            .expect("ascii")
            .contains("grpc-status")
    );
    assert_eq!(messages.len(), 1);
    assert_eq!(grpc_status(&headers, &trailers).as_deref(), Some("0"));
}

#[tokio::test]
async fn no_origin_is_allowed_by_default() {
    let server = TestServer::start().await;
    let response = http_client()
        .request(
            reqwest::Method::OPTIONS,
            format!(
                "{}/odyssey.v1.ServerService/GetServerInfo",
                server.handle.url()
            ),
        )
        .header("origin", ALLOWED)
        .header("access-control-request-method", "POST")
        .send()
        .await
        .expect("preflight answers");
    assert!(
        response
            .headers()
            .get("access-control-allow-origin")
            .is_none()
    );
}
