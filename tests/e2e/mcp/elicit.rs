//! An MCP server's request for a person's input (`elicitation/create`): the real
//! `@modelcontextprotocol/server-everything` asks during a tool call of a turn (it offers
//! its elicitation tool only to a client that declares the capability), the request waits
//! on the approvals surface, and its answer (accepted, declined, or timed out and then
//! cancelled) reaches the server and the model; an answer that does not match the
//! requested schema is refused, naming the field.

use super::*;
use crate::support::{bad_fields, first_payload};

const ELICIT: &str = "mcp__everything__trigger-elicitation-request";

/// A server whose approvals time out after `approval_timeout`, with the `everything` MCP
/// server's tools allowed.
async fn elicit_server(
    model: &OpenAiWireServer,
    modules: &Path,
    approval_timeout: Duration,
) -> (TestServer, pb::Session) {
    let project = mcp_project(
        "everything",
        &everything(modules),
        modules,
        "[\"mcp__everything__*\"]",
        "[]",
    );
    elicit_server_on(model, modules, approval_timeout, &project).await
}

/// As [`elicit_server`], with a session on `project`.
async fn elicit_server_on(
    model: &OpenAiWireServer,
    modules: &Path,
    approval_timeout: Duration,
    project: &Project,
) -> (TestServer, pb::Session) {
    let base_url = model.base_url();
    let mounted = modules.to_path_buf();
    let server = TestServer::start_configured(
        move |args| {
            args.mount_roots = vec![mounted];
            args.env_allowlist = vec!["PATH".into()];
            args.http_listen = Some(crate::support::loopback());
        },
        move |config| {
            config.providers.insert(
                "openai".into(),
                ProviderSettings {
                    base_url: Some(base_url),
                    api_key: Some(KEY.into()),
                    ..ProviderSettings::default()
                },
            );
            config.mcp.call_timeout = Duration::from_secs(60);
            config.approval_timeout = approval_timeout;
            // One worker: a turn waiting for a person's input must give it back
            // (`a_turn_waiting_for_input_gives_its_worker_back`).
            config.worker_count = 1;
        },
    )
    .await;
    let session = server.session_on(project).await;
    (server, session)
}

/// The session's first pending request, once one is there.
async fn pending_input(server: &TestServer, session_id: &str) -> pb::Approval {
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
            return request;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no request for input appeared");
}

fn answer_of(value: serde_json::Value) -> prost_types::Struct {
    let serde_json::Value::Object(map) = value else {
        panic!("an object");
    };
    prost_types::Struct {
        fields: map.into_iter().map(|(k, v)| (k, to_value(v))).collect(),
    }
}

fn to_value(value: serde_json::Value) -> prost_types::Value {
    use prost_types::value::Kind;
    let kind = match value {
        serde_json::Value::Null => Kind::NullValue(0),
        serde_json::Value::Bool(b) => Kind::BoolValue(b),
        serde_json::Value::Number(n) => Kind::NumberValue(n.as_f64().expect("a number")),
        serde_json::Value::String(s) => Kind::StringValue(s),
        serde_json::Value::Array(items) => Kind::ListValue(prost_types::ListValue {
            values: items.into_iter().map(to_value).collect(),
        }),
        object @ serde_json::Value::Object(_) => Kind::StructValue(answer_of(object)),
    };
    prost_types::Value { kind: Some(kind) }
}

fn from_value(value: &prost_types::Value) -> serde_json::Value {
    use prost_types::value::Kind;
    match &value.kind {
        Some(Kind::BoolValue(b)) => serde_json::json!(b),
        Some(Kind::NumberValue(n)) => serde_json::json!(n),
        Some(Kind::StringValue(s)) => serde_json::json!(s),
        Some(Kind::ListValue(l)) => l.values.iter().map(from_value).collect(),
        Some(Kind::StructValue(s)) => from_struct(s),
        _ => serde_json::Value::Null,
    }
}

