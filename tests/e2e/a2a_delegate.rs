//! Odyssey agents delegating to remote A2A agents: a remote agent made with the official
//! Python SDK (`a2a-sdk`'s server, tests/e2e/a2a_remote/agent.py) on a loopback port, an
//! Odyssey agent whose loopback model calls `a2a__<name>`. The answer comes back as the
//! tool result with the remote task's updates streamed into the session's events; a
//! remote `input-required` is answered through a local approval; cancelling the turn
//! cancels the remote task; what the operator has not allowed is refused at
//! CreateSession; the operator's credentials reach the remote agent and no event.

use std::path::{Path, PathBuf};
use std::time::Duration;

use odyssey_api::v1 as pb;
use odyssey_api::v1::approval_service_client::ApprovalServiceClient;
use odyssey_runtime::provider::ProviderSettings;
use odyssey_runtime::tools::a2a::OperatorA2aAgent;
use odyssey_testing::openai_wire::{OpenAiWireServer, Reply, Script, StreamBuilder};
use tonic::Code;

use crate::support::{Project, TestServer, error_reason, payload_kind};

const KEY: &str = "sk-test-a2a-delegate-0123456789";
const OPERATOR_TOKEN: &str = "Bearer a2a-operator-secret-4711";
const QUERY_SECRET: &str = "query-secret-0815";

/// The Python of the virtual environment holding `a2a-sdk` with its HTTP server.
fn python() -> PathBuf {
    let python = std::env::var_os("A2A_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci/tools/a2a-venv/bin/python")
        });
    let found = std::process::Command::new(&python)
        .args([
            "-c",
            "import a2a.server.routes, starlette, sse_starlette, uvicorn",
        ])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "{} cannot import a2a-sdk's HTTP server (a2a-sdk[http-server], uvicorn): run \
         scripts/install-tools (or set A2A_PYTHON)",
        python.display()
    );
    python
}

/// The remote agent on a loopback port; killed when dropped.
struct Remote {
    _child: tokio::process::Child,
    dir: tempfile::TempDir,
    origin: String,
}

impl Remote {
    async fn start() -> Self {
        let dir = tempfile::tempdir().expect("a folder for the marker");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("e2e/a2a_remote/agent.py");
        let child = tokio::process::Command::new(python())
            .arg(&script)
            .arg(port.to_string())
            .arg(dir.path().join("marker"))
            .arg(OPERATOR_TOKEN)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start the remote agent");
        let origin = format!("http://127.0.0.1:{port}");
        for _ in 0..400 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return Self {
                    _child: child,
                    dir,
                    origin,
                };
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the remote A2A agent never listened on port {port}");
    }

    fn marker(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("marker")).unwrap_or_default()
    }
}

fn call(id: &str, tool: &str, arguments: &str) -> Reply {
    StreamBuilder::new()
        .tool_call(0, id, tool, arguments, 2)
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

/// A server whose provider `openai` is `model`, which allows bundles' remote agents on
/// `remote`'s origin and offers `operator` agents.
async fn server_for(
    model: &OpenAiWireServer,
    remote: &Remote,
    operator: Vec<(&str, OperatorA2aAgent)>,
) -> TestServer {
    server_allowing(model, Some(&remote.origin), operator, None).await
}

/// A server whose provider `openai` is `model`, which allows bundles' remote agents on
/// `origin` (none without) and offers `operator` agents.
async fn server_allowing(
    model: &OpenAiWireServer,
    origin: Option<&str>,
    operator: Vec<(&str, OperatorA2aAgent)>,
    call_timeout: Option<Duration>,
) -> TestServer {
    let base_url = model.base_url();
    let allowed: Vec<odyssey_runtime::provider::UrlPattern> = origin
        .map(|origin| format!("{origin}/*").parse().expect("pattern"))
        .into_iter()
        .collect();
    let operator: Vec<(String, OperatorA2aAgent)> = operator
        .into_iter()
        .map(|(name, agent)| (name.to_owned(), agent))
        .collect();
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
            config.a2a.allowed_urls = allowed;
            if let Some(timeout) = call_timeout {
                config.a2a.call_timeout = timeout;
            }
            config.a2a.agents = operator.into_iter().collect();
        },
    )
    .await
}

