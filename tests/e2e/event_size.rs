//! Every event fits in one message to subscribers, whatever the model makes the tools
//! print: six Bash calls of 1 MiB each once made a `turn_completed` of over 6 MiB, past
//! the 4 MiB gRPC limit, and every stream of the session failed at it.

use odyssey_api::v1 as pb;
use pb::session_event::Payload;
use serde_json::json;

use crate::support::{Project, TestServer};

#[tokio::test]
async fn a_turn_of_huge_tool_outputs_still_streams_to_every_subscriber() {
    let print_a_mebibyte = json!({"command": "head -c 1048576 /dev/zero | tr '\\0' a"});
    let calls: Vec<_> = (0..6)
        .map(|i| json!({"id": format!("call_{i}"), "name": "Bash", "arguments": print_a_mebibyte}))
        .collect();
    let cassette = [
        json!({ "tool_calls": calls }).to_string(),
        json!({"text": ["done"]}).to_string(),
    ];
    let cassette: Vec<&str> = cassette.iter().map(String::as_str).collect();
    let server = TestServer::start().await;
    let project = Project::with_tools("loud", &cassette, &["Bash"], "[Bash]", "[]", "[]");
    let session = server.session_on(&project).await;

    let execution = server.submit(&session.id, "go").await.expect("submitted");
    let events = server.events_until_turn_end(&session.id, 0).await;
    let status = server.status(&execution).await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    assert_eq!(status.response, "done");

    let results: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.payload {
            Some(Payload::ToolCallFinished(f)) => Some(f.result.len()),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 6);
    assert!(results.iter().all(|len| *len <= 64 * 1024), "{results:?}");
    let Some(Payload::TurnCompleted(completed)) = events.last().and_then(|e| e.payload.clone())
    else {
        panic!("the turn's end was streamed");
    };
    let record: usize = completed.messages.iter().map(|m| m.content.len()).sum();
    assert!(record < 4 * 1024 * 1024, "{record}");
    // A late subscriber replaying the whole log gets every event too.
    let replayed = server.events_until_turn_end(&session.id, 0).await;
    assert_eq!(replayed.len(), events.len());
}

/// A model answering 420 KiB of text: the execution status shows the answer as the
/// turn's record keeps it, within the same bound, never the whole of it.
#[tokio::test]
async fn a_huge_answer_is_bounded_in_the_status_as_in_the_record() {
    // Random text, so the bundle's archive does not look like a compression bomb.
    let answer: String = (0..12_000)
        .map(|_| uuid::Uuid::new_v4().to_string())
        .collect();
    let cassette = [json!({"text": [answer]}).to_string()];
    let cassette: Vec<&str> = cassette.iter().map(String::as_str).collect();
    let server = TestServer::start().await;
    let session = server
        .session_on(&Project::replay("verbose", &cassette))
        .await;
    let execution = server.submit(&session.id, "go").await.expect("submitted");
    let events = server.events_until_turn_end(&session.id, 0).await;
    let status = server.status(&execution).await;
    let Some(Payload::TurnCompleted(completed)) = events.last().and_then(|e| e.payload.clone())
    else {
        panic!("the turn's end was streamed");
    };
    assert!(
        status.response.len() <= 256 * 1024 + 64,
        "{}",
        status.response.len()
    );
    assert!(status.response.ends_with("more bytes not recorded]"));
    assert_eq!(status.response, completed.response);
}