fn from_struct(s: &prost_types::Struct) -> serde_json::Value {
    s.fields
        .iter()
        .map(|(k, v)| (k.clone(), from_value(v)))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// The turn's events of the request for input, and the result the model was given.
fn outcome(
    events: &[pb::SessionEvent],
) -> (pb::HumanInputRequested, pb::HumanInputAnswered, String) {
    let requested = first_payload!(events, HumanInputRequested)
        .unwrap_or_else(|| panic!("no request for input: {:?}", finished(events)));
    let answered = first_payload!(events, HumanInputAnswered).expect("answered");
    let kinds: Vec<&str> = events.iter().map(payload_kind).collect();
    let at = |kind: &str| kinds.iter().position(|k| *k == kind).expect(kind);
    assert!(
        at("tool_call_started") < at("human_input_requested")
            && at("human_input_requested") < at("human_input_answered")
            && at("human_input_answered") < at("tool_call_finished"),
        "{kinds:?}"
    );
    let calls = finished(events);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].0, ELICIT);
    (requested, answered, calls[0].2.clone())
}

#[tokio::test]
async fn a_servers_request_for_input_is_answered_on_the_approvals_surface() {
    let modules = node_modules();
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(call("c1", ELICIT, "{}"))
            .reply(text("Answered."))
            .reply(call("c2", ELICIT, "{}"))
            .reply(text("Declined."))
            .reply(call("c3", ELICIT, "{}"))
            .reply(text("Answered over HTTP."))
            .reply(call("c4", ELICIT, "{}"))
            .reply(text("Answered on the command line.")),
    )
    .await
    .expect("loopback model");
    let (server, session) = elicit_server(&model, &modules, Duration::from_secs(600)).await;
    let mut approvals = ApprovalServiceClient::new(server.channel.clone());

    let execution = server.submit(&session.id, "Ask me.").await.expect("submit");
    let asked = pending_input(&server, &session.id).await;
    // The turn shows it waits for a person, as with an approval (A2A: input-required).
    server
        .wait_for_state(&execution, pb::ExecutionState::WaitingApproval)
        .await;
    assert_eq!(asked.kind, pb::ApprovalKind::Input as i32);
    assert_eq!(asked.tool, ELICIT);
    assert_eq!(
        asked.message,
        "Please provide inputs for the following fields:"
    );
    let schema = from_struct(asked.requested_schema.as_ref().expect("schema"));
    assert_eq!(
        schema["properties"]["integer"]["type"], "integer",
        "{schema:?}"
    );
    assert_eq!(schema["required"], serde_json::json!(["name"]));

    // An answer outside the schema is refused, naming the field; the request still waits.
    let refused = approvals
        .resolve_approval(pb::ResolveApprovalRequest {
            request_id: asked.request_id.clone(),
            action: pb::HumanInputAction::Accept as i32,
            answer: Some(answer_of(
                serde_json::json!({"name": "Ada", "integer": 500}),
            )),
            ..Default::default()
        })
        .await
        .expect_err("refused");
    assert_eq!(refused.code(), Code::InvalidArgument, "{refused:?}");
    assert_eq!(bad_fields(&refused), vec!["answer.integer".to_owned()]);
    assert!(refused.message().contains("answer.integer"), "{refused:?}");
    let missing = approvals
        .resolve_approval(pb::ResolveApprovalRequest {
            request_id: asked.request_id.clone(),
            action: pb::HumanInputAction::Accept as i32,
            answer: Some(answer_of(serde_json::json!({"check": true}))),
            ..Default::default()
        })
        .await
        .expect_err("refused");
    assert_eq!(bad_fields(&missing), vec!["answer.name".to_owned()]);

    approvals
        .resolve_approval(pb::ResolveApprovalRequest {
            request_id: asked.request_id.clone(),
            action: pb::HumanInputAction::Accept as i32,
            answer: Some(answer_of(
                serde_json::json!({"name": "Ada Lovelace", "check": true, "integer": 7}),
            )),
            ..Default::default()
        })
        .await
        .expect("accepted");
    server
        .wait_for_state(&execution, pb::ExecutionState::Completed)
        .await;
    let status = server.status(&execution).await;
    let events = server.events(&session.id, 0, status.last_sequence).await;
    let (requested, answered, result) = outcome(&events);
    assert_eq!(requested.request_id, asked.request_id);
    assert_eq!(requested.server, "everything");
    assert_eq!(answered.action, pb::HumanInputAction::Accept as i32);
    assert_eq!(answered.resolution, pb::ApprovalResolution::Decided as i32);
    assert!(result.contains("Name: Ada Lovelace"), "{result}");
    assert!(result.contains("Favorite Integer: 7"), "{result}");

    // A plain deny declines.
    let first_of_turn = status.last_sequence;
    let execution = server
        .submit(&session.id, "Ask again.")
        .await
        .expect("submit");
    let asked = pending_input(&server, &session.id).await;
    approvals
        .resolve_approval(pb::ResolveApprovalRequest {
            request_id: asked.request_id.clone(),
            decision: pb::ApprovalDecision::Deny as i32,
            ..Default::default()
        })
        .await
        .expect("declined");
    server
        .wait_for_state(&execution, pb::ExecutionState::Completed)
        .await;
    let status = server.status(&execution).await;
    let events = server
        .events(&session.id, first_of_turn, status.last_sequence)
        .await;
    let (_, answered, result) = outcome(&events);
    assert_eq!(answered.action, pb::HumanInputAction::Decline as i32);
    assert!(answered.answer.is_none());
    assert!(result.contains("declined"), "{result}");

    // The HTTP gateway lists the request with its message and schema, refuses an answer
    // of the wrong type naming the field, and takes a good one.
    let first_of_turn = status.last_sequence;
    let execution = server
        .submit(&session.id, "Ask over HTTP.")
        .await
        .expect("submit");
    let asked = pending_input(&server, &session.id).await;
    let addr = server.handle.http_addr().expect("the gateway runs");
    let http = reqwest::Client::new();
    let listed: serde_json::Value = http
        .get(format!("http://{addr}/approvals?session_id={}", session.id))
        .send()
        .await
        .expect("GET approvals")
        .json()
        .await
        .expect("JSON");
    let listed = &listed["approvals"][0];
    assert_eq!(listed["kind"], "APPROVAL_KIND_INPUT", "{listed}");
    assert_eq!(
        listed["message"],
        "Please provide inputs for the following fields:"
    );
    assert_eq!(listed["requestedSchema"]["required"][0], "name", "{listed}");
    let url = format!("http://{addr}/approvals/{}", asked.request_id);
    let bad = http
        .post(&url)
        .json(&serde_json::json!({"action": "accept", "answer": {"name": "Ada", "check": "yes"}}))
        .send()
        .await
        .expect("POST");
    assert_eq!(bad.status(), reqwest::StatusCode::BAD_REQUEST);
    let body: serde_json::Value = bad.json().await.expect("JSON error");
    assert_eq!(body["error"]["code"], "INVALID_ARGUMENT", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("answer.check")),
        "{body}"
    );
    let good = http
        .post(&url)
        .json(&serde_json::json!({"action": "accept", "answer": {"name": "Grace", "check": false}}))
        .send()
        .await
        .expect("POST");
    assert_eq!(good.status(), reqwest::StatusCode::OK);
    server
        .wait_for_state(&execution, pb::ExecutionState::Completed)
        .await;
    let status = server.status(&execution).await;
    let events = server
        .events(&session.id, first_of_turn, status.last_sequence)
        .await;
    let (_, answered, result) = outcome(&events);
    assert_eq!(answered.action, pb::HumanInputAction::Accept as i32);
    assert!(result.contains("Name: Grace"), "{result}");
    assert!(result.contains("Agreed to terms: false"), "{result}");

    // The CLI shows the message and the fields, refuses a bad answer naming the field,
    // and sends a good one.
    let first_of_turn = status.last_sequence;
    let execution = server
        .submit(&session.id, "Ask on the command line.")
        .await
        .expect("submit");
    let asked = pending_input(&server, &session.id).await;
    let url = server.handle.url();
    let (code, out, err) = odyssey(&[
        "--server",
        &url,
        "approvals",
        "--full",
        "--session",
        &session.id,
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("MCP server `everything` asks for input"),
        "{out}"
    );
    assert!(
        out.contains("Please provide inputs for the following fields:"),
        "{out}"
    );
    assert!(
        out.contains("name (string, required): Your full, legal name"),
        "{out}"
    );
    let (code, _, err) = odyssey(&["--server", &url, "approve", &asked.request_id]).await;
    assert_eq!(code, 2, "no terminal to ask on: {err}");
    assert!(
        err.contains("--answer JSON") && err.contains("name (string, required)"),
        "{err}"
    );
    let (code, _, err) = odyssey(&[
        "--server",
        &url,
        "approve",
        &asked.request_id,
        "--answer",
        r#"{"name": 5}"#,
    ])
    .await;
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("answer.name") && err.contains("INVALID_ARGUMENT"),
        "{err}"
    );
    let (code, out, err) = odyssey(&[
        "--server",
        &url,
        "approve",
        &asked.request_id,
        "--answer",
        r#"{"name": "Linus", "integer": 3}"#,
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("Answered: MCP server `everything` asks for input"),
        "{out}"
    );
    server
        .wait_for_state(&execution, pb::ExecutionState::Completed)
        .await;
    let status = server.status(&execution).await;
    let events = server
        .events(&session.id, first_of_turn, status.last_sequence)
        .await;
    let (_, answered, result) = outcome(&events);
    assert_eq!(answered.action, pb::HumanInputAction::Accept as i32);
    assert!(
        result.contains("Name: Linus") && result.contains("Favorite Integer: 3"),
        "{result}"
    );
}

