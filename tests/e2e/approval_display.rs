//! Issue 23: what a person approves is what runs. Every tool's `permission_requested`
//! carries a display form with control characters as visible escapes, and a Bash command
//! holding them always asks, whatever the rules or an earlier `allow_always` say.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use odyssey_api::v1 as pb;
use odyssey_api::v1::approval_service_client::ApprovalServiceClient;
use serde_json::{Value, json};

use odyssey_runtime::events::{ApprovalDecision, EventPayload};
use odyssey_runtime::provider::ToolSpec;
use odyssey_runtime::tools::{Tool, ToolContext, ToolOutput};
use odyssey_runtime::{
    ExecutionRequest, ExecutionState, InstallOptions, OdysseyRuntime, PageRequest, RuntimeConfig,
    SessionSpec,
};

use crate::support::{Project, TestServer};

/// The command of the issue: on a terminal `\r` returns to the line's start and `ESC[2K`
/// erases it, so the line is drawn as `ls -la`.
const HIDDEN: &str = "rm -rf ~/important \r\x1b[2Kls -la";
const HIDDEN_SHOWN: &str = "rm -rf ~/important \\r\\x1b[2Kls -la";

/// A host tool that is not read-only, so the agent's ask rule applies to it like to the
/// builtins.
struct Echo;

impl Tool for Echo {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "Echo".into(),
            description: "Echoes `text`.".into(),
            parameters: json!({ "type": "object", "properties": { "text": { "type": "string" } } }),
        }
    }

    fn call(&self, _ctx: ToolContext, arguments: Value) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move { ToolOutput::ok(arguments.to_string()) })
    }
}

/// Each tool, the arguments the model sends it, and what the display form must show.
fn calls() -> Vec<(&'static str, Value, &'static str)> {
    vec![
        ("Bash", json!({ "command": HIDDEN }), HIDDEN_SHOWN),
        (
            "Read",
            json!({ "path": "notes\x1b[2J.md" }),
            "notes\\x1b[2J.md",
        ),
        (
            "Write",
            json!({ "path": "out\r.md", "content": "hello" }),
            "out\\r.md",
        ),
        (
            "Edit",
            json!({ "path": "a\u{202e}dm.txt", "old_text": "a", "new_text": "b" }),
            "a\\u202edm.txt",
        ),
        (
            "LS",
            json!({ "path": "dir\x1b]52;c;cm0gLXJm\x07" }),
            "dir\\x1b]52;c;cm0gLXJm\\x07",
        ),
        ("Glob", json!({ "pattern": "*\u{9b}2J" }), "*\\u009b2J"),
        (
            "Grep",
            json!({ "pattern": "x\x7f", "path": "." }),
            "pattern: x\\x7f",
        ),
        ("Skill", json!({ "name": "s\x1b[31m" }), "s\\x1b[31m"),
        (
            "UpdatePlan",
            json!({ "steps": [{ "text": "ship \u{2066}it", "status": "pending" }] }),
            "ship \\u2066it",
        ),
        (
            "Echo",
            json!({ "text": "e\x1b]0;TITLE\x07" }),
            "text: e\\x1b]0;TITLE\\x07",
        ),
    ]
}

/// A replay agent that asks for every call, in one model answer, then says it is done.
fn every_tool_project() -> Project {
    let tool_calls: Vec<Value> = calls()
        .into_iter()
        .enumerate()
        .map(|(i, (name, arguments, _))| json!({ "id": format!("call_{i}"), "name": name, "arguments": arguments }))
        .collect();
    let cassette = [
        json!({ "tool_calls": tool_calls }).to_string(),
        json!({ "text": "done" }).to_string(),
    ];
    let project = Project::empty();
    let names: Vec<&str> = calls().iter().map(|(name, _, _)| *name).collect();
    let tools: String = names
        .iter()
        .map(|name| {
            let source = if *name == "Echo" { "host" } else { "builtin" };
            format!("    - {{ name: {name}, source: {source} }}\n")
        })
        .collect();
    project.write(
        "odyssey.bundle.yaml",
        &format!("apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: shown\n  version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      default: true\n  tools:\n{tools}  sandbox:\n    mode: workspace_write\n"),
    );
    project.write(
        "agents/main/agent.yaml",
        &format!("apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\n  version: 0.1.0\nspec:\n  kind: prompt\n  prompt: Ask.\n  model:\n    provider: replay\n    name: main\n  tools:\n    ask: [{}]\n", names.join(", ")),
    );
    project.write(
        "cassettes/main.jsonl",
        &format!("{}\n", cassette.join("\n")),
    );
    project
}

