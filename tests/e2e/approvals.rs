//! Tools behind permission rules: ask → event → a human resolves over gRPC (allow once,
//! allow always, deny with a reason, timeout), waiting turns give their slot back, and
//! cancellation ends a pending request.

use std::time::Duration;

use odyssey_api::v1 as pb;
use odyssey_api::v1::approval_service_client::ApprovalServiceClient;
use tonic::Code;

use crate::support::{Project, TestServer, first_payload, payload_kind};

const BASH_CALL: &str = r#"{"tool_calls": [{"id": "call_b", "name": "Bash", "arguments": {"command": "echo approved > proof.txt"}}]}"#;

fn approvals(server: &TestServer) -> ApprovalServiceClient<tonic::transport::Channel> {
    ApprovalServiceClient::new(server.channel.clone())
}

async fn pending(server: &TestServer, session_id: &str) -> Vec<pb::Approval> {
    for _ in 0..200 {
        let list = approvals(server)
            .list_approvals(pb::ListApprovalsRequest {
                session_id: session_id.into(),
                ..Default::default()
            })
            .await
            .expect("list approvals")
            .into_inner()
            .approvals;
        if !list.is_empty() {
            return list;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no approval request appeared");
}

async fn resolve(
    server: &TestServer,
    request_id: &str,
    decision: pb::ApprovalDecision,
    reason: &str,
) -> Result<pb::ResolveApprovalResponse, tonic::Status> {
    approvals(server)
        .resolve_approval(pb::ResolveApprovalRequest {
            request_id: request_id.into(),
            decision: decision as i32,
            reason: reason.into(),
            ..Default::default()
        })
        .await
        .map(|r| r.into_inner())
}

fn bash_project(name: &str, cassette: &[&str]) -> Project {
    Project::with_tools(name, cassette, &["Bash", "Read"], "[Read]", "[Bash]", "[]")
}

#[tokio::test]
async fn allow_once_runs_the_command_in_the_sandbox_and_asks_again_next_time() {
    let server = TestServer::start().await;
    let session = server
        .session_on(&bash_project(
            "once",
            &[
                BASH_CALL,
                r#"{"text": "done"}"#,
                BASH_CALL,
                r#"{"text": "done again"}"#,
            ],
        ))
        .await;
    let execution = server
        .submit(&session.id, "write the proof")
        .await
        .expect("submit");
    server
        .wait_for_state(&execution, pb::ExecutionState::WaitingApproval)
        .await;
    let waiting = pending(&server, &session.id).await;
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0].tool, "Bash");
    assert!(
        waiting[0].summary.contains("echo approved > proof.txt"),
        "{}",
        waiting[0].summary
    );
    assert_eq!(waiting[0].execution_id, execution);
    resolve(
        &server,
        &waiting[0].request_id,
        pb::ApprovalDecision::AllowOnce,
        "",
    )
    .await
    .expect("resolve");
    server
        .wait_for_state(&execution, pb::ExecutionState::Completed)
        .await;

    let proof = server
        .home()
        .join("sandbox")
        .join(&session.id)
        .join("data")
        .join("proof.txt");
    assert_eq!(
        std::fs::read_to_string(&proof).expect("the command ran in the workspace"),
        "approved\n"
    );

    let status = server.status(&execution).await;
    let events = server.events(&session.id, 0, status.last_sequence).await;
    let kinds: Vec<&str> = events.iter().map(payload_kind).collect();
    let order = [
        "tool_call_started",
        "permission_requested",
        "approval_resolved",
        "exec_command_begin",
        "exec_command_end",
        "tool_call_finished",
    ];
    let positions: Vec<usize> = order
        .iter()
        .map(|k| {
            kinds
                .iter()
                .position(|x| x == k)
                .unwrap_or_else(|| panic!("{k} in {kinds:?}"))
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{kinds:?}");

    // Resolving again: FAILED_PRECONDITION; an unknown id: NOT_FOUND; a malformed one:
    // INVALID_ARGUMENT.
    let again = resolve(
        &server,
        &waiting[0].request_id,
        pb::ApprovalDecision::Deny,
        "",
    )
    .await
    .expect_err("twice");
    assert_eq!(again.code(), Code::FailedPrecondition);
    let unknown = resolve(
        &server,
        &uuid::Uuid::now_v7().to_string(),
        pb::ApprovalDecision::Deny,
        "",
    )
    .await
    .expect_err("unknown");
    assert_eq!(unknown.code(), Code::NotFound);
    let malformed = resolve(&server, "no-such-request", pb::ApprovalDecision::Deny, "")
        .await
        .expect_err("malformed");
    assert_eq!(malformed.code(), Code::InvalidArgument);

    // allow_once is not remembered: the same command asks again.
    let second = server.submit(&session.id, "again").await.expect("submit");
    server
        .wait_for_state(&second, pb::ExecutionState::WaitingApproval)
        .await;
    let waiting = pending(&server, &session.id).await;
    resolve(
        &server,
        &waiting[0].request_id,
        pb::ApprovalDecision::AllowOnce,
        "",
    )
    .await
    .expect("resolve");
    server
        .wait_for_state(&second, pb::ExecutionState::Completed)
        .await;
}

#[tokio::test]
async fn allow_always_is_remembered_for_that_exact_command_in_this_session() {
    let server = TestServer::start().await;
    let other = r#"{"tool_calls": [{"id": "call_c", "name": "Bash", "arguments": {"command": "echo other"}}]}"#;
    let session = server
        .session_on(&bash_project(
            "always",
            &[
                BASH_CALL,
                r#"{"text": "one"}"#,
                BASH_CALL,
                r#"{"text": "two"}"#,
                other,
                r#"{"text": "three"}"#,
            ],
        ))
        .await;
    let first = server.submit(&session.id, "first").await.expect("submit");
    let waiting = pending(&server, &session.id).await;
    resolve(
        &server,
        &waiting[0].request_id,
        pb::ApprovalDecision::AllowAlways,
        "",
    )
    .await
    .expect("resolve");
    server
        .wait_for_state(&first, pb::ExecutionState::Completed)
        .await;

    let second = server.run(&session.id, "same command").await;
    assert_eq!(
        second.state,
        pb::ExecutionState::Completed as i32,
        "ran without asking: {second:?}"
    );
    assert_eq!(second.response, "two");

    let third = server
        .submit(&session.id, "different command")
        .await
        .expect("submit");
    server
        .wait_for_state(&third, pb::ExecutionState::WaitingApproval)
        .await;
    let waiting = pending(&server, &session.id).await;
    assert!(waiting[0].summary.contains("echo other"));
    resolve(
        &server,
        &waiting[0].request_id,
        pb::ApprovalDecision::Deny,
        "",
    )
    .await
    .expect("deny");
    server
        .wait_for_state(&third, pb::ExecutionState::Completed)
        .await;
}

#[tokio::test]
async fn a_deny_reason_reaches_the_model_and_nothing_runs() {
    let server = TestServer::start().await;
    let session = server
        .session_on(&bash_project(
            "denied",
            &[
                BASH_CALL,
                r#"{"text": "understood", "request": {"last_message": {"role": "tool", "content": "denied by the user: not today"}}}"#,
            ],
        ))
        .await;
    let execution = server.submit(&session.id, "try").await.expect("submit");
    let waiting = pending(&server, &session.id).await;
    resolve(
        &server,
        &waiting[0].request_id,
        pb::ApprovalDecision::Deny,
        "not today",
    )
    .await
    .expect("deny");
    server
        .wait_for_state(&execution, pb::ExecutionState::Completed)
        .await;
    assert_eq!(server.status(&execution).await.response, "understood");
    let proof = server
        .home()
        .join("sandbox")
        .join(&session.id)
        .join("data")
        .join("proof.txt");
    assert!(!proof.exists(), "a denied command never runs");
}

#[tokio::test]
async fn an_unanswered_request_times_out_as_denied_by_timeout() {
    let server = TestServer::start_configured(
        |_| {},
        |config| config.approval_timeout = Duration::from_millis(500),
    )
    .await;
    let session = server
        .session_on(&bash_project(
            "timeout",
            &[
                BASH_CALL,
                r#"{"text": "nobody came", "request": {"last_message": {"role": "tool", "content": "denied: nobody approved the call in time"}}}"#,
            ],
        ))
        .await;
    let status = server.run(&session.id, "wait").await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    let events = server.events(&session.id, 0, status.last_sequence).await;
    let resolved = first_payload!(events, ApprovalResolved).expect("approval_resolved");
    assert_eq!(resolved.resolution, pb::ApprovalResolution::TimedOut as i32);
    assert_eq!(resolved.decision, pb::ApprovalDecision::Deny as i32);
}

#[tokio::test]
async fn a_waiting_turn_gives_its_slot_to_other_sessions_and_cancel_ends_the_request() {
    let server = TestServer::start_with(|args| args.worker_count = Some(1)).await;
    let waiter = server
        .session_on(&bash_project("waiter", &[BASH_CALL]))
        .await;
    let execution = server.submit(&waiter.id, "ask").await.expect("submit");
    server
        .wait_for_state(&execution, pb::ExecutionState::WaitingApproval)
        .await;

    // One worker, held by nobody: another session completes turns meanwhile.
    let busy = server
        .session_on(&Project::replay(
            "busy",
            &[r#"{"text": "a"}"#, r#"{"text": "b"}"#],
        ))
        .await;
    assert_eq!(
        server.run(&busy.id, "one").await.state,
        pb::ExecutionState::Completed as i32
    );
    assert_eq!(
        server.run(&busy.id, "two").await.state,
        pb::ExecutionState::Completed as i32
    );

    let cancelled = server
        .executions()
        .cancel_execution(pb::CancelExecutionRequest {
            execution_id: execution.clone(),
        })
        .await
        .expect("cancel")
        .into_inner()
        .status
        .expect("status");
    assert_eq!(cancelled.state, pb::ExecutionState::Cancelled as i32);
    let events = server.events(&waiter.id, 0, cancelled.last_sequence).await;
    let resolved = first_payload!(events, ApprovalResolved).expect("approval_resolved recorded");
    assert_eq!(
        resolved.resolution,
        pb::ApprovalResolution::Cancelled as i32
    );
    let list = approvals(&server)
        .list_approvals(pb::ListApprovalsRequest::default())
        .await
        .expect("list")
        .into_inner();
    assert!(list.approvals.is_empty(), "nothing left pending");
}

#[tokio::test]
async fn the_never_policy_denies_what_would_ask_and_says_why() {
    let server = TestServer::start().await;
    let bundle = server
        .install(&bash_project("never", &[BASH_CALL, r#"{"text": "ok"}"#]))
        .await;
    let session = server
        .sessions()
        .create_session(pb::CreateSessionRequest {
            bundle_reference: format!("never@{}", crate::support::bundle_version(&bundle)),
            approval_policy: pb::ApprovalPolicy::Never as i32,
            ..Default::default()
        })
        .await
        .expect("create")
        .into_inner()
        .session
        .expect("session");
    let status = server.run(&session.id, "go").await;
    assert_eq!(status.state, pb::ExecutionState::Completed as i32);
    let events = server.events(&session.id, 0, status.last_sequence).await;
    let finished = first_payload!(events, ToolCallFinished).expect("tool_call_finished");
    assert!(!finished.success);
    assert!(finished.result.contains("never"), "{}", finished.result);
    assert!(
        !events
            .iter()
            .any(|e| payload_kind(e) == "permission_requested")
    );
}

#[tokio::test]
async fn an_operator_hook_can_deny_what_the_rules_allow() {
    let hooks = tempfile::tempdir().expect("hook dir");
    let hook = hooks.path().join("deny-rm.sh");
    std::fs::write(
        &hook,
        "#!/bin/sh\nif grep -q 'rm ' ; then echo '{\"decision\": \"deny\", \"reason\": \"no deleting here\"}'; else echo '{\"decision\": \"allow\"}'; fi\n",
    )
    .expect("write hook");
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let server = TestServer::start_with(|args| args.pre_tool_hooks = vec![hook.clone()]).await;
    let delete = r#"{"tool_calls": [{"id": "call_rm", "name": "Bash", "arguments": {"command": "rm -f nothing"}}]}"#;
    let session = server
        .session_on(&Project::with_tools(
            "hooked",
            &[delete, r#"{"text": "refused"}"#],
            &["Bash"],
            "[Bash]",
            "[]",
            "[]",
        ))
        .await;
    let status = server.run(&session.id, "clean up").await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    assert_eq!(status.response, "refused");
    let events = server.events(&session.id, 0, status.last_sequence).await;
    let finished = first_payload!(events, ToolCallFinished).expect("tool_call_finished");
    assert!(!finished.success);
    assert!(
        finished.result.contains("no deleting here"),
        "{}",
        finished.result
    );
    assert!(
        !events
            .iter()
            .any(|e| payload_kind(e) == "exec_command_begin"),
        "nothing ran"
    );
}

#[tokio::test]
async fn a_bundle_asking_for_more_than_the_operator_allows_is_refused_at_session_creation() {
    let project = Project::replay("netty", &[r#"{"text": "hi"}"#]);
    project.write(
        "odyssey.bundle.yaml",
        "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: netty\n  version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n  sandbox:\n    mode: workspace_write\n    permissions:\n      network: [\"*\"]\n",
    );
    let closed = TestServer::start().await;
    closed.install(&project).await;
    let refused = closed
        .sessions()
        .create_session(pb::CreateSessionRequest {
            bundle_reference: "netty".into(),
            ..Default::default()
        })
        .await
        .expect_err("network not allowed");
    assert_eq!(refused.code(), Code::PermissionDenied);
    assert!(
        refused.message().contains("allow_network"),
        "{}",
        refused.message()
    );

    let open = TestServer::start_with(|args| args.allow_network = true).await;
    open.install(&project).await;
    open.create_session("netty").await;
}

#[tokio::test]
async fn cancelling_a_turn_kills_its_running_command_and_children() {
    let server = TestServer::start().await;
    let marker = format!("{}.{}", 300, std::process::id());
    let call = format!(
        r#"{{"tool_calls": [{{"id": "call_s", "name": "Bash", "arguments": {{"command": "sleep {marker} & sleep {marker}; wait"}}}}]}}"#
    );
    let session = server
        .session_on(&Project::with_tools(
            "sleeper",
            &[&call],
            &["Bash"],
            "[Bash]",
            "[]",
            "[]",
        ))
        .await;
    let execution = server.submit(&session.id, "sleep").await.expect("submit");
    let running = || {
        std::fs::read_dir("/proc")
            .map(|dir| {
                dir.filter_map(Result::ok)
                    .filter(|e| {
                        std::fs::read(e.path().join("cmdline"))
                            .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&marker))
                    })
                    .count()
            })
            .unwrap_or(0)
    };
    let mut started = false;
    for _ in 0..200 {
        if running() >= 2 {
            started = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(started, "the command started");
    let began = std::time::Instant::now();
    let status = server
        .executions()
        .cancel_execution(pb::CancelExecutionRequest {
            execution_id: execution.clone(),
        })
        .await
        .expect("cancel")
        .into_inner()
        .status
        .expect("status");
    assert_eq!(status.state, pb::ExecutionState::Cancelled as i32);
    // The commands would sleep for 300 s: gone within a few seconds means killed. (How
    // fast is a benchmark's question; a busy machine must not fail this test.)
    let mut gone = false;
    for _ in 0..1000 {
        if running() == 0 {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(gone, "the command and its child were killed");
    assert!(
        began.elapsed() < Duration::from_secs(30),
        "killed, not left to finish: {:?}",
        began.elapsed()
    );
}
