//! The HTTP gateway (`--http-listen`) with a real HTTP client: a session's events as
//! server-sent events, dropped and resumed with `Last-Event-ID`, an approval answered with
//! `POST /approvals/{id}`, the bearer token, and errors as JSON with the gRPC code names.
//! Every JSON answer is an API message in its proto3 canonical JSON form: the tests read
//! its lowerCamelCase names, and parse it back with the canonical parser.

use std::time::Duration;

use eventsource_stream::{Event as SseEvent, Eventsource};
use futures::StreamExt;
use odyssey_api::json;
use odyssey_api::v1 as pb;
use odyssey_runtime::{ExecutionRequest, SessionSpec};
use reqwest::StatusCode;
use serde_json::Value;

use crate::support::{Project, TestServer, loopback};

const TOKEN: &str = "gateway-test-token";
const BASH_CALL: &str = r#"{"tool_calls": [{"id": "call_g", "name": "Bash", "arguments": {"command": "echo via the gateway"}}]}"#;

struct Gateway {
    base: String,
    http: reqwest::Client,
}

impl Gateway {
    fn new(server: &TestServer) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let addr = server.handle.http_addr().expect("the gateway runs");
        Self {
            base: format!("http://{addr}"),
            http: reqwest::Client::new(),
        }
    }

    fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.http
            .get(format!("{}{path}", self.base))
            .bearer_auth(TOKEN)
    }

    fn post(&self, path: &str) -> reqwest::RequestBuilder {
        self.http
            .post(format!("{}{path}", self.base))
            .bearer_auth(TOKEN)
    }
}

async fn server() -> TestServer {
    TestServer::start_with(|args| {
        args.auth_token = Some(TOKEN.into());
        args.http_listen = Some(loopback());
    })
    .await
}

/// Installs a bundle whose replayed model calls Bash (which must ask), opens a session and
/// submits a turn, through the core (the gRPC surface is tested elsewhere).
async fn turn_waiting_for_approval(server: &TestServer) -> (String, String) {
    let project = Project::with_tools(
        "gateway",
        &[BASH_CALL, r#"{"text": "The gateway approved it."}"#],
        &["Bash"],
        "[]",
        "[Bash]",
        "[]",
    );
    let runtime = server.handle.runtime();
    let bundle = runtime
        .build_and_install(project.path(), Default::default())
        .await
        .expect("bundle installs");
    let session = runtime
        .create_session(SessionSpec::new(bundle.id.to_string()))
        .await
        .expect("session");
    let handle = runtime
        .submit(ExecutionRequest {
            session_id: session.record.id,
            prompt: "run it".into(),
            ..Default::default()
        })
        .await
        .expect("submitted");
    (
        session.record.id.to_string(),
        handle.execution_id.to_string(),
    )
}

/// Reads SSE events until `stop` says so (bounded: 30 s).
async fn read_until(
    response: reqwest::Response,
    mut stop: impl FnMut(&SseEvent) -> bool,
) -> Vec<SseEvent> {
    let mut stream = response.bytes_stream().eventsource();
    let mut events = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(event) = stream.next().await {
            let event = event.expect("a well-formed SSE stream");
            let last = stop(&event);
            events.push(event);
            if last {
                return;
            }
        }
        panic!("the stream ended early after {events:?}");
    })
    .await
    .expect("the expected event arrives within 30 s");
    events
}

fn data(event: &SseEvent) -> Value {
    serde_json::from_str(&event.data).expect("JSON data")
}

/// The SSE message's data parsed by the canonical proto3 JSON parser: the very
/// `SubscribeSessionResponse` that SubscribeSession sends over gRPC.
fn session_event(event: &SseEvent) -> pb::SessionEvent {
    let response: pb::SubscribeSessionResponse =
        json::from_str(&event.data).expect("a SubscribeSessionResponse in canonical JSON");
    match response.item {
        Some(pb::subscribe_session_response::Item::Event(event)) => event,
        other => panic!("not an event: {other:?}"),
    }
}

