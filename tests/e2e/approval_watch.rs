//! WatchApprovals and Session.state through the Rust SDK against a real server: the
//! snapshot, a request filed by a turn, its removal when another client decides it or its
//! turn is cancelled, and the session's state following along.

use std::time::Duration;

use odyssey_api::v1 as pb;
use odyssey_client::{
    ApprovalWatcher, ApprovalsChange, ConnectOptions, OdysseyClient, ReconnectPolicy,
};
use tonic::Code;

use crate::support::{Project, TestServer};

const BASH_CALL: &str = r#"{"tool_calls": [{"id": "call_w", "name": "Bash", "arguments": {"command": "echo watched > proof.txt"}}]}"#;

async fn connect(server: &TestServer) -> OdysseyClient {
    OdysseyClient::connect_with(server.handle.url(), ConnectOptions::new())
        .await
        .expect("connect")
}

async fn next_change(watcher: &mut ApprovalWatcher) -> ApprovalsChange {
    tokio::time::timeout(Duration::from_secs(20), watcher.next())
        .await
        .expect("a change within 20 s")
        .expect("the watch works")
        .expect("the watch goes on")
}

fn bash_project(name: &str, cassette: &[&str]) -> Project {
    Project::with_tools(name, cassette, &["Bash", "Read"], "[Read]", "[Bash]", "[]")
}

async fn state_of(client: &OdysseyClient, session_id: &str) -> pb::SessionState {
    client
        .get_session(session_id)
        .await
        .expect("get session")
        .state()
}

#[tokio::test]
async fn a_watch_sees_a_request_filed_and_removed_when_another_client_decides_it() {
    let server = TestServer::start().await;
    let client = connect(&server).await;
    let session = server
        .session_on(&bash_project(
            "watched",
            &[BASH_CALL, r#"{"text": "done"}"#],
        ))
        .await;
    assert_eq!(session.state(), pb::SessionState::Idle);
    let mut all = client
        .watch_approvals(None, ReconnectPolicy::never())
        .await
        .expect("watch");
    let mut mine = client
        .watch_approvals(Some(&session.id), ReconnectPolicy::never())
        .await
        .expect("watch one session");
    assert_eq!(
        next_change(&mut all).await,
        ApprovalsChange::Snapshot(vec![])
    );
    assert_eq!(
        next_change(&mut mine).await,
        ApprovalsChange::Snapshot(vec![])
    );

    let execution = server
        .submit(&session.id, "write it")
        .await
        .expect("submit");
    let added = match next_change(&mut all).await {
        ApprovalsChange::Added(a) => a,
        other => panic!("expected the request, got {other:?}"),
    };
    assert_eq!(added.session_id, session.id);
    assert_eq!(added.execution_id, execution);
    assert_eq!(added.tool, "Bash");
    assert!(
        added.display.contains("echo watched > proof.txt"),
        "{}",
        added.display
    );
    assert!(!added.reason.is_empty(), "the rule that asked is named");
    assert_eq!(
        next_change(&mut mine).await,
        ApprovalsChange::Added(added.clone())
    );
    assert_eq!(all.pending(), std::slice::from_ref(&added));
    assert_eq!(
        state_of(&client, &session.id).await,
        pb::SessionState::WaitingForApproval
    );
    let listed = client
        .list_sessions(&Default::default())
        .await
        .expect("list sessions");
    let listed = listed.iter().find(|s| s.id == session.id).expect("listed");
    assert_eq!(listed.state(), pb::SessionState::WaitingForApproval);

    // Another client (plain gRPC, not the watcher's) decides.
    let other = connect(&server).await;
    other
        .resolve_approval(&added.request_id, pb::ApprovalDecision::AllowOnce, None)
        .await
        .expect("resolve");
    for watcher in [&mut all, &mut mine] {
        match next_change(watcher).await {
            ApprovalsChange::Removed(r) => {
                assert_eq!(r.request_id, added.request_id);
                assert_eq!(r.decision(), pb::ApprovalDecision::AllowOnce);
                assert_eq!(r.resolution(), pb::ApprovalResolution::Decided);
            }
            other => panic!("expected the removal, got {other:?}"),
        }
        assert!(watcher.pending().is_empty());
    }
    server
        .wait_for_state(&execution, pb::ExecutionState::Completed)
        .await;
    assert_eq!(state_of(&client, &session.id).await, pb::SessionState::Idle);
}

#[tokio::test]
async fn a_cancelled_turn_removes_its_request_and_a_new_watch_starts_from_what_is_pending() {
    let server = TestServer::start().await;
    let client = connect(&server).await;
    let session = server
        .session_on(&bash_project(
            "cancelled",
            &[BASH_CALL, r#"{"text": "done"}"#],
        ))
        .await;
    let execution = server
        .submit(&session.id, "write it")
        .await
        .expect("submit");
    server
        .wait_for_state(&execution, pb::ExecutionState::WaitingApproval)
        .await;
    // Watching after the request was filed: it is in the snapshot.
    let mut watcher = client
        .watch_approvals(Some(&session.id), ReconnectPolicy::never())
        .await
        .expect("watch");
    let request_id = match next_change(&mut watcher).await {
        ApprovalsChange::Snapshot(s) if s.len() == 1 => s[0].request_id.clone(),
        other => panic!("expected a snapshot of one, got {other:?}"),
    };
    client.cancel_execution(&execution).await.expect("cancel");
    match next_change(&mut watcher).await {
        ApprovalsChange::Removed(r) => {
            assert_eq!(r.request_id, request_id);
            assert_eq!(r.decision(), pb::ApprovalDecision::Deny);
            assert_eq!(r.resolution(), pb::ApprovalResolution::Cancelled);
        }
        other => panic!("expected the removal, got {other:?}"),
    }
    server
        .wait_for_state(&execution, pb::ExecutionState::Cancelled)
        .await;
    assert_eq!(state_of(&client, &session.id).await, pb::SessionState::Idle);
}

#[tokio::test]
async fn watching_a_missing_or_malformed_session_is_refused() {
    let server = TestServer::start().await;
    let client = connect(&server).await;
    let missing = client
        .watch_approvals(
            Some("0190a4c1-0000-7000-8000-000000000000"),
            ReconnectPolicy::never(),
        )
        .await
        .expect_err("no such session");
    assert_eq!(missing.code(), Some(Code::NotFound));
    let malformed = client
        .watch_approvals(Some("not-a-session"), ReconnectPolicy::never())
        .await
        .expect_err("malformed id");
    assert_eq!(malformed.code(), Some(Code::InvalidArgument));
}
