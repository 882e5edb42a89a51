//! SendInput: input that steers a running turn (the next request the loopback OpenAI
//! server receives holds it), queues a turn after it, or interrupts it; with no turn
//! running, every mode starts one. The running turn is held mid-way by an approval it
//! waits for.

use std::time::Duration;

use odyssey_api::v1 as pb;
use odyssey_api::v1::approval_service_client::ApprovalServiceClient;
use odyssey_runtime::provider::ProviderSettings;
use odyssey_testing::openai_wire::{OpenAiWireServer, Reply, Script, StreamBuilder};
use serde_json::Value;
use tonic::Code;

use crate::support::{Project, TestServer, bad_fields};

const KEY: &str = "sk-test-loopback-key-input";

fn bash_call(id: &str) -> Reply {
    StreamBuilder::new()
        .tool_call(0, id, "Bash", r#"{"command": "ls"}"#, 2)
        .finish("tool_calls")
        .done()
        .build()
}

fn text(answer: &str) -> Reply {
    StreamBuilder::new()
        .text(answer, 1)
        .finish("stop")
        .done()
        .build()
}

/// A server whose provider `openai` is `model`.
async fn server_for(model: &OpenAiWireServer) -> TestServer {
    let base_url = model.base_url();
    TestServer::start_configured(
        |_| {},
        move |config| {
            config.providers.insert(
                "openai".into(),
                ProviderSettings {
                    base_url: Some(base_url),
                    api_key: Some(KEY.into()),
                    ..ProviderSettings::default()
                },
            );
        },
    )
    .await
}

/// A session whose agent talks to `openai` and must ask before running Bash.
async fn session(server: &TestServer, name: &str) -> String {
    let project = Project::with_tools(name, &[], &["Bash"], "[]", "[Bash]", "[]");
    project.write(
        "agents/main/agent.yaml",
        "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\n  version: 0.1.0\nspec:\n  kind: prompt\n  prompt: You are a test agent.\n  model:\n    provider: openai\n    name: gpt-test\n  tools:\n    ask: [Bash]\n",
    );
    server.session_on(&project).await.id
}

async fn send(
    server: &TestServer,
    session_id: &str,
    text: &str,
    mode: pb::InputMode,
) -> Result<pb::SendInputResponse, tonic::Status> {
    send_raw(server, session_id, text, mode as i32).await
}

async fn send_raw(
    server: &TestServer,
    session_id: &str,
    text: &str,
    mode: i32,
) -> Result<pb::SendInputResponse, tonic::Status> {
    server
        .executions()
        .send_input(pb::SendInputRequest {
            session_id: session_id.into(),
            text: text.into(),
            mode,
        })
        .await
        .map(|r| r.into_inner())
}

/// The id of the session's one pending approval, once it is asked.
async fn pending_request(server: &TestServer, session_id: &str) -> String {
    for _ in 0..200 {
        let list = ApprovalServiceClient::new(server.channel.clone())
            .list_approvals(pb::ListApprovalsRequest {
                session_id: session_id.into(),
                ..Default::default()
            })
            .await
            .expect("list approvals")
            .into_inner()
            .approvals;
        if let Some(approval) = list.first() {
            return approval.request_id.clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no approval request appeared");
}

async fn deny(server: &TestServer, request_id: &str) {
    ApprovalServiceClient::new(server.channel.clone())
        .resolve_approval(pb::ResolveApprovalRequest {
            request_id: request_id.into(),
            decision: pb::ApprovalDecision::Deny as i32,
            reason: "not now".into(),
            ..Default::default()
        })
        .await
        .expect("resolve");
}

/// Submits `prompt` and returns its execution once it waits for its Bash approval.
async fn waiting_turn(server: &TestServer, session_id: &str, prompt: &str) -> (String, String) {
    let execution = server.submit(session_id, prompt).await.expect("submit");
    server
        .wait_for_state(&execution, pb::ExecutionState::WaitingApproval)
        .await;
    let request = pending_request(server, session_id).await;
    (execution, request)
}

/// The text of every user message of a chat-completions request, in order.
fn user_texts(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

fn roles(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["role"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn turn_completed(events: &[pb::SessionEvent]) -> pb::TurnCompleted {
    events
        .iter()
        .find_map(|e| match &e.payload {
            Some(pb::session_event::Payload::TurnCompleted(done)) => Some(done.clone()),
            _ => None,
        })
        .expect("a turn_completed event")
}

#[tokio::test]
async fn steered_input_joins_the_running_turn_before_its_next_model_call() {
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(bash_call("c1"))
            .reply(text("Listed, and noted.")),
    )
    .await
    .expect("model server");
    let server = server_for(&model).await;
    let session_id = session(&server, "steer").await;
    let (execution, request) = waiting_turn(&server, &session_id, "list the files").await;

    // A turn waiting for an approval still takes the input, before its next model call.
    let sent = send(&server, &session_id, "also say hello", pb::InputMode::Steer)
        .await
        .expect("steer");
    assert_eq!(sent.disposition, pb::InputDisposition::Steered as i32);
    assert_eq!(sent.execution_id, execution);
    assert_eq!(sent.session_id, session_id);
    assert!(sent.interrupted_execution_id.is_empty());
    assert_eq!(
        model.requests().len(),
        1,
        "no model call before the approval"
    );

    deny(&server, &request).await;
    server
        .wait_for_state(&execution, pb::ExecutionState::Completed)
        .await;
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        user_texts(&requests[1]),
        ["list the files", "also say hello"]
    );
    // After the tool's result, as the user speaking next.
    assert_eq!(
        roles(&requests[1]).last().map(String::as_str),
        Some("user"),
        "{:?}",
        roles(&requests[1])
    );
    assert_eq!(roles(&requests[1])[roles(&requests[1]).len() - 2], "tool");

    let status = server.status(&execution).await;
    let events = server
        .events(&session_id, status.first_sequence - 1, status.last_sequence)
        .await;
    let added: Vec<&pb::SessionEvent> = events
        .iter()
        .filter(|e| {
            matches!(
                e.payload,
                Some(pb::session_event::Payload::UserInputAdded(_))
            )
        })
        .collect();
    assert_eq!(added.len(), 1);
    assert_eq!(added[0].turn_id, execution);
    let Some(pb::session_event::Payload::UserInputAdded(input)) = &added[0].payload else {
        unreachable!()
    };
    assert_eq!(input.text, "also say hello");
    assert_eq!(input.mode, pb::InputMode::Steer as i32);
    let done = turn_completed(&events);
    assert_eq!(done.outcome, pb::TurnOutcome::Completed as i32);
    assert_eq!(done.response, "Listed, and noted.");
    assert!(done.reason.is_empty());
    assert!(
        done.messages
            .iter()
            .any(|m| m.role == pb::ChatRole::User as i32 && m.content == "also say hello"),
        "the turn record keeps the input"
    );
}

#[tokio::test]
async fn queued_input_runs_as_a_new_turn_after_the_running_one() {
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(bash_call("c1"))
            .reply(text("First done."))
            .reply(text("Second done.")),
    )
    .await
    .expect("model server");
    let server = server_for(&model).await;
    let session_id = session(&server, "queue").await;
    let (execution, request) = waiting_turn(&server, &session_id, "list the files").await;

    let sent = send(&server, &session_id, "then summarize", pb::InputMode::Queue)
        .await
        .expect("queue");
    assert_eq!(sent.disposition, pb::InputDisposition::Queued as i32);
    assert_ne!(sent.execution_id, execution);
    assert_eq!(
        server.status(&sent.execution_id).await.state,
        pb::ExecutionState::Queued as i32
    );

    deny(&server, &request).await;
    server
        .wait_for_state(&sent.execution_id, pb::ExecutionState::Completed)
        .await;
    let first = server.status(&execution).await;
    let second = server.status(&sent.execution_id).await;
    assert_eq!(first.state, pb::ExecutionState::Completed as i32);
    assert_eq!(first.response, "First done.");
    assert_eq!(second.response, "Second done.");
    assert!(second.first_sequence > first.last_sequence, "runs after");
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        user_texts(&requests[1]),
        ["list the files"],
        "the running turn is not steered"
    );
    assert_eq!(
        user_texts(&requests[2]).last().map(String::as_str),
        Some("then summarize")
    );
}

#[tokio::test]
async fn interrupt_stops_the_running_turn_with_its_reason_and_runs_the_input_next() {
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(bash_call("c1"))
            .reply(text("Doing the other thing."))
            .reply(text("Earlier done.")),
    )
    .await
    .expect("model server");
    let server = server_for(&model).await;
    let session_id = session(&server, "interrupt").await;
    let (execution, _request) = waiting_turn(&server, &session_id, "list the files").await;
    // A turn queued before the interrupt waits behind the new one.
    let queued = server
        .submit(&session_id, "a turn queued earlier")
        .await
        .expect("submit");

    let sent = send(
        &server,
        &session_id,
        "stop, do the other thing",
        pb::InputMode::Interrupt,
    )
    .await
    .expect("interrupt");
    assert_eq!(sent.disposition, pb::InputDisposition::Interrupted as i32);
    assert_eq!(sent.interrupted_execution_id, execution);
    assert_ne!(sent.execution_id, execution);

    let stopped = server.status(&execution).await;
    assert_eq!(stopped.state, pb::ExecutionState::Cancelled as i32);
    assert!(
        stopped.error.contains(&sent.execution_id),
        "{}",
        stopped.error
    );
    let events = server
        .events(
            &session_id,
            stopped.first_sequence - 1,
            stopped.last_sequence,
        )
        .await;
    let done = turn_completed(&events);
    assert_eq!(done.outcome, pb::TurnOutcome::Cancelled as i32);
    assert_eq!(done.reason, "interrupted_by_input");
    assert!(
        events.iter().any(|e| matches!(
            &e.payload,
            Some(pb::session_event::Payload::ApprovalResolved(r))
                if r.resolution == pb::ApprovalResolution::Cancelled as i32
        )),
        "the pending approval ends with the turn"
    );

    server
        .wait_for_state(&sent.execution_id, pb::ExecutionState::Completed)
        .await;
    let next = server.status(&sent.execution_id).await;
    assert_eq!(next.response, "Doing the other thing.");
    assert!(next.first_sequence > stopped.last_sequence);
    // The input went ahead of the turn queued before it, which runs after.
    server
        .wait_for_state(&queued, pb::ExecutionState::Completed)
        .await;
    let earlier = server.status(&queued).await;
    assert_eq!(earlier.response, "Earlier done.");
    assert!(earlier.first_sequence > next.last_sequence);
    let requests = model.requests();
    assert_eq!(
        requests.len(),
        3,
        "the interrupted turn made no further call"
    );
    let users = user_texts(&requests[1]);
    assert_eq!(
        users.first().map(String::as_str),
        Some("list the files"),
        "the new turn is told what it interrupted"
    );
    assert_eq!(
        users.last().map(String::as_str),
        Some("stop, do the other thing")
    );
}

#[tokio::test]
async fn with_no_turn_running_every_mode_starts_a_turn() {
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(text("one"))
            .reply(text("two"))
            .reply(text("three")),
    )
    .await
    .expect("model server");
    let server = server_for(&model).await;
    let session_id = session(&server, "idle").await;
    let modes = [
        (pb::InputMode::Steer, "one"),
        (pb::InputMode::Queue, "two"),
        (pb::InputMode::Interrupt, "three"),
    ];
    for (mode, answer) in modes {
        let prompt = format!("{mode:?} while idle");
        let sent = send(&server, &session_id, &prompt, mode)
            .await
            .expect("send");
        assert_eq!(
            sent.disposition,
            pb::InputDisposition::Started as i32,
            "{mode:?}"
        );
        assert!(sent.interrupted_execution_id.is_empty());
        server
            .wait_for_state(&sent.execution_id, pb::ExecutionState::Completed)
            .await;
        let status = server.status(&sent.execution_id).await;
        assert_eq!(status.response, answer);
        let requests = model.requests();
        assert_eq!(
            user_texts(requests.last().expect("a request"))
                .last()
                .map(String::as_str),
            Some(prompt.as_str())
        );
    }
}

