//! The Rust SDK against a real server: error details decoded, deadlines on calls, reads
//! tried again across a restart, server info.

use std::time::Duration;

use odyssey_api::v1 as pb;
use odyssey_api::v1::execution_service_client::ExecutionServiceClient;
use odyssey_client::{ConnectOptions, OdysseyClient};
use tonic::Code;

use crate::support::{Project, TestServer};

const BASH_CALL: &str = r#"{"tool_calls": [{"id": "call_b", "name": "Bash", "arguments": {"command": "echo approved > proof.txt"}}]}"#;

async fn client(server: &TestServer) -> OdysseyClient {
    OdysseyClient::connect_with(server.handle.url(), ConnectOptions::new())
        .await
        .expect("connect")
}

#[tokio::test]
async fn errors_carry_their_reason_fields_and_domain() {
    let server = TestServer::start().await;
    let client = client(&server).await;
    let missing = client
        .get_session("0190a4c1-0000-7000-8000-000000000000")
        .await
        .expect_err("no such session");
    assert_eq!(missing.code(), Some(Code::NotFound));
    assert_eq!(missing.reason().as_deref(), Some("SESSION_NOT_FOUND"));
    assert_eq!(missing.details().expect("details").domain, "odyssey.ai");

    let session = server
        .session_on(&Project::replay("sdk", &[r#"{"text": "hi"}"#]))
        .await;
    let empty = client
        .submit(&session.id, "  ", pb::TurnOverrides::default())
        .await
        .expect_err("empty prompt");
    assert_eq!(empty.code(), Some(Code::InvalidArgument));
    let details = empty.details().expect("details");
    assert_eq!(
        details
            .field_violations
            .iter()
            .map(|v| v.field.as_str())
            .collect::<Vec<_>>(),
        ["input.prompt"],
        "{details:?}"
    );
    assert!(!details.field_violations[0].description.is_empty());
}

#[tokio::test]
async fn a_deadline_ends_a_call_that_waits_too_long() {
    let server = TestServer::start().await;
    let project = Project::with_tools(
        "sdk-wait",
        &[BASH_CALL, r#"{"text": "done"}"#],
        &["Bash", "Read"],
        "[Read]",
        "[Bash]",
        "[]",
    );
    let session = server.session_on(&project).await;
    let client = client(&server).await;
    // Run waits for the turn, which waits for a human: only the deadline ends the call.
    let started = std::time::Instant::now();
    let expired = client
        .with_deadline(Duration::from_millis(300))
        .run(&session.id, "go", pb::TurnOverrides::default())
        .await
        .expect_err("the turn waits for an approval");
    assert_eq!(expired.code(), Some(Code::DeadlineExceeded), "{expired:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    // The client without a deadline is unchanged.
    assert!(client.server_info().await.is_ok());
}

#[tokio::test]
async fn server_info_names_the_store_files_with_no_replica() {
    let server = TestServer::start().await;
    let info = client(&server)
        .await
        .server_info()
        .await
        .expect("server info");
    let store = info.store.expect("the store is named");
    assert_eq!(store.kind, "files");
    assert!(
        store.replica_id.is_empty() && store.replicas.is_empty(),
        "{store:?}"
    );
}

#[tokio::test]
async fn a_read_is_tried_again_across_a_restart() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("free port")
        .local_addr()
        .expect("addr");
    let server = TestServer::start_with(|args| args.listen = Some(port)).await;
    let client = client(&server).await;
    let before = client.server_info().await.expect("server info");
    let stopped = server.stop().await;
    let restart = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        stopped.start_again().await
    });
    // The first attempts find nothing listening; a later one reaches the new server.
    let after = client
        .server_info()
        .await
        .expect("answered after the restart");
    assert_eq!(after.version, before.version);
    let server = restart.await.expect("restarted");
    drop(server);
}

#[tokio::test]
async fn a_subscription_resumes_across_a_restart_counted_once_with_no_event_lost() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("free port")
        .local_addr()
        .expect("addr");
    let server = TestServer::start_with(|args| args.listen = Some(port)).await;
    let session = server
        .session_on(&Project::replay(
            "sdk-resume",
            &[r#"{"text": "one"}"#, r#"{"text": "two"}"#],
        ))
        .await;
    let client = client(&server).await;
    let first = client
        .run(&session.id, "first", pb::TurnOverrides::default())
        .await
        .expect("first turn");
    assert_eq!(first.response, "one");
    let mut events = client.subscribe(&session.id, 0).await.expect("subscribe");
    let mut seen = Vec::new();
    while let Some(event) = events.next().await.expect("event") {
        seen.push(event.sequence);
        if event.sequence == server.get_session(&session.id).await.last_sequence {
            break;
        }
    }
    let server = server.restart().await;
    let second = server.run(&session.id, "second").await;
    let last = server.get_session(&session.id).await.last_sequence;
    while let Some(event) = events.next().await.expect("event after the restart") {
        seen.push(event.sequence);
        if event.sequence == last {
            break;
        }
    }
    assert_eq!(
        seen,
        (1..=last).collect::<Vec<u64>>(),
        "every event once, in order"
    );
    assert_eq!(events.reconnects(), 1, "one resubscription");
    assert_ne!(first.execution_id, second.execution_id);
}

/// A call past the deadline its client sent (`grpc-timeout`) is DEADLINE_EXCEEDED, as gRPC
/// names it, whoever notices first: here only the server keeps the deadline.
#[tokio::test]
async fn the_server_answers_a_passed_deadline_with_deadline_exceeded() {
    let server = TestServer::start().await;
    let project = Project::with_tools(
        "sdk-deadline",
        &[BASH_CALL, r#"{"text": "done"}"#],
        &["Bash", "Read"],
        "[Read]",
        "[Bash]",
        "[]",
    );
    let session = server.session_on(&project).await;
    let mut request = tonic::Request::new(pb::RunRequest {
        input: Some(crate::support::turn(&session.id, "go")),
    });
    request
        .metadata_mut()
        .insert("grpc-timeout", "300m".parse().expect("header"));
    // A bare HTTP/2 connection: tonic's own channel would keep the deadline too (and call
    // it CANCELLED), racing the server's answer.
    let status = ExecutionServiceClient::with_origin(bare_http2(&server).await, origin(&server))
        .run(request)
        .await
        .expect_err("the turn waits for an approval");
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
}

fn origin(server: &TestServer) -> http::Uri {
    server.handle.url().parse().expect("server url")
}

/// A gRPC transport with no timer: an HTTP/2 connection to the server and nothing else.
async fn bare_http2(
    server: &TestServer,
) -> impl tonic::client::GrpcService<
    tonic::body::Body,
    ResponseBody = hyper::body::Incoming,
    Error = hyper::Error,
    Future = impl Send,
> + Clone {
    let uri = origin(server);
    let address = format!(
        "{}:{}",
        uri.host().expect("host"),
        uri.port_u16().expect("port")
    );
    let stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("connect");
    let (sender, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(stream),
    )
    .await
    .expect("HTTP/2 handshake");
    tokio::spawn(connection);
    tower::service_fn(move |request: http::Request<tonic::body::Body>| {
        let mut sender = sender.clone();
        async move { sender.send_request(request).await }
    })
}

/// An MCP server's request for input (`bundles/mcp-input`: `trip.py` asks during its tool
/// call) through the SDK: listed as kind INPUT with its message and schema, a bad answer
/// refused naming the field, a good one reaching the server.
#[tokio::test]
async fn the_sdk_answers_a_servers_request_for_input() {
    let server = TestServer::start().await;
    let client = client(&server).await;
    let bundle = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../bundles/mcp-input");
    let archive = odyssey_client::pack_project(&bundle).expect("pack");
    client
        .build_bundle(archive, "", false)
        .await
        .expect("install");
    let session = client
        .create_session("mcp-input", Default::default())
        .await
        .expect("session");
    let execution = client
        .submit(&session.id, "Plan a trip", pb::TurnOverrides::default())
        .await
        .expect("submit")
        .execution_id;
    let mut asked = None;
    for _ in 0..400 {
        asked = client
            .list_approvals(Some(&session.id))
            .await
            .expect("list")
            .into_iter()
            .next();
        if asked.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let asked = asked.expect("the server asks");
    assert_eq!(asked.kind, pb::ApprovalKind::Input as i32);
    assert_eq!(asked.message, "Where to, and for how long?");

    let answer = |city: &str, days: f64| prost_types::Struct {
        fields: [
            ("city".to_owned(), prost_types::Value::from(city.to_owned())),
            ("days".to_owned(), prost_types::Value::from(days)),
        ]
        .into(),
    };
    let refused = client
        .resolve_input(
            &asked.request_id,
            pb::HumanInputAction::Accept,
            Some(answer("Rome", 2.5)),
        )
        .await
        .expect_err("not an integer");
    assert_eq!(refused.code(), Some(Code::InvalidArgument));
    let fields: Vec<String> = refused
        .details()
        .expect("details")
        .field_violations
        .iter()
        .map(|v| v.field.clone())
        .collect();
    assert_eq!(fields, ["answer.days"]);
    client
        .resolve_input(
            &asked.request_id,
            pb::HumanInputAction::Accept,
            Some(answer("Rome", 3.0)),
        )
        .await
        .expect("answered");
    server
        .wait_for_state(&execution, pb::ExecutionState::Completed)
        .await;
    let status = server.status(&execution).await;
    let events = server.events(&session.id, 0, status.last_sequence).await;
    let result = events
        .iter()
        .find_map(|e| match &e.payload {
            Some(pb::session_event::Payload::ToolCallFinished(f)) => Some(f.result.clone()),
            _ => None,
        })
        .expect("the call finished");
    assert_eq!(result, "trip to Rome for 3 days");
}
