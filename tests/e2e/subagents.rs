//! Sub-agents: the builtin `Agent` tool starts a child session on another agent of the
//! bundle, runs a turn on it and answers with its result. Models are the loopback OpenAI
//! wire server, answering each agent by the model it runs and how far its turn is.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use odyssey_api::v1 as pb;
use odyssey_api::v1::approval_service_client::ApprovalServiceClient;
use odyssey_runtime::provider::ProviderSettings;
use odyssey_testing::openai_wire::{OpenAiWireServer, Reply, Script, StreamBuilder, WireUsage};
use pb::session_event::Payload;
use serde_json::Value;

use crate::support::{Project, TestServer, first_payload};

const KEY: &str = "sk-test-loopback-key-subagents";

/// One model reply making the given tool calls `(id, tool, arguments)` at once.
fn calls(calls: &[(&str, &str, &str)]) -> Reply {
    let indexed: Vec<(u64, &str, &str, &str)> = calls
        .iter()
        .enumerate()
        .map(|(i, (id, tool, args))| (i as u64, *id, *tool, *args))
        .collect();
    StreamBuilder::new()
        .tool_calls(&indexed, 2)
        .finish("tool_calls")
        .usage(WireUsage {
            prompt_tokens: 10,
            completion_tokens: 5,
            ..WireUsage::default()
        })
        .done()
        .build()
}

fn text(answer: &str) -> Reply {
    StreamBuilder::new()
        .text(answer, 1)
        .finish("stop")
        .usage(WireUsage {
            prompt_tokens: 10,
            completion_tokens: 5,
            ..WireUsage::default()
        })
        .done()
        .build()
}

/// Answers each request by its model (one per agent) and the number of tool results
/// after its last user message: step `n` of that agent's turn gets `steps[model][n]`;
/// past the end, the last tool result echoed as the answer.
fn model_server(steps: HashMap<&'static str, Vec<Reply>>) -> Script {
    let steps = Arc::new(steps);
    Script::respond(KEY, move |body: &Value| {
        let model = body["model"].as_str().unwrap_or_default();
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let since_user: Vec<&Value> = messages
            .iter()
            .rev()
            .take_while(|m| m["role"] != "user")
            .collect();
        let step = since_user
            .iter()
            .filter(|m| m["role"] == "assistant")
            .count();
        match steps.get(model).and_then(|s| s.get(step)) {
            Some(reply) => reply.clone(),
            None => {
                let last = since_user
                    .first()
                    .and_then(|m| m["content"].as_str())
                    .unwrap_or_default();
                text(&format!("result: {last}"))
            }
        }
    })
}

async fn server_for(
    model: &OpenAiWireServer,
    configure: impl FnOnce(&mut odyssey_runtime::RuntimeConfig) + Send + 'static,
) -> TestServer {
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
            configure(config);
        },
    )
    .await
}

/// An agent of a bundle: its id, the agents it delegates to, its rules (YAML flow lists).
struct AgentDef {
    id: &'static str,
    delegates: &'static str,
    allow: &'static str,
    deny: &'static str,
}

/// A bundle whose agents each run on the `openai` model named after them.
fn bundle(name: &str, tools: &[&str], agents: &[AgentDef]) -> Project {
    let project = Project::empty();
    let tools: String = tools
        .iter()
        .map(|t| format!("    - {{ name: {t}, source: builtin }}\n"))
        .collect();
    let refs: String = agents
        .iter()
        .enumerate()
        .map(|(i, a)| {
            format!(
                "    - id: {}\n      spec: agents/{}/agent.yaml\n      default: {}\n",
                a.id,
                a.id,
                i == 0
            )
        })
        .collect();
    project.write(
        "odyssey.bundle.yaml",
        &format!(
            "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: {name}\n  version: 0.1.0\nspec:\n  agents:\n{refs}  tools:\n{tools}  sandbox:\n    mode: workspace_write\n"
        ),
    );
    for a in agents {
        project.write(
            &format!("agents/{}/agent.yaml", a.id),
            &format!(
                "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: {id}\n  description: the {id}\nspec:\n  kind: prompt\n  prompt: You are the {id}.\n  model:\n    provider: openai\n    name: {id}\n  delegates: {delegates}\n  tools:\n    allow: {allow}\n    deny: {deny}\n",
                id = a.id,
                delegates = a.delegates,
                allow = a.allow,
                deny = a.deny,
            ),
        );
    }
    project
}

