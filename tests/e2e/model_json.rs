//! Issue 11 item 5: JSON a model writes (tool-call arguments) is bounded before it reaches
//! an event. A call nested 120 levels deep used to become a protobuf `Struct` that the
//! decoders refuse (prost past 100 messages, Python past about 33 JSON levels), so every
//! stream of the session, and ListApprovals while it waited, failed. Now it is refused
//! with an error result naming the limit, and every event decodes.

use odyssey_api::v1 as pb;
use odyssey_api::v1::approval_service_client::ApprovalServiceClient;
use pb::session_event::Payload;
use serde_json::{Value, json};

use crate::support::{Project, TestServer};

/// `{"a": {"a": … "leaf" …}}`, `levels` objects deep.
fn nested(levels: usize) -> Value {
    (0..levels).fold(json!("leaf"), |inner, _| json!({ "a": inner }))
}

/// Objects nested in a protobuf `Value`.
fn struct_depth(value: &prost_types::Value) -> usize {
    use prost_types::value::Kind;
    match &value.kind {
        Some(Kind::StructValue(s)) => 1 + s.fields.values().map(struct_depth).max().unwrap_or(0),
        Some(Kind::ListValue(l)) => 1 + l.values.iter().map(struct_depth).max().unwrap_or(0),
        _ => 0,
    }
}

#[tokio::test]
async fn arguments_nested_too_deep_are_refused_and_every_stream_still_decodes() {
    let deep = json!({"command": "true", "payload": nested(119)});
    // The deepest allowed: the arguments object and 19 levels inside it.
    let deepest_allowed = json!({"path": "notes.txt", "payload": nested(19)});
    let cassette = [
        json!({
            "tool_calls": [
                {"id": "call_deep", "name": "Bash", "arguments": deep},
                {"id": "call_ok", "name": "Read", "arguments": deepest_allowed},
            ]
        })
        .to_string(),
        json!({"text": ["done"]}).to_string(),
    ];
    let cassette: Vec<&str> = cassette.iter().map(String::as_str).collect();
    let server = TestServer::start().await;
    let project = Project::with_tools(
        "deep",
        &cassette,
        &["Bash", "Read"],
        "[Read]",
        "[Bash]",
        "[]",
    );
    let session = server.session_on(&project).await;

    let execution = server.submit(&session.id, "go").await.expect("submitted");
    // The whole turn decodes through the generated client, live (before the fix the stream
    // failed at the deep call's first event).
    let events = server.events_until_turn_end(&session.id, 0).await;
    let status = server.status(&execution).await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    assert_eq!(status.response, "done");

    let started: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.payload {
            Some(Payload::ToolCallStarted(s)) => Some(s),
            _ => None,
        })
        .collect();
    assert_eq!(started.len(), 2);
    let refused_note = started[0].arguments.as_ref().expect("a note");
    assert!(
        struct_depth(&prost_types::Value {
            kind: Some(prost_types::value::Kind::StructValue(refused_note.clone()))
        }) <= 1
    );
    let kept = started[1].arguments.as_ref().expect("arguments");
    let depth = struct_depth(&prost_types::Value {
        kind: Some(prost_types::value::Kind::StructValue(kept.clone())),
    });
    assert_eq!(
        depth, 20,
        "the deepest allowed arguments are recorded whole"
    );

    let finished: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.payload {
            Some(Payload::ToolCallFinished(f)) => Some(f),
            _ => None,
        })
        .collect();
    assert_eq!(finished[0].call_id, "call_deep");
    assert!(!finished[0].success);
    assert!(
        finished[0].result.contains("120 levels") && finished[0].result.contains("limit is 20"),
        "{}",
        finished[0].result
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.payload, Some(Payload::PermissionRequested(_)))),
        "a refused call never waits for a human"
    );
    let approvals = ApprovalServiceClient::new(server.channel.clone())
        .list_approvals(pb::ListApprovalsRequest::default())
        .await
        .expect("ListApprovals answers");
    assert!(approvals.into_inner().approvals.is_empty());

    // Nothing that deep was written: not in the events, not in the turn's record.
    let log = std::fs::read_to_string(server.sessions_dir().join(&session.id).join("events.jsonl"))
        .expect("log");
    assert!(
        !log.contains(&"{\"a\":".repeat(30)),
        "the deep arguments were logged"
    );
}