/// Runs a CLI command; returns (exit code, stdout, stderr).
async fn odyssey(args: &[&str]) -> (i32, String, String) {
    let mut out = Vec::new();
    let mut err = Vec::new();
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
async fn a_request_for_input_nobody_answers_times_out_and_the_server_is_told_cancel() {
    let modules = node_modules();
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(call("c1", ELICIT, "{}"))
            .reply(text("Nobody answered."))
            .reply(call("c2", ELICIT, "{}"))
            .reply(text("Declined by the command line.")),
    )
    .await
    .expect("loopback model");
    let (server, session) = elicit_server(&model, &modules, Duration::from_secs(2)).await;
    let status = server.run(&session.id, "Ask me.").await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    let events = server.events(&session.id, 0, status.last_sequence).await;
    let (_, answered, result) = outcome(&events);
    assert_eq!(answered.action, pb::HumanInputAction::Cancel as i32);
    assert_eq!(answered.resolution, pb::ApprovalResolution::TimedOut as i32);
    assert!(result.contains("cancelled"), "{result}");

    // `odyssey run --auto-deny` declines the request of the turn it follows.
    let first_of_turn = status.last_sequence;
    let url = server.handle.url();
    let (code, _, err) = odyssey(&[
        "--server",
        &url,
        "run",
        "--auto-deny",
        &session.id,
        "Ask again.",
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("asks for input — declined (--auto-deny)"),
        "{err}"
    );
    assert!(
        err.contains("Please provide inputs for the following fields:"),
        "{err}"
    );
    let status = server.get_session(&session.id).await;
    let events = server
        .events(&session.id, first_of_turn, status.last_sequence)
        .await;
    let (_, answered, result) = outcome(&events);
    assert_eq!(answered.action, pb::HumanInputAction::Decline as i32);
    assert!(result.contains("declined"), "{result}");
}

/// A planner delegating to a helper whose MCP server asks for input: the request is the
/// helper's, and names the planner as its parent, as the helper's calls for approval do.
#[tokio::test]
async fn a_sub_agents_request_for_input_names_its_parents() {
    let modules = node_modules();
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(call(
                "c1",
                "Agent",
                r#"{"agent": "helper", "prompt": "Ask the person."}"#,
            ))
            .reply(call("c2", ELICIT, "{}"))
            .reply(text("The person declined."))
            .reply(text("The helper is done.")),
    )
    .await
    .expect("loopback model");
    let project = Project::empty();
    let command = serde_json::to_string(&everything(&modules)).expect("json");
    project.write(
        "odyssey.bundle.yaml",
        &format!(
            "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: mcp-delegating\n  version: 0.1.0\nspec:\n  agents:\n    - id: planner\n      spec: agents/planner/agent.yaml\n      default: true\n    - id: helper\n      spec: agents/helper/agent.yaml\n  tools:\n    - {{ name: Agent, source: builtin }}\n  mcp_servers:\n    - name: everything\n      command: {command}\n      env: {{ FROM_HOST: PATH }}\n  sandbox:\n    mode: workspace_write\n    permissions:\n      filesystem:\n        mounts:\n          read: [\"{}\"]\n",
            modules.display()
        ),
    );
    project.write(
        "agents/planner/agent.yaml",
        "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: planner\nspec:\n  kind: prompt\n  prompt: You plan.\n  model:\n    provider: openai\n    name: gpt-test\n  delegates: [helper]\n  tools:\n    allow: [Agent]\n    deny: []\n",
    );
    project.write(
        "agents/helper/agent.yaml",
        "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: helper\nspec:\n  kind: prompt\n  prompt: You help.\n  model:\n    provider: openai\n    name: gpt-test\n  mcp_servers: [everything]\n  tools:\n    allow: [\"mcp__everything__*\"]\n    deny: []\n",
    );
    let (server, parent) =
        elicit_server_on(&model, &modules, Duration::from_secs(600), &project).await;
    let execution = server
        .submit(&parent.id, "Delegate.")
        .await
        .expect("submit");
    let mut approvals = ApprovalServiceClient::new(server.channel.clone());
    let mut asked = None;
    for _ in 0..400 {
        let listed = approvals
            .list_approvals(pb::ListApprovalsRequest::default())
            .await
            .expect("list approvals")
            .into_inner()
            .approvals;
        if let Some(request) = listed.into_iter().next() {
            asked = Some(request);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let asked = asked.expect("the helper's server asks");
    assert_eq!(asked.kind, pb::ApprovalKind::Input as i32);
    assert_ne!(asked.session_id, parent.id, "the request is the helper's");
    assert_eq!(asked.parent_session_ids, vec![parent.id.clone()]);
    approvals
        .resolve_approval(pb::ResolveApprovalRequest {
            request_id: asked.request_id,
            action: pb::HumanInputAction::Decline as i32,
            ..Default::default()
        })
        .await
        .expect("declined");
    server
        .wait_for_state(&execution, pb::ExecutionState::Completed)
        .await;
}

/// With one worker, a turn whose MCP server waits for a person gives the worker back, so
/// another session's turn runs meanwhile; the first turn goes on once answered.
#[tokio::test]
async fn a_turn_waiting_for_input_gives_its_worker_back() {
    let modules = node_modules();
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(call("c1", ELICIT, "{}"))
            .reply(text("The other session ran."))
            .reply(text("Declined.")),
    )
    .await
    .expect("loopback model");
    let (server, waiting) = elicit_server(&model, &modules, Duration::from_secs(600)).await;
    let first = server.submit(&waiting.id, "Ask me.").await.expect("submit");
    let asked = pending_input(&server, &waiting.id).await;

    let other = server.create_session(&waiting.bundle_reference).await;
    let status = tokio::time::timeout(
        Duration::from_secs(30),
        server.run(&other.id, "Run meanwhile."),
    )
    .await
    .expect("the other session's turn runs while the first waits for a person");
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );

    ApprovalServiceClient::new(server.channel.clone())
        .resolve_approval(pb::ResolveApprovalRequest {
            request_id: asked.request_id,
            action: pb::HumanInputAction::Decline as i32,
            ..Default::default()
        })
        .await
        .expect("declined");
    server
        .wait_for_state(&first, pb::ExecutionState::Completed)
        .await;
}