/// A bundle declaring `declared` (YAML lines under `spec.a2a_agents`) whose agent, on the
/// `openai` model, uses `uses` and is allowed every remote agent.
fn project(name: &str, declared: &str, uses: &str) -> Project {
    let project = Project::empty();
    project.write(
        "odyssey.bundle.yaml",
        &format!(
            "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: {name}\n  version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      default: true\n  a2a_agents:\n{declared}  sandbox:\n    mode: workspace_write\n"
        ),
    );
    project.write(
        "agents/main/agent.yaml",
        &format!("apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\nspec:\n  kind: prompt\n  prompt: You are a test agent.\n  model:\n    provider: openai\n    name: gpt-test\n  a2a_agents: {uses}\n  tools:\n    allow: [\"a2a__*\"]\n"),
    );
    project
}

/// The finished tool calls of a turn's events, in order: (tool, success, result).
fn finished(events: &[pb::SessionEvent]) -> Vec<(String, bool, String)> {
    events
        .iter()
        .filter_map(|e| match &e.payload {
            Some(pb::session_event::Payload::ToolCallFinished(f)) => {
                Some((f.tool.clone(), f.success, f.result.clone()))
            }
            _ => None,
        })
        .collect()
}

/// The streamed pieces of call `call_id`.
fn deltas(events: &[pb::SessionEvent], call_id: &str) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.payload {
            Some(pb::session_event::Payload::ToolCallDelta(d)) if d.call_id == call_id => {
                Some(d.delta.clone())
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_remote_agents_answer_is_the_tool_result_and_its_updates_are_streamed() {
    let remote = Remote::start().await;
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(call(
                "c1",
                "a2a__helper",
                r#"{"message": "echo: hello there"}"#,
            ))
            .reply(call("c2", "a2a__helper", r#"{"message": "fail"}"#))
            .reply(text("The helper said hello.")),
    )
    .await
    .expect("loopback model");
    let server = server_for(&model, &remote, Vec::new()).await;
    let url = format!("{}/", remote.origin);
    let project = project(
        "delegates",
        &format!("    - {{ name: helper, url: \"{url}\" }}\n"),
        "[helper]",
    );
    let bundle = server.install(&project).await;
    let agents = server
        .bundles()
        .list_agents(pb::ListAgentsRequest {
            bundle_reference: crate::support::bundle_name(&bundle),
        })
        .await
        .expect("list agents")
        .into_inner()
        .agents;
    assert_eq!(
        agents[0].a2a_agents,
        [pb::A2aAgentInfo {
            name: "helper".into(),
            url: url.clone(),
            operator: false,
        }]
    );
    let session = server
        .create_session(&crate::support::bundle_name(&bundle))
        .await;
    let tools = server
        .sessions()
        .list_session_tools(pb::ListSessionToolsRequest {
            session_id: session.id.clone(),
            ..Default::default()
        })
        .await
        .expect("list the session's tools")
        .into_inner()
        .tools;
    assert!(
        tools
            .iter()
            .any(|t| t.name == "a2a__helper" && t.source == "a2a"),
        "{tools:?}"
    );
    let status = server.run(&session.id, "Ask the helper.").await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    assert_eq!(status.response, "The helper said hello.");
    let events = server.events(&session.id, 0, status.last_sequence).await;
    let calls = finished(&events);
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(
        calls[0],
        (
            "a2a__helper".to_owned(),
            true,
            "Remote says: hello there".to_owned()
        )
    );
    let (tool, ok, failure) = &calls[1];
    assert!(
        tool == "a2a__helper"
            && !ok
            && failure.contains("failed")
            && failure.contains("the disk is full"),
        "{calls:?}"
    );
    let streamed = deltas(&events, "c1");
    assert!(
        streamed.iter().any(|d| d.contains("[working] on it")),
        "{streamed:?}"
    );
    assert!(
        streamed.iter().any(|d| d == "Remote says: ")
            && streamed.iter().any(|d| d == "hello there"),
        "{streamed:?}"
    );
    assert!(
        streamed.iter().any(|d| d.starts_with("[completed]")),
        "{streamed:?}"
    );
    // The model was told the answer.
    let requests = model.requests();
    let told = requests.get(1).map(|r| r.to_string()).unwrap_or_default();
    assert!(told.contains("Remote says: hello there"), "{told}");
}

/// Answers the session's next approval request with `decision`; returns the request.
async fn answer(
    server: &TestServer,
    session_id: &str,
    decision: pb::ApprovalDecision,
    reason: &str,
) -> pb::Approval {
    let mut approvals = ApprovalServiceClient::new(server.channel.clone());
    for _ in 0..400 {
        let pending = approvals
            .list_approvals(pb::ListApprovalsRequest {
                session_id: session_id.into(),
                ..Default::default()
            })
            .await
            .expect("list approvals")
            .into_inner()
            .approvals;
        if let Some(request) = pending.into_iter().next() {
            // Fields the request may gain keep their defaults.
            #[allow(clippy::needless_update)]
            let resolve = pb::ResolveApprovalRequest {
                request_id: request.request_id.clone(),
                decision: decision as i32,
                reason: reason.into(),
                ..Default::default()
            };
            approvals.resolve_approval(resolve).await.expect("resolve");
            return request;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no approval request appeared");
}

#[tokio::test]
async fn a_remote_input_required_is_answered_through_a_local_approval() {
    let remote = Remote::start().await;
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(call(
                "c1",
                "a2a__helper",
                r#"{"message": "ask: notes.txt"}"#,
            ))
            .reply(call("c2", "a2a__helper", r#"{"message": "ask: plan.md"}"#))
            .reply(text("Done asking.")),
    )
    .await
    .expect("loopback model");
    let server = server_for(&model, &remote, Vec::new()).await;
    let project = project(
        "asks",
        &format!("    - {{ name: helper, url: \"{}\" }}\n", remote.origin),
        "[helper]",
    );
    let session = server.session_on(&project).await;
    let execution = server
        .submit(&session.id, "Clean up.")
        .await
        .expect("submit");
    let first = answer(&server, &session.id, pb::ApprovalDecision::Deny, "keep it").await;
    assert_eq!(first.tool, "a2a__helper");
    assert!(
        first.summary.contains("May I delete notes.txt?"),
        "{first:?}"
    );
    answer(&server, &session.id, pb::ApprovalDecision::AllowOnce, "").await;
    server
        .wait_for_state(&execution, pb::ExecutionState::Completed)
        .await;
    let status = server.status(&execution).await;
    let events = server.events(&session.id, 0, status.last_sequence).await;
    let calls = finished(&events);
    assert_eq!(
        calls,
        [
            (
                "a2a__helper".to_owned(),
                true,
                "kept notes.txt (keep it)".to_owned()
            ),
            ("a2a__helper".to_owned(), true, "deleted plan.md".to_owned()),
        ]
    );
    let kinds: Vec<&str> = events.iter().map(payload_kind).collect();
    assert_eq!(
        kinds
            .iter()
            .filter(|k| **k == "permission_requested")
            .count(),
        2,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "approval_resolved").count(),
        2,
        "{kinds:?}"
    );
}

#[tokio::test]
async fn cancelling_the_turn_cancels_the_remote_task() {
    let remote = Remote::start().await;
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(call("c1", "a2a__helper", r#"{"message": "hang"}"#))
            .reply(text("unused")),
    )
    .await
    .expect("loopback model");
    let server = server_for(&model, &remote, Vec::new()).await;
    let project = project(
        "hangs",
        &format!("    - {{ name: helper, url: \"{}\" }}\n", remote.origin),
        "[helper]",
    );
    let session = server.session_on(&project).await;
    let execution = server.submit(&session.id, "Wait.").await.expect("submit");
    let mut waited = 0;
    loop {
        let last = server.get_session(&session.id).await.last_sequence;
        let events = server.events(&session.id, 0, last).await;
        if deltas(&events, "c1")
            .iter()
            .any(|d| d.contains("[working]"))
        {
            break;
        }
        assert!(waited < 400, "the remote task never started working");
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += 1;
    }
    assert_eq!(remote.marker(), "", "nothing cancelled yet");
    server
        .executions()
        .cancel_execution(pb::CancelExecutionRequest {
            execution_id: execution.clone(),
        })
        .await
        .expect("cancel");
    tokio::time::timeout(
        Duration::from_secs(20),
        server.wait_for_state(&execution, pb::ExecutionState::Cancelled),
    )
    .await
    .expect("the cancelled turn ends without waiting for the remote agent");
    for _ in 0..400 {
        if remote.marker().starts_with("cancelled ") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the remote task was never cancelled");
}

#[tokio::test]
async fn cancelling_a_turn_waiting_on_a_remote_question_ends_the_request_and_the_remote_task() {
    let remote = Remote::start().await;
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(call(
                "c1",
                "a2a__helper",
                r#"{"message": "ask: notes.txt"}"#,
            ))
            .reply(text("unused")),
    )
    .await
    .expect("loopback model");
    let server = server_for(&model, &remote, Vec::new()).await;
    let project = project(
        "asked",
        &format!("    - {{ name: helper, url: \"{}\" }}\n", remote.origin),
        "[helper]",
    );
    let session = server.session_on(&project).await;
    let execution = server
        .submit(&session.id, "Clean up.")
        .await
        .expect("submit");
    server
        .wait_for_state(&execution, pb::ExecutionState::WaitingApproval)
        .await;
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
    let status = server.status(&execution).await;
    let events = server.events(&session.id, 0, status.last_sequence).await;
    let resolved: Vec<pb::ApprovalResolved> = events
        .iter()
        .filter_map(|e| match &e.payload {
            Some(pb::session_event::Payload::ApprovalResolved(r)) => Some(r.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(resolved.len(), 1, "{resolved:?}");
    assert_eq!(
        resolved[0].resolution,
        pb::ApprovalResolution::Cancelled as i32,
        "{resolved:?}"
    );
    for _ in 0..200 {
        if remote.marker().starts_with("cancelled ") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the remote task was not cancelled");
}

#[tokio::test]
async fn a_remote_task_past_the_call_timeout_is_cancelled_and_an_error_result() {
    let remote = Remote::start().await;
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(call("c1", "a2a__helper", r#"{"message": "hang"}"#))
            .reply(text("It took too long.")),
    )
    .await
    .expect("loopback model");
    let server = server_allowing(
        &model,
        Some(&remote.origin),
        Vec::new(),
        Some(Duration::from_secs(2)),
    )
    .await;
    let project = project(
        "slow",
        &format!("    - {{ name: helper, url: \"{}\" }}\n", remote.origin),
        "[helper]",
    );
    let session = server.session_on(&project).await;
    let status = server.run(&session.id, "Wait.").await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    let events = server.events(&session.id, 0, status.last_sequence).await;
    let calls = finished(&events);
    assert!(
        calls.len() == 1
            && !calls[0].1
            && calls[0]
                .2
                .contains("did not finish within 2 s; its task was cancelled"),
        "{calls:?}"
    );
    for _ in 0..200 {
        if remote.marker().starts_with("cancelled ") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the remote task was not cancelled");
}

#[tokio::test]
async fn remote_agents_the_operator_has_not_allowed_are_refused_at_create_session() {
    let model = OpenAiWireServer::start(Script::new(KEY))
        .await
        .expect("loopback model");
    let server = server_allowing(&model, None, Vec::new(), None).await;
    let cases = [
        (
            "remote",
            "    - { name: helper, url: \"https://agents.example.com/a2a\" }\n",
            "a2a.allowed_urls",
        ),
        ("named", "    - name: research\n", "a2a.agents.research"),
    ];
    for (name, declared, setting) in cases {
        let uses = if name == "named" {
            "[research]"
        } else {
            "[helper]"
        };
        let bundle = server.install(&project(name, declared, uses)).await;
        let refused = server
            .sessions()
            .create_session(pb::CreateSessionRequest {
                bundle_reference: crate::support::bundle_name(&bundle),
                ..Default::default()
            })
            .await
            .expect_err("refused");
        assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");
        assert!(refused.message().contains(setting), "{refused:?}");
        assert!(error_reason(&refused).is_some(), "{refused:?}");
    }
}

#[tokio::test]
async fn the_operators_credentials_reach_the_remote_agent_and_no_event() {
    let remote = Remote::start().await;
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(call("c1", "a2a__research", r#"{"message": "whoami"}"#))
            .reply(text("Checked.")),
    )
    .await
    .expect("loopback model");
    // The operator's agent: its URL holds a credential in its query, its headers a token.
    let operator = OperatorA2aAgent {
        url: format!("{}/?key={QUERY_SECRET}", remote.origin),
        headers: [("Authorization".to_owned(), OPERATOR_TOKEN.to_owned())].into(),
    };
    let server = server_for(&model, &remote, vec![("research", operator)]).await;
    let project = project("operator", "    - name: research\n", "[research]");
    let bundle = server.install(&project).await;
    let agents = server
        .bundles()
        .list_agents(pb::ListAgentsRequest {
            bundle_reference: crate::support::bundle_name(&bundle),
        })
        .await
        .expect("list agents")
        .into_inner()
        .agents;
    assert_eq!(
        agents[0].a2a_agents,
        [pb::A2aAgentInfo {
            name: "research".into(),
            url: format!("{}/", remote.origin),
            operator: true,
        }]
    );
    let session = server
        .create_session(&crate::support::bundle_name(&bundle))
        .await;
    let status = server.run(&session.id, "Who am I?").await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    let events = server.events(&session.id, 0, status.last_sequence).await;
    assert_eq!(
        finished(&events),
        [("a2a__research".to_owned(), true, "authorized".to_owned())]
    );
    let recorded = format!("{events:?}{agents:?}");
    for secret in [OPERATOR_TOKEN, "a2a-operator-secret-4711", QUERY_SECRET] {
        assert!(!recorded.contains(secret), "{secret} reached an event");
    }
}