/// Issue 23: the display form is covered for every tool's `permission_requested`
/// (Bash, Read, Write, Edit, LS, Glob, Grep, Skill, UpdatePlan and a host tool): it shows
/// each hostile argument as escapes, holds no control character itself, says there were
/// some, and is the same in the pending request a client lists.
#[tokio::test]
async fn every_tools_approval_request_carries_an_escaped_display_form() {
    let home = tempfile::tempdir().expect("home");
    let runtime = OdysseyRuntime::builder(RuntimeConfig::with_home(home.path()))
        .tool(Arc::new(Echo))
        .start()
        .await
        .expect("runtime starts");
    let bundle = runtime
        .build_and_install(every_tool_project().path(), InstallOptions::default())
        .await
        .expect("bundle installs");
    let session = runtime
        .create_session(SessionSpec::new(bundle.id.to_string()))
        .await
        .expect("session");
    let handle = runtime
        .submit(ExecutionRequest {
            session_id: session.record.id,
            prompt: "call everything".into(),
            ..Default::default()
        })
        .await
        .expect("submitted");
    // Deny each request as it comes; each listed request shows what its event shows.
    let mut listed = Vec::new();
    while listed.len() < calls().len() {
        let page = runtime
            .list_approvals(Some(session.record.id), PageRequest::default())
            .expect("list approvals");
        let Some(approval) = page.items.into_iter().next() else {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        runtime
            .resolve_approval(&approval.request_id, ApprovalDecision::Deny, String::new())
            .expect("denied");
        listed.push(approval);
    }
    let status = runtime.wait(handle.execution_id).await.expect("turn ends");
    assert_eq!(status.state, ExecutionState::Completed, "{status:?}");

    let mut subscription = runtime
        .subscribe_session(session.record.id, 0)
        .await
        .expect("subscribe");
    let mut requests = Vec::new();
    while subscription.cursor() < status.last_sequence {
        let batch = tokio::time::timeout(Duration::from_secs(10), subscription.next_batch())
            .await
            .expect("events keep coming")
            .expect("readable")
            .expect("session exists");
        for event in batch {
            if let EventPayload::PermissionRequested {
                tool,
                display,
                control_characters,
                ..
            } = &event.payload
            {
                requests.push((tool.clone(), display.clone(), *control_characters));
            }
        }
    }
    let expected = calls();
    assert_eq!(requests.len(), expected.len(), "{requests:?}");
    for ((tool, display, control), (name, _, shown)) in requests.iter().zip(&expected) {
        assert_eq!(tool, name);
        assert!(
            display.contains(shown),
            "{tool}: {display:?} lacks {shown:?}"
        );
        assert!(
            !odyssey_visible::has_controls(display),
            "{tool}: {display:?}"
        );
        assert!(control, "{tool}: the control characters are flagged");
    }
    for (approval, (_, display, control)) in listed.iter().zip(&requests) {
        assert_eq!(&approval.request.display.text, display);
        assert_eq!(approval.request.display.control_characters, *control);
    }
    runtime.shutdown(Duration::from_secs(5)).await;
}

fn hidden_call() -> String {
    json!({ "tool_calls": [{ "id": "call_h", "name": "Bash", "arguments": { "command": HIDDEN } }] })
        .to_string()
}

/// The first pending request of a session, over gRPC.
async fn first_pending(server: &TestServer, session_id: &str) -> pb::Approval {
    let mut client = ApprovalServiceClient::new(server.channel.clone());
    for _ in 0..400 {
        let listed = client
            .list_approvals(pb::ListApprovalsRequest {
                session_id: session_id.into(),
                ..Default::default()
            })
            .await
            .expect("list approvals")
            .into_inner()
            .approvals;
        if let Some(first) = listed.into_iter().next() {
            return first;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no approval request appeared");
}

/// Issue 23: a Bash command with control characters asks though a rule allows every Bash
/// command, and again after a person allowed it always: the line a rule or a person
/// approved may not be the one a terminal drew. Over gRPC, the request carries the
/// display form.
#[tokio::test]
async fn a_command_with_control_characters_asks_whatever_the_rules_and_earlier_answers() {
    let server = TestServer::start().await;
    let session = server
        .session_on(&Project::with_tools(
            "alwaysasks",
            &[
                &hidden_call(),
                r#"{"text": "one"}"#,
                &hidden_call(),
                r#"{"text": "two"}"#,
            ],
            &["Bash"],
            "[Bash]",
            "[]",
            "[]",
        ))
        .await;
    let mut client = ApprovalServiceClient::new(server.channel.clone());
    for (turn, decision) in [
        ("first", pb::ApprovalDecision::AllowAlways),
        ("second", pb::ApprovalDecision::Deny),
    ] {
        let execution = server.submit(&session.id, turn).await.expect("submit");
        server
            .wait_for_state(&execution, pb::ExecutionState::WaitingApproval)
            .await;
        let pending = first_pending(&server, &session.id).await;
        assert_eq!(pending.display, HIDDEN_SHOWN, "{turn}");
        assert!(pending.control_characters, "{turn}");
        client
            .resolve_approval(pb::ResolveApprovalRequest {
                request_id: pending.request_id.clone(),
                decision: decision as i32,
                reason: String::new(),
                ..Default::default()
            })
            .await
            .expect("resolve");
        server
            .wait_for_state(&execution, pb::ExecutionState::Completed)
            .await;
    }
    let last = server.get_session(&session.id).await.last_sequence;
    let events = server.events(&session.id, 0, last).await;
    let requests: Vec<&pb::PermissionRequested> = events
        .iter()
        .filter_map(|e| match &e.payload {
            Some(pb::session_event::Payload::PermissionRequested(p)) => Some(p),
            _ => None,
        })
        .collect();
    assert_eq!(requests.len(), 2, "asked both times");
    for request in requests {
        assert_eq!(request.display, HIDDEN_SHOWN);
        assert!(request.control_characters);
        assert!(
            request.reason.contains("contains control characters"),
            "{}",
            request.reason
        );
    }
}