#[tokio::test]
async fn events_stream_as_sse_resume_with_last_event_id_and_approvals_post() {
    let server = server().await;
    let gateway = Gateway::new(&server);
    let (session_id, execution_id) = turn_waiting_for_approval(&server).await;
    let events_path = format!("/sessions/{session_id}/events");

    let first = gateway.get(&events_path).send().await.expect("GET events");
    assert_eq!(first.status(), StatusCode::OK);
    assert_eq!(first.headers()["content-type"], "text/event-stream");
    // Stop at the approval request, and drop the connection there.
    let mut seen = read_until(first, |e| e.event == "permission_requested").await;
    let request = data(&seen[seen.len() - 1]);
    // The proto's names, as grpcurl prints them.
    let asked = &request["event"]["permissionRequested"];
    let request_id = asked["requestId"].as_str().expect("request id").to_owned();
    assert_eq!(asked["tool"], "Bash");
    assert_eq!(asked["arguments"]["command"], "echo via the gateway");
    // Issue 23: the display form a web page shows, beside the raw arguments.
    let display = asked["display"].as_str().expect("display form").to_owned();
    assert_eq!(Some(display.as_str()), asked["summary"].as_str());
    let Some(pb::session_event::Payload::PermissionRequested(parsed)) =
        session_event(&seen[seen.len() - 1]).payload
    else {
        panic!("a permission request: {request}");
    };
    assert_eq!(parsed.request_id, request_id);

    // `GET /approvals` lists it as ListApprovals does.
    let pending = gateway
        .get(&format!("/approvals?session_id={session_id}"))
        .send()
        .await
        .expect("GET approvals");
    assert_eq!(pending.status(), StatusCode::OK);
    let pending: pb::ListApprovalsResponse =
        json::from_str(&pending.text().await.expect("body")).expect("a ListApprovalsResponse");
    assert_eq!(pending.approvals.len(), 1, "{pending:?}");
    assert_eq!(pending.approvals[0].request_id, request_id);
    assert_eq!(pending.approvals[0].session_id, session_id);

    // A malformed decision is refused, naming what is expected, and changes nothing.
    let bad = gateway
        .post(&format!("/approvals/{request_id}"))
        .json(&serde_json::json!({"decision": "maybe"}))
        .send()
        .await
        .expect("POST answers");
    assert_eq!(bad.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body: Value = bad.json().await.expect("JSON error");
    assert_eq!(body["error"]["code"], "INVALID_ARGUMENT");
    assert!(
        body["error"]["message"]
            .as_str()
            .expect("message")
            .contains("allow_once"),
        "{body}"
    );

    let approved = gateway
        .post(&format!("/approvals/{request_id}"))
        .json(&serde_json::json!({"decision": "allow_once"}))
        .send()
        .await
        .expect("POST answers");
    assert_eq!(approved.status(), StatusCode::OK);
    assert_eq!(approved.headers()["content-type"], "application/json");
    let text = approved.text().await.expect("body");
    let approved: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(approved["approval"]["requestId"], request_id.as_str());
    assert_eq!(approved["approval"]["sessionId"], session_id.as_str());
    assert_eq!(approved["approval"]["tool"], "Bash");
    assert_eq!(approved["decision"], "APPROVAL_DECISION_ALLOW_ONCE");
    assert_eq!(approved["approval"]["display"], display.as_str());
    // proto3 JSON leaves out default values: `false` is absent.
    assert_eq!(approved["approval"].get("controlCharacters"), None);
    let resolved: pb::ResolveApprovalResponse =
        json::from_str(&text).expect("a ResolveApprovalResponse");
    let approval = resolved.approval.expect("the approval");
    assert_eq!(
        (approval.request_id.as_str(), approval.tool.as_str()),
        (request_id.as_str(), "Bash")
    );
    assert!(!approval.control_characters);
    assert_eq!(resolved.decision, pb::ApprovalDecision::AllowOnce as i32);

    // Reconnect as an EventSource does: Last-Event-ID is the last id seen.
    let last_id = seen[seen.len() - 1].id.clone();
    let resumed = gateway
        .get(&events_path)
        .header("last-event-id", &last_id)
        .send()
        .await
        .expect("GET events again");
    seen.extend(read_until(resumed, |e| e.event == "turn_completed").await);

    let ids: Vec<u64> = seen
        .iter()
        .map(|e| e.id.parse().expect("numeric id"))
        .collect();
    assert_eq!(
        ids,
        (1..=seen.len() as u64).collect::<Vec<_>>(),
        "no gap, no duplicate"
    );
    for event in &seen {
        let data = data(event);
        // 64-bit integers are strings in proto3 JSON.
        assert_eq!(data["event"]["sequence"], event.id.as_str());
        assert_eq!(data["event"]["turnId"], execution_id.as_str());
        assert_eq!(data["event"]["sessionId"], session_id.as_str());
        let parsed = session_event(event);
        assert_eq!(parsed.sequence.to_string(), event.id);
        assert_eq!(
            json::oneof_case(&parsed, "payload").expect("descriptor"),
            Some(event.event.clone())
        );
    }
    let kinds: Vec<&str> = seen.iter().map(|e| e.event.as_str()).collect();
    assert!(kinds.contains(&"approval_resolved"), "{kinds:?}");
    let finished = seen
        .iter()
        .map(data)
        .find(|d| d["event"].get("toolCallFinished").is_some())
        .expect("the tool ran");
    assert_eq!(
        finished["event"]["toolCallFinished"]["success"], true,
        "{finished}"
    );
    let completed = data(&seen[seen.len() - 1]);
    assert_eq!(
        completed["event"]["turnCompleted"]["response"],
        "The gateway approved it."
    );
    assert_eq!(
        completed["event"]["turnCompleted"]["outcome"],
        "TURN_OUTCOME_COMPLETED"
    );
    let Some(pb::session_event::Payload::TurnCompleted(done)) =
        session_event(&seen[seen.len() - 1]).payload
    else {
        panic!("the turn's end: {completed}");
    };
    assert_eq!(done.response, "The gateway approved it.");

    // Nothing is waiting any more.
    let none = gateway
        .get("/approvals")
        .send()
        .await
        .expect("GET approvals");
    assert_eq!(none.text().await.expect("body"), "{}");

    // `?after_sequence=` starts a first connection after a given event.
    let tail = gateway
        .get(&format!("{events_path}?after_sequence={}", ids.len() - 1))
        .send()
        .await
        .expect("GET events");
    let tail = read_until(tail, |_| true).await;
    assert_eq!(tail[0].id, ids.len().to_string());

    // The approval is no longer pending.
    let again = gateway
        .post(&format!("/approvals/{request_id}"))
        .json(&serde_json::json!({"decision": "deny", "reason": "too late"}))
        .send()
        .await
        .expect("POST answers");
    assert!(again.status().is_client_error(), "{}", again.status());
    let body: Value = again.json().await.expect("JSON error");
    assert!(body["error"]["code"].is_string(), "{body}");
}

#[tokio::test]
async fn the_gateway_needs_the_token_and_reports_errors_as_json() {
    let server = server().await;
    let gateway = Gateway::new(&server);
    let missing = uuid::Uuid::new_v4();

    let anonymous = gateway
        .http
        .get(format!("{}/sessions/{missing}/events", gateway.base))
        .send()
        .await
        .expect("answers");
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(anonymous.headers()["www-authenticate"], "Bearer");
    let body: Value = anonymous.json().await.expect("JSON");
    assert_eq!(body["error"]["code"], "UNAUTHENTICATED");

    let wrong = gateway
        .http
        .post(format!("{}/approvals/x", gateway.base))
        .bearer_auth("not-the-token")
        .json(&serde_json::json!({"decision": "deny"}))
        .send()
        .await
        .expect("answers");
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);

    let unknown = gateway
        .get(&format!("/sessions/{missing}/events"))
        .send()
        .await
        .expect("answers");
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    let body: Value = unknown.json().await.expect("JSON");
    assert_eq!(body["error"]["code"], "NOT_FOUND");
    assert_eq!(body["error"]["reason"], "SESSION_NOT_FOUND");
    assert!(
        body["error"]["message"]
            .as_str()
            .expect("message")
            .contains(&missing.to_string())
    );

    let malformed = gateway
        .get("/sessions/not-a-uuid/events")
        .send()
        .await
        .expect("answers");
    assert_eq!(malformed.status(), StatusCode::BAD_REQUEST);
    let body: Value = malformed.json().await.expect("JSON");
    assert_eq!(body["error"]["field"], "session_id");

    let bad_cursor = gateway
        .get(&format!("/sessions/{missing}/events"))
        .header("last-event-id", "seven")
        .send()
        .await
        .expect("answers");
    assert_eq!(bad_cursor.status(), StatusCode::BAD_REQUEST);
    let body: Value = bad_cursor.json().await.expect("JSON");
    assert_eq!(body["error"]["field"], "Last-Event-ID");

    let no_approval = gateway
        .post("/approvals/no-such-request")
        .json(&serde_json::json!({"decision": "allow_once"}))
        .send()
        .await
        .expect("answers");
    assert_eq!(no_approval.status(), StatusCode::NOT_FOUND);
    let body: Value = no_approval.json().await.expect("JSON");
    assert_eq!(body["error"]["code"], "NOT_FOUND");

    let nowhere = gateway.get("/nowhere").send().await.expect("answers");
    assert_eq!(nowhere.status(), StatusCode::NOT_FOUND);
    let body: Value = nowhere.json().await.expect("JSON");
    assert!(
        body["error"]["message"]
            .as_str()
            .expect("message")
            .contains("/sessions/{id}/events")
    );
}