#[tokio::test]
async fn bad_input_is_refused_naming_what_is_wrong() {
    let server = TestServer::start().await;
    let session = server
        .session_on(&Project::replay("bad-input", &[r#"{"text": "hi"}"#]))
        .await;
    let steer = pb::InputMode::Steer as i32;

    let unknown = send_raw(&server, &uuid::Uuid::new_v4().to_string(), "hi", steer)
        .await
        .expect_err("unknown session");
    assert_eq!(unknown.code(), Code::NotFound, "{unknown:?}");

    let malformed = send_raw(&server, "not-a-session", "hi", steer)
        .await
        .expect_err("malformed id");
    assert_eq!(malformed.code(), Code::InvalidArgument);
    assert_eq!(bad_fields(&malformed), ["session_id"]);

    for text in ["", "   \n"] {
        let empty = send_raw(&server, &session.id, text, steer)
            .await
            .expect_err("empty text");
        assert_eq!(empty.code(), Code::InvalidArgument, "{empty:?}");
        assert_eq!(bad_fields(&empty), ["text"]);
    }

    let huge = "x".repeat(1024 * 1024 + 1);
    let oversized = send_raw(&server, &session.id, &huge, pb::InputMode::Queue as i32)
        .await
        .expect_err("oversized text");
    assert_eq!(oversized.code(), Code::InvalidArgument);
    assert_eq!(bad_fields(&oversized), ["text"]);
    assert!(
        oversized.message().contains("1048576"),
        "{}",
        oversized.message()
    );

    for mode in [pb::InputMode::Unspecified as i32, 99] {
        let refused = send_raw(&server, &session.id, "hi", mode)
            .await
            .expect_err("bad mode");
        assert_eq!(refused.code(), Code::InvalidArgument, "{mode}: {refused:?}");
        assert_eq!(bad_fields(&refused), ["mode"]);
    }
    // Nothing of it reached the session.
    assert_eq!(server.get_session(&session.id).await.last_sequence, 0);
}

/// Runs the CLI in-process; returns (exit code, stdout, stderr).
async fn odyssey(args: &[&str]) -> (i32, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
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

#[tokio::test]
async fn odyssey_send_steers_and_interrupts_and_prints_the_turn_to_follow() {
    let server = TestServer::start().await;
    let url = server.handle.url();
    let bash =
        r#"{"tool_calls": [{"id": "call_b", "name": "Bash", "arguments": {"command": "ls"}}]}"#;
    let project = Project::with_tools(
        "sendcli",
        &[bash, r#"{"text": "the new turn's answer"}"#],
        &["Bash"],
        "[]",
        "[Bash]",
        "[]",
    );
    let session_id = server.session_on(&project).await.id;
    let (execution, _) = waiting_turn(&server, &session_id, "list the files").await;

    let (code, out, err) =
        odyssey(&["--server", &url, "send", "--steer", &session_id, "more"]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), execution);
    assert!(
        err.contains(&format!("steered into the running turn {execution}")),
        "{err}"
    );

    let (code, out, err) = odyssey(&[
        "--server",
        &url,
        "--json",
        "send",
        "--interrupt",
        &session_id,
        "do this instead",
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    let sent: Value = serde_json::from_str(out.trim()).expect("one JSON line");
    assert_eq!(sent["disposition"], "INPUT_DISPOSITION_INTERRUPTED");
    assert_eq!(sent["interruptedExecutionId"], execution.as_str());
    let next = sent["executionId"]
        .as_str()
        .expect("execution id")
        .to_owned();
    server
        .wait_for_state(&next, pb::ExecutionState::Completed)
        .await;
    assert_eq!(server.status(&next).await.response, "the new turn's answer");

    // One mode is required, and only one.
    for flags in [vec![], vec!["--steer", "--queue"]] {
        let mut args = vec!["--server", url.as_str(), "send"];
        args.extend(flags);
        args.extend([session_id.as_str(), "text"]);
        let (code, _, err) = odyssey(&args).await;
        assert_ne!(code, 0, "{args:?}");
        assert!(err.contains("--steer") || err.contains("--queue"), "{err}");
    }
}

#[tokio::test]
async fn the_rust_sdk_queues_behind_a_waiting_turn_and_decodes_a_refusal() {
    let server = TestServer::start().await;
    let client = odyssey_client::OdysseyClient::connect_with(
        server.handle.url(),
        odyssey_client::ConnectOptions::new(),
    )
    .await
    .expect("connect");
    let bash =
        r#"{"tool_calls": [{"id": "call_b", "name": "Bash", "arguments": {"command": "ls"}}]}"#;
    let project = Project::with_tools("sdkinput", &[bash], &["Bash"], "[]", "[Bash]", "[]");
    let session_id = server.session_on(&project).await.id;
    let (execution, _) = waiting_turn(&server, &session_id, "list the files").await;

    let queued = client
        .send_input(&session_id, "and then this", pb::InputMode::Queue)
        .await
        .expect("queue");
    assert_eq!(queued.disposition, pb::InputDisposition::Queued as i32);
    assert_ne!(queued.execution_id, execution);
    assert_eq!(
        client
            .execution_status(&queued.execution_id)
            .await
            .expect("status")
            .state,
        pb::ExecutionState::Queued as i32
    );

    let refused = client
        .send_input(
            &session_id,
            "x".repeat(1024 * 1024 + 1).as_str(),
            pb::InputMode::Steer,
        )
        .await
        .expect_err("oversized");
    assert_eq!(refused.code(), Some(Code::InvalidArgument));
    let details = refused.details().expect("details");
    assert_eq!(details.reason, "INVALID_ARGUMENT");
    for id in [queued.execution_id, execution] {
        client.cancel_execution(&id).await.expect("cancel");
    }
}

/// Regression guard for the seam between a turn's last model call and its end: input that
/// arrives while the model streams what would be its final answer is not dropped, the
/// turn asks the model once more with it.
#[tokio::test]
async fn input_steered_while_the_final_answer_streams_gets_one_more_model_call() {
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(
                StreamBuilder::new()
                    .text("Here is the summary.", 1)
                    .pause(Duration::from_millis(1500))
                    .finish("stop")
                    .done()
                    .build(),
            )
            .reply(text("Shorter: done.")),
    )
    .await
    .expect("model server");
    let server = server_for(&model).await;
    let session_id = session(&server, "late").await;
    let execution = server
        .submit(&session_id, "summarize")
        .await
        .expect("submit");
    for _ in 0..200 {
        if !model.requests().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(model.requests().len(), 1, "the first answer is streaming");
    let sent = send(
        &server,
        &session_id,
        "make it shorter",
        pb::InputMode::Steer,
    )
    .await
    .expect("steer");
    assert_eq!(sent.disposition, pb::InputDisposition::Steered as i32);
    assert_eq!(sent.execution_id, execution);

    server
        .wait_for_state(&execution, pb::ExecutionState::Completed)
        .await;
    assert_eq!(server.status(&execution).await.response, "Shorter: done.");
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(roles(&requests[1]), ["system", "user", "assistant", "user"]);
    assert_eq!(user_texts(&requests[1]), ["summarize", "make it shorter"]);
}

#[tokio::test]
async fn a_turn_waiting_for_an_approval_holds_a_bounded_number_of_steered_inputs() {
    let server = TestServer::start().await;
    let bash =
        r#"{"tool_calls": [{"id": "call_b", "name": "Bash", "arguments": {"command": "ls"}}]}"#;
    let project = Project::with_tools("bounded", &[bash], &["Bash"], "[]", "[Bash]", "[]");
    let session_id = server.session_on(&project).await.id;
    let (execution, _) = waiting_turn(&server, &session_id, "list the files").await;
    for i in 0..odyssey_runtime::execution::MAX_WAITING_INPUTS {
        let sent = send(
            &server,
            &session_id,
            &format!("note {i}"),
            pb::InputMode::Steer,
        )
        .await
        .expect("steer");
        assert_eq!(sent.execution_id, execution);
    }
    let refused = send(&server, &session_id, "one too many", pb::InputMode::Steer)
        .await
        .expect_err("too many waiting");
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert_eq!(
        crate::support::error_reason(&refused).as_deref(),
        Some("INPUTS_WAITING")
    );
    // Queue mode is not bounded by it.
    let queued = send(&server, &session_id, "one too many", pb::InputMode::Queue)
        .await
        .expect("queue");
    assert_eq!(queued.disposition, pb::InputDisposition::Queued as i32);
    for id in [queued.execution_id, execution] {
        server
            .executions()
            .cancel_execution(pb::CancelExecutionRequest { execution_id: id })
            .await
            .expect("cancel");
    }
}