/// The planner delegates to the coder; both may use the file tools.
fn planner_and_coder(name: &str) -> Project {
    bundle(
        name,
        &["Read", "Write", "Agent"],
        &[
            AgentDef {
                id: "planner",
                delegates: "[coder]",
                allow: "[Read, Write, Agent]",
                deny: "[]",
            },
            AgentDef {
                id: "coder",
                delegates: "[]",
                allow: "[Read, Write]",
                deny: "[]",
            },
        ],
    )
}

async fn children_of(server: &TestServer, parent: &str) -> Vec<pb::Session> {
    server
        .sessions()
        .list_sessions(pb::ListSessionsRequest {
            parent_session_id: parent.into(),
            ..Default::default()
        })
        .await
        .expect("list children")
        .into_inner()
        .sessions
}

async fn all_events(server: &TestServer, session: &str) -> Vec<pb::SessionEvent> {
    let last = server.get_session(session).await.last_sequence;
    server.events(session, 0, last).await
}

/// A server whose planner delegates to a coder whose model never answers: the child runs
/// until something stops it. The model server is returned too, to keep it up.
async fn stuck_child_server() -> (OpenAiWireServer, TestServer) {
    let stuck = StreamBuilder::new()
        .pause(Duration::from_secs(120))
        .text("never", 1)
        .finish("stop")
        .done()
        .build();
    let model = OpenAiWireServer::start(model_server(HashMap::from([
        (
            "planner",
            vec![calls(&[(
                "call-agent",
                "Agent",
                r#"{"agent": "coder", "prompt": "Take forever"}"#,
            )])],
        ),
        ("coder", vec![stuck]),
    ])))
    .await
    .expect("loopback model");
    let server = server_for(&model, |_| {}).await;
    (model, server)
}