#[tokio::test]
async fn the_gateway_refuses_a_public_address_without_a_token() {
    let home = tempfile::tempdir().expect("home");
    let mut args = odyssey_server::config::ServeArgs::new(loopback(), home.path().to_path_buf());
    args.http_listen = Some("0.0.0.0:0".parse().expect("addr"));
    let error = odyssey_server::serve::start(&args)
        .await
        .err()
        .expect("refused");
    assert!(
        error.to_string().contains("without an auth token"),
        "{error}"
    );
}

#[tokio::test]
async fn shutdown_ends_live_streams_with_an_error_event() {
    let server = server().await;
    let gateway = Gateway::new(&server);
    let session = server
        .handle
        .runtime()
        .create_session(SessionSpec::new(
            server
                .handle
                .runtime()
                .build_and_install(
                    Project::replay("quiet", &[r#"{"text": "hi"}"#]).path(),
                    Default::default(),
                )
                .await
                .expect("bundle")
                .id
                .to_string(),
        ))
        .await
        .expect("session");
    let response = gateway
        .get(&format!("/sessions/{}/events", session.record.id))
        .send()
        .await
        .expect("GET events");
    assert_eq!(response.status(), StatusCode::OK);
    // The answer's headers came after the subscription was made: it is following live.
    let reader = tokio::spawn(read_until(response, |e| e.event == "error"));
    tokio::time::timeout(Duration::from_secs(30), server.handle.shutdown())
        .await
        .expect("shutdown does not wait for open event streams")
        .expect("clean shutdown");
    let events = reader.await.expect("reader");
    let error = data(&events[events.len() - 1]);
    assert_eq!(error["error"]["code"], "UNAVAILABLE", "{error}");
}

#[tokio::test]
async fn a_bundle_archive_posted_to_bundles_is_installed() {
    let server = server().await;
    let gateway = Gateway::new(&server);
    let project = Project::replay("posted", &[r#"{"text": "hi"}"#]);
    let runtime = server.handle.runtime();
    runtime
        .build_and_install(project.path(), Default::default())
        .await
        .expect("bundle installs");
    let (installed, archive) = runtime.export_bundle("posted").await.expect("export");

    // Into another namespace: the same bundle, installed again from the bytes.
    let response = gateway
        .post("/bundles?namespace=copied")
        .header("content-type", "application/gzip")
        .body(archive.clone())
        .send()
        .await
        .expect("POST /bundles");
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = response.json().await.expect("JSON");
    assert_eq!(body["bundle"]["ref"]["namespace"], "copied");
    assert_eq!(body["bundle"]["ref"]["name"], "posted");
    assert_eq!(
        body["bundle"]["ref"]["digest"],
        installed.id.digest.as_str()
    );
    let parsed: pb::ImportBundleResponse =
        json::from_str(&body.to_string()).expect("an ImportBundleResponse");
    assert_eq!(
        parsed
            .bundle
            .and_then(|b| b.r#ref)
            .map(|r| r.name)
            .as_deref(),
        Some("posted")
    );

    // Nothing, bytes that are no archive, an unknown option, no token: refused, as JSON.
    let empty = gateway
        .post("/bundles")
        .header("content-type", "application/gzip")
        .send()
        .await
        .expect("answer");
    assert_eq!(empty.status(), StatusCode::BAD_REQUEST);
    let garbage = gateway
        .post("/bundles")
        .header("content-type", "application/octet-stream")
        .body(b"not a tar.gz".to_vec())
        .send()
        .await
        .expect("answer");
    assert_eq!(garbage.status(), StatusCode::BAD_REQUEST);
    let garbage: Value = garbage.json().await.expect("JSON");
    assert_eq!(garbage["error"]["code"], "INVALID_ARGUMENT");
    // A type a page of another site may send without a preflight (a form, a no-cors
    // fetch), or none: refused, so such a page cannot post to a tokenless server.
    for content_type in [
        None,
        Some("text/plain"),
        Some("multipart/form-data; boundary=x"),
    ] {
        let mut request = gateway
            .post("/bundles?namespace=csrf")
            .body(archive.clone());
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type);
        }
        let refused = request.send().await.expect("answer");
        assert_eq!(
            refused.status(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "{content_type:?}"
        );
    }
    let unknown = gateway
        .post("/bundles?nope=1")
        .header("content-type", "application/gzip")
        .body(archive.clone())
        .send()
        .await
        .expect("answer");
    assert_eq!(unknown.status(), StatusCode::BAD_REQUEST);
    let anonymous = gateway
        .http
        .post(format!("{}/bundles", gateway.base))
        .header("content-type", "application/gzip")
        .body(archive)
        .send()
        .await
        .expect("answer");
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
}