/// The parent's child session, once it is running.
async fn running_child(server: &TestServer, parent: &str) -> pb::Session {
    for _ in 0..400 {
        if let Some(child) = children_of(server, parent).await.pop()
            && child.state == pb::SessionState::Running as i32
        {
            return child;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the child runs")
}

/// The child's `turn_completed`, once its log has it.
async fn child_turn_end(server: &TestServer, child: &str) -> pb::TurnCompleted {
    for _ in 0..400 {
        let events = all_events(server, child).await;
        if let Some(done) = first_payload!(events, TurnCompleted) {
            return done;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the child's turn ended")
}

fn tool_results(events: &[pb::SessionEvent]) -> Vec<(String, bool, String)> {
    events
        .iter()
        .filter_map(|e| match &e.payload {
            Some(Payload::ToolCallFinished(f)) => {
                Some((f.tool.clone(), f.success, f.result.clone()))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_planner_delegates_to_a_coder_who_writes_a_file_the_planner_then_reads() {
    let model = OpenAiWireServer::start(model_server(HashMap::from([
        (
            "planner",
            vec![
                calls(&[(
                    "call-agent",
                    "Agent",
                    r#"{"agent": "coder", "prompt": "Write hello.txt saying hi from the coder", "workspace": "shared"}"#,
                )]),
                calls(&[("call-read", "Read", r#"{"path": "hello.txt"}"#)]),
            ],
        ),
        (
            "coder",
            vec![
                calls(&[(
                    "call-write",
                    "Write",
                    r#"{"path": "hello.txt", "content": "hi from the coder\n"}"#,
                )]),
                text("I wrote hello.txt."),
            ],
        ),
    ])))
    .await
    .expect("loopback model");
    let server = server_for(&model, |_| {}).await;
    let parent = server.session_on(&planner_and_coder("plan-code")).await;

    let status = server.run(&parent.id, "Get hello.txt written").await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    assert!(
        status.response.contains("hi from the coder"),
        "the planner read the coder's file: {status:?}"
    );

    // The child: linked to its parent and its call, listed under it, a turn of its own.
    let children = children_of(&server, &parent.id).await;
    assert_eq!(children.len(), 1, "{children:?}");
    let child = &children[0];
    assert_eq!(child.parent_session_id, parent.id);
    assert_eq!(child.parent_call_id, "call-agent");
    assert_eq!(child.agent_id, "coder");
    assert_eq!(child.turn_count, 1);
    let fetched = server.get_session(&child.id).await;
    assert_eq!(fetched.parent_session_id, parent.id);
    assert!(
        server
            .get_session(&parent.id)
            .await
            .parent_session_id
            .is_empty(),
        "a client's session has no parent"
    );
    let child_events = all_events(&server, &child.id).await;
    let child_results = tool_results(&child_events);
    assert_eq!(child_results.len(), 1, "{child_results:?}");
    assert_eq!(child_results[0].0, "Write");
    assert!(child_results[0].1, "{child_results:?}");

    // The parent's log: the Agent call, its start and end, the child's answer as result.
    let events = all_events(&server, &parent.id).await;
    let started = first_payload!(events, SubagentStarted).expect("subagent_started");
    assert_eq!(started.child_session_id, child.id);
    assert_eq!(started.call_id, "call-agent");
    assert_eq!(started.agent_id, "coder");
    assert_eq!(started.workspace, "shared");
    let finished = first_payload!(events, SubagentFinished).expect("subagent_finished");
    assert_eq!(finished.child_session_id, child.id);
    assert_eq!(finished.child_turn_id, started.child_turn_id);
    assert_eq!(finished.outcome, pb::TurnOutcome::Completed as i32);
    let child_usage = finished.usage.expect("child usage");
    assert_eq!(child_usage.input_tokens, 20, "two model calls of the child");
    let results = tool_results(&events);
    assert_eq!(results[0].0, "Agent");
    assert!(results[0].1, "{results:?}");
    assert_eq!(results[0].2, "I wrote hello.txt.");

    // The child's tokens count in the parent's: three model calls of its own, two of the
    // child's.
    let usage = server
        .get_session(&parent.id)
        .await
        .usage
        .expect("parent usage");
    assert_eq!(usage.input_tokens, 50, "{usage:?}");
}

#[tokio::test]
async fn a_fresh_workspace_is_the_default_and_keeps_the_childs_files_apart() {
    let model = OpenAiWireServer::start(model_server(HashMap::from([
        (
            "planner",
            vec![
                calls(&[(
                    "call-agent",
                    "Agent",
                    r#"{"agent": "coder", "prompt": "Write apart.txt"}"#,
                )]),
                calls(&[("call-read", "Read", r#"{"path": "apart.txt"}"#)]),
            ],
        ),
        (
            "coder",
            vec![
                calls(&[(
                    "call-write",
                    "Write",
                    r#"{"path": "apart.txt", "content": "the coder's own\n"}"#,
                )]),
                text("Done."),
            ],
        ),
    ])))
    .await
    .expect("loopback model");
    let server = server_for(&model, |_| {}).await;
    let parent = server.session_on(&planner_and_coder("plan-fresh")).await;
    let status = server.run(&parent.id, "Work apart").await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    let events = all_events(&server, &parent.id).await;
    let started = first_payload!(events, SubagentStarted).expect("subagent_started");
    assert_eq!(started.workspace, "fresh");
    let results = tool_results(&events);
    let read = results.iter().find(|r| r.0 == "Read").expect("read");
    assert!(
        !read.1,
        "the parent does not see the child's file: {read:?}"
    );
    let sandbox = server.home().join("sandbox");
    assert!(
        sandbox
            .join(&started.child_session_id)
            .join("data/apart.txt")
            .is_file()
    );
    assert!(!sandbox.join(&parent.id).join("data/apart.txt").exists());
}

#[tokio::test]
async fn sub_agents_nest_no_deeper_than_the_servers_limit() {
    let model = OpenAiWireServer::start(model_server(HashMap::from([
        (
            "alpha",
            vec![calls(&[(
                "a1",
                "Agent",
                r#"{"agent": "beta", "prompt": "Ask alpha again"}"#,
            )])],
        ),
        (
            "beta",
            vec![calls(&[(
                "b1",
                "Agent",
                r#"{"agent": "alpha", "prompt": "Go deeper"}"#,
            )])],
        ),
    ])))
    .await
    .expect("loopback model");
    let server = server_for(&model, |config| config.max_subagent_depth = 1).await;
    let limits = server
        .server()
        .get_server_info(pb::GetServerInfoRequest {})
        .await
        .expect("server info")
        .into_inner()
        .limits
        .expect("limits");
    assert_eq!(limits.max_subagent_depth, 1);
    assert_eq!(limits.max_concurrent_subagents, 4);
    let project = bundle(
        "nesting",
        &["Agent"],
        &[
            AgentDef {
                id: "alpha",
                delegates: "[beta]",
                allow: "[Agent]",
                deny: "[]",
            },
            AgentDef {
                id: "beta",
                delegates: "[alpha]",
                allow: "[Agent]",
                deny: "[]",
            },
        ],
    );
    let root = server.session_on(&project).await;
    let status = server.run(&root.id, "Delegate").await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    let children = children_of(&server, &root.id).await;
    assert_eq!(children.len(), 1, "{children:?}");
    let beta = &children[0];
    assert!(
        children_of(&server, &beta.id).await.is_empty(),
        "nothing was started below the limit"
    );
    let beta_results = tool_results(&all_events(&server, &beta.id).await);
    assert_eq!(beta_results.len(), 1, "{beta_results:?}");
    assert!(!beta_results[0].1, "{beta_results:?}");
    assert!(
        beta_results[0].2.contains("nest at most 1 deep"),
        "{beta_results:?}"
    );
}

#[tokio::test]
async fn with_one_worker_a_parent_waiting_for_two_children_does_not_deadlock() {
    let model = OpenAiWireServer::start(model_server(HashMap::from([
        (
            "planner",
            vec![calls(&[
                ("c1", "Agent", r#"{"agent": "coder", "prompt": "Part one"}"#),
                ("c2", "Agent", r#"{"agent": "coder", "prompt": "Part two"}"#),
            ])],
        ),
        ("coder", vec![text("part done")]),
    ])))
    .await
    .expect("loopback model");
    let server = server_for(&model, |config| config.worker_count = 1).await;
    let parent = server.session_on(&planner_and_coder("one-worker")).await;
    let status = tokio::time::timeout(Duration::from_secs(60), server.run(&parent.id, "Two parts"))
        .await
        .expect("the turn ends: no deadlock");
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    assert_eq!(children_of(&server, &parent.id).await.len(), 2);
    let results = tool_results(&all_events(&server, &parent.id).await);
    let agents: Vec<&(String, bool, String)> = results.iter().filter(|r| r.0 == "Agent").collect();
    assert_eq!(agents.len(), 2, "{results:?}");
    assert!(
        agents.iter().all(|r| r.1 && r.2 == "part done"),
        "{results:?}"
    );
}

#[tokio::test]
async fn parallel_agent_calls_of_one_step_run_at_the_same_time() {
    let slow = StreamBuilder::new()
        .pause(Duration::from_millis(600))
        .text("slow part done", 1)
        .finish("stop")
        .done()
        .build();
    let model = OpenAiWireServer::start(model_server(HashMap::from([
        (
            "planner",
            vec![calls(&[
                ("c1", "Agent", r#"{"agent": "coder", "prompt": "One"}"#),
                ("c2", "Agent", r#"{"agent": "coder", "prompt": "Two"}"#),
            ])],
        ),
        ("coder", vec![slow]),
    ])))
    .await
    .expect("loopback model");
    let server = server_for(&model, |config| config.worker_count = 4).await;
    let parent = server.session_on(&planner_and_coder("parallel")).await;
    let status = server.run(&parent.id, "Two at once").await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    let children = children_of(&server, &parent.id).await;
    assert_eq!(children.len(), 2);
    // Each child's turn started before the other's ended.
    let mut spans = Vec::new();
    for child in &children {
        let events = all_events(&server, &child.id).await;
        let at = |kind: &str| {
            events
                .iter()
                .find(|e| crate::support::payload_kind(e) == kind)
                .and_then(|e| e.created_at)
                .map(|t| t.seconds as i128 * 1_000_000_000 + t.nanos as i128)
                .expect("timestamp")
        };
        spans.push((at("turn_started"), at("turn_completed")));
    }
    assert!(
        spans[0].0 < spans[1].1 && spans[1].0 < spans[0].1,
        "the children overlapped: {spans:?}"
    );
}

#[tokio::test]
async fn a_childs_sandbox_and_rules_are_never_wider_than_its_parents() {
    let model = OpenAiWireServer::start(model_server(HashMap::from([
        (
            "planner",
            vec![calls(&[(
                "call-agent",
                "Agent",
                r#"{"agent": "coder", "prompt": "Write the secret"}"#,
            )])],
        ),
        (
            "coder",
            vec![calls(&[(
                "call-write",
                "Write",
                r#"{"path": "secret.txt", "content": "x"}"#,
            )])],
        ),
    ])))
    .await
    .expect("loopback model");
    let server = server_for(&model, |_| {}).await;
    // The planner denies writing the secret; the coder's own rules allow every write.
    let project = bundle(
        "narrowed",
        &["Write", "Agent"],
        &[
            AgentDef {
                id: "planner",
                delegates: "[coder]",
                allow: "[Agent]",
                deny: "[\"Write(secret.txt)\"]",
            },
            AgentDef {
                id: "coder",
                delegates: "[]",
                allow: "[Write]",
                deny: "[]",
            },
        ],
    );
    server.install(&project).await;
    let parent = server
        .sessions()
        .create_session(pb::CreateSessionRequest {
            bundle_reference: "narrowed@0.1.0".into(),
            sandbox_mode: pb::SandboxMode::ReadOnly as i32,
            approval_policy: pb::ApprovalPolicy::Never as i32,
            ..Default::default()
        })
        .await
        .expect("session")
        .into_inner()
        .session
        .expect("session");
    let status = server.run(&parent.id, "Delegate the secret").await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    let child = children_of(&server, &parent.id).await.remove(0);
    assert_eq!(
        child.sandbox_mode,
        pb::SandboxMode::ReadOnly as i32,
        "the bundle's workspace_write narrowed to the parent's read_only"
    );
    assert_eq!(child.approval_policy, pb::ApprovalPolicy::Never as i32);
    let results = tool_results(&all_events(&server, &child.id).await);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(!results[0].1, "the parent's deny still denies: {results:?}");
    assert!(
        results[0].2.contains("parent agent `planner`"),
        "{results:?}"
    );
    assert!(
        !server
            .home()
            .join("sandbox")
            .join(&child.id)
            .join("data/secret.txt")
            .exists()
    );
}

#[tokio::test]
async fn cancelling_the_parent_cancels_its_running_child() {
    let (_model, server) = stuck_child_server().await;
    let parent = server.session_on(&planner_and_coder("cancelled")).await;
    let execution = server
        .submit(&parent.id, "Start a slow child")
        .await
        .expect("submitted");
    let child = running_child(&server, &parent.id).await;
    server
        .executions()
        .cancel_execution(pb::CancelExecutionRequest {
            execution_id: execution.clone(),
        })
        .await
        .expect("cancel");
    server
        .wait_for_state(&execution, pb::ExecutionState::Cancelled)
        .await;
    let child_end = child_turn_end(&server, &child.id).await;
    assert_eq!(child_end.outcome, pb::TurnOutcome::Cancelled as i32);
    let events = all_events(&server, &parent.id).await;
    let finished = first_payload!(events, SubagentFinished).expect("subagent_finished");
    assert_eq!(finished.outcome, pb::TurnOutcome::Cancelled as i32);
    assert_eq!(finished.child_session_id, child.id);
}

#[tokio::test]
async fn an_approval_raised_in_a_child_shows_its_chain_of_parents() {
    let model = OpenAiWireServer::start(model_server(HashMap::from([
        (
            "planner",
            vec![calls(&[(
                "call-agent",
                "Agent",
                r#"{"agent": "coder", "prompt": "Write, with approval"}"#,
            )])],
        ),
        (
            "coder",
            vec![
                calls(&[(
                    "call-write",
                    "Write",
                    r#"{"path": "asked.txt", "content": "approved\n"}"#,
                )]),
                text("written"),
            ],
        ),
    ])))
    .await
    .expect("loopback model");
    let server = server_for(&model, |config| config.worker_count = 1).await;
    let project = bundle(
        "asking",
        &["Write", "Agent"],
        &[
            AgentDef {
                id: "planner",
                delegates: "[coder]",
                allow: "[Agent]",
                deny: "[]",
            },
            AgentDef {
                id: "coder",
                delegates: "[]",
                allow: "[]",
                deny: "[]",
            },
        ],
    );
    let parent = server.session_on(&project).await;
    let execution = server.submit(&parent.id, "Delegate").await.expect("submit");
    let mut approvals = ApprovalServiceClient::new(server.channel.clone());
    let mut pending = None;
    for _ in 0..400 {
        let listed = approvals
            .list_approvals(pb::ListApprovalsRequest::default())
            .await
            .expect("list approvals")
            .into_inner()
            .approvals;
        if let Some(approval) = listed.into_iter().next() {
            pending = Some(approval);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let approval = pending.expect("the child asks");
    let child = children_of(&server, &parent.id).await.remove(0);
    assert_eq!(approval.session_id, child.id);
    assert_eq!(approval.tool, "Write");
    assert_eq!(approval.parent_session_ids, vec![parent.id.clone()]);
    approvals
        .resolve_approval(pb::ResolveApprovalRequest {
            request_id: approval.request_id,
            decision: pb::ApprovalDecision::AllowOnce as i32,
            ..Default::default()
        })
        .await
        .expect("resolve");
    server
        .wait_for_state(&execution, pb::ExecutionState::Completed)
        .await;
    assert_eq!(server.status(&execution).await.response, "result: written");
}

#[tokio::test]
async fn a_bundle_whose_delegates_are_unknown_or_itself_is_refused_naming_the_field() {
    let server = TestServer::start().await;
    for (delegates, expected) in [
        ("[nobody]", "`nobody` is not an agent of this bundle"),
        ("[planner]", "cannot delegate to itself"),
    ] {
        let project = bundle(
            "bad-delegates",
            &["Agent"],
            &[
                AgentDef {
                    id: "planner",
                    delegates,
                    allow: "[]",
                    deny: "[]",
                },
                AgentDef {
                    id: "coder",
                    delegates: "[]",
                    allow: "[]",
                    deny: "[]",
                },
            ],
        );
        let err = crate::support::build(&mut server.bundles(), project.archive(), "", false)
            .await
            .expect_err("refused");
        assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");
        assert!(
            err.message().contains("agents/planner/agent.yaml")
                && err.message().contains("spec.delegates[0]")
                && err.message().contains(expected),
            "{err:?}"
        );
    }
}

#[tokio::test]
async fn the_rust_sdk_lists_a_sessions_sub_agents_and_reads_their_events() {
    use odyssey_client::{ConnectOptions, OdysseyClient, SessionFilter, SessionOptions};
    let server = TestServer::start().await;
    let client = OdysseyClient::connect_with(server.handle.url(), ConnectOptions::new())
        .await
        .expect("connect");
    let bundle = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../bundles/delegate");
    let archive = odyssey_client::pack_project(&bundle).expect("pack");
    client
        .build_bundle(archive, "", false)
        .await
        .expect("build");
    let parent = client
        .create_session("delegate", SessionOptions::default())
        .await
        .expect("session");
    let status = client
        .run(
            &parent.id,
            "Get the notes written",
            pb::TurnOverrides::default(),
        )
        .await
        .expect("run");
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    assert!(
        status.response.contains("hello from the coder"),
        "{status:?}"
    );
    let filter = SessionFilter {
        parent_session_id: Some(parent.id.clone()),
        ..SessionFilter::default()
    };
    let children = client.list_sessions(&filter).await.expect("list");
    assert_eq!(children.len(), 1, "{children:?}");
    assert_eq!(children[0].parent_session_id, parent.id);
    assert_eq!(children[0].parent_call_id, "call_agent");
    let events = server.events(&parent.id, 0, status.last_sequence).await;
    let finished = first_payload!(events, SubagentFinished).expect("subagent_finished");
    assert_eq!(finished.child_session_id, children[0].id);
    assert_eq!(finished.outcome, pb::TurnOutcome::Completed as i32);
    // The coder wrote into the planner's workspace.
    let notes = server
        .home()
        .join("sandbox")
        .join(&parent.id)
        .join("data/notes.txt");
    assert_eq!(
        std::fs::read_to_string(notes).expect("notes"),
        "hello from the coder\n"
    );
}

#[tokio::test]
async fn a_child_sharing_a_workspace_reaches_no_other_sessions_files() {
    // (the other session's id, the host path of its workspace), known once it exists.
    let target = Arc::new(std::sync::Mutex::new((String::new(), String::new())));
    let seen = target.clone();
    let model = OpenAiWireServer::start(Script::respond(KEY, move |body: &Value| {
        let model = body["model"].as_str().unwrap_or_default();
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let tools_done = messages.iter().filter(|m| m["role"] == "tool").count();
        let (id, host) = seen.lock().map(|t| t.clone()).unwrap_or_default();
        match (model, tools_done) {
            ("planner", 0) => calls(&[(
                "call-agent",
                "Agent",
                r#"{"agent": "coder", "prompt": "Look around", "workspace": "shared"}"#,
            )]),
            ("coder", 0) => calls(&[
                (
                    "up",
                    "Read",
                    &format!(r#"{{"path": "../../{id}/data/secret.txt"}}"#),
                ),
                (
                    "host",
                    "Read",
                    &format!(r#"{{"path": "{host}/secret.txt"}}"#),
                ),
            ]),
            _ => text("done"),
        }
    }))
    .await
    .expect("loopback model");
    let server = server_for(&model, |_| {}).await;
    // Another session's workspace, holding a secret.
    let other = server.session_on(&planner_and_coder("bystander")).await;
    let other_data = server.home().join("sandbox").join(&other.id).join("data");
    std::fs::create_dir_all(&other_data).expect("other workspace");
    std::fs::write(other_data.join("secret.txt"), "not yours\n").expect("secret");
    *target.lock().expect("lock") = (other.id.clone(), other_data.display().to_string());

    let parent = server.create_session("bystander@0.1.0").await;
    let status = server.run(&parent.id, "Look").await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    let child = children_of(&server, &parent.id).await.remove(0);
    let results = tool_results(&all_events(&server, &child.id).await);
    assert_eq!(results.len(), 2, "{results:?}");
    for (tool, success, result) in &results {
        assert_eq!(tool, "Read");
        assert!(!success, "{results:?}");
        assert!(!result.contains("not yours"), "{results:?}");
        assert!(result.contains("is outside the workspace"), "{results:?}");
    }
}

#[tokio::test]
async fn deleting_the_parent_cancels_its_running_child() {
    let (_model, server) = stuck_child_server().await;
    let parent = server.session_on(&planner_and_coder("deleted")).await;
    server
        .submit(&parent.id, "Start a slow child")
        .await
        .expect("submitted");
    let child = running_child(&server, &parent.id).await;
    server
        .sessions()
        .delete_session(pb::DeleteSessionRequest {
            session_id: parent.id.clone(),
        })
        .await
        .expect("delete the parent");
    let ended = child_turn_end(&server, &child.id).await;
    assert_eq!(ended.outcome, pb::TurnOutcome::Cancelled as i32);
    assert_eq!(
        server.get_session(&child.id).await.state,
        pb::SessionState::Idle as i32
    );
}
