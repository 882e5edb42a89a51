//! odysseyd served over MCP (`/mcp`), driven by the official MCP Python client (`mcp`,
//! pinned in scripts/tools/requirements.txt): it lists the agents, runs one against the
//! loopback OpenAI wire server, continues its session, cancels a slow turn and reads the
//! errors of bad calls and a wrong token.

use std::path::{Path, PathBuf};
use std::time::Duration;

use odyssey_runtime::events::{EventPayload, TurnOutcome};
use odyssey_runtime::provider::ProviderSettings;
use odyssey_testing::openai_wire::{OpenAiWireServer, Reply, Script, StreamBuilder};

use crate::support::{Project, TestServer, loopback};

const KEY: &str = "sk-test-mcp-serve-0123456789";
const TOKEN: &str = "mcp-serve-test-token";

/// The interpreter with the Python `mcp` package, or `ODYSSEY_TEST_PYTHON`.
fn python() -> PathBuf {
    let python = std::env::var_os("ODYSSEY_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci/tools/venv/bin/python")
        });
    let found = std::process::Command::new(&python)
        .args(["-c", "import mcp.client.streamable_http"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "{} cannot import the Python `mcp` package: run scripts/install-tools",
        python.display()
    );
    python
}

fn reply(text: &str) -> Reply {
    StreamBuilder::new()
        .text(text, 3)
        .finish("stop")
        .done()
        .build()
}

#[tokio::test]
async fn the_official_mcp_python_client_lists_runs_continues_and_cancels_agents() {
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(reply("Hello from Odyssey"))
            .reply(reply("one two three"))
            .reply(
                StreamBuilder::new()
                    .text("Slowly ", 1)
                    .pause(Duration::from_secs(60))
                    .text("never sent", 1)
                    .finish("stop")
                    .done()
                    .build(),
            )
            .reply(reply("After the cancel")),
    )
    .await
    .expect("loopback model");
    let base_url = model.base_url();
    let server = TestServer::start_configured(
        |args| {
            args.auth_token = Some(TOKEN.into());
            args.http_listen = Some(loopback());
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
        },
    )
    .await;
    let project = Project::openai("mcpserve");
    server
        .handle
        .runtime()
        .build_and_install(project.path(), Default::default())
        .await
        .expect("install");

    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("e2e/mcp_serve/client.py");
    let url = format!(
        "http://{}/mcp",
        server.handle.http_addr().expect("the gateway runs")
    );
    // A page rebinding its own name to the server reaches no agent, token or not.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rebound = reqwest::Client::new()
        .post(&url)
        .header("host", "rebound.example")
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("accept", "application/json, text/event-stream")
        .json(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .expect("the gateway answers");
    assert_eq!(rebound.status(), reqwest::StatusCode::MISDIRECTED_REQUEST);
    // What a page may post cross-site without a CORS preflight (`text/plain`) is refused.
    let form = reqwest::Client::new()
        .post(&url)
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "text/plain")
        .body(r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}"#)
        .send()
        .await
        .expect("the gateway answers");
    assert_eq!(form.status(), reqwest::StatusCode::UNSUPPORTED_MEDIA_TYPE);

    let run = tokio::process::Command::new(python())
        .arg(&script)
        .arg(&url)
        .arg(TOKEN)
        .arg("mcpserve__main")
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the client finishes within 2 minutes")
        .expect("the client runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "mcp client failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains("\ndone"), "every check ran:\n{stdout}");

    // The session the calls ran in holds four turns, the third cancelled.
    let session_id: uuid::Uuid = stdout
        .lines()
        .find_map(|l| l.strip_prefix("session: "))
        .expect("the client names the session")
        .parse()
        .expect("a session id");
    let runtime = server.handle.runtime();
    let last = runtime
        .get_session(session_id)
        .await
        .expect("the session")
        .stats
        .last_sequence;
    let mut subscription = runtime
        .subscribe_session(session_id, 0)
        .await
        .expect("subscribe");
    let mut outcomes = Vec::new();
    while subscription.cursor() < last {
        let batch = tokio::time::timeout(Duration::from_secs(20), subscription.next_batch())
            .await
            .expect("events keep coming")
            .expect("events")
            .expect("the log goes on");
        for event in batch {
            if let EventPayload::TurnCompleted(turn) = &event.payload {
                outcomes.push(turn.outcome);
            }
        }
    }
    assert_eq!(
        outcomes,
        vec![
            TurnOutcome::Completed,
            TurnOutcome::Completed,
            TurnOutcome::Cancelled,
            TurnOutcome::Completed,
        ],
        "{stdout}"
    );
}

#[tokio::test]
async fn a_call_whose_turn_asks_for_an_approval_waits_for_it_and_then_answers() {
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(
                StreamBuilder::new()
                    .tool_call(
                        0,
                        "call_1",
                        "Write",
                        r#"{"path": "note.txt", "content": "hi"}"#,
                        2,
                    )
                    .finish("tool_calls")
                    .done()
                    .build(),
            )
            .reply(reply("The note is written")),
    )
    .await
    .expect("loopback model");
    let base_url = model.base_url();
    let server = TestServer::start_configured(
        |args| {
            args.auth_token = Some(TOKEN.into());
            args.http_listen = Some(loopback());
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
        },
    )
    .await;
    let project = Project::openai("asking");
    project.write(
        "odyssey.bundle.yaml",
        "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: asking\n  version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      default: true\n  tools:\n    - { name: Write, source: builtin }\n  sandbox:\n    mode: workspace_write\n",
    );
    project.write(
        "agents/main/agent.yaml",
        "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\n  version: 0.1.0\nspec:\n  kind: prompt\n  prompt: You are a test agent.\n  model:\n    provider: openai\n    name: gpt-test\n  tools:\n    ask: [Write]\n",
    );
    let runtime = server.handle.runtime();
    runtime
        .build_and_install(project.path(), Default::default())
        .await
        .expect("install");

    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("e2e/mcp_serve/client.py");
    let url = format!(
        "http://{}/mcp",
        server.handle.http_addr().expect("the gateway runs")
    );
    let mut child = tokio::process::Command::new(python())
        .arg(&script)
        .arg(&url)
        .arg(TOKEN)
        .arg("asking__main")
        .arg("one")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the client runs");

    // The turn asks; the MCP call waits for a person's answer on ApprovalService.
    let approval = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let page = runtime
                .list_approvals(None, odyssey_runtime::PageRequest::first(10))
                .expect("approvals");
            if let Some(approval) = page.items.into_iter().next() {
                return approval;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the turn asks for an approval");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        child.try_wait().expect("the client's state").is_none(),
        "the call is still waiting while the approval is pending"
    );
    runtime
        .resolve_approval(
            &approval.request_id,
            odyssey_runtime::events::ApprovalDecision::AllowOnce,
            String::new(),
        )
        .expect("resolve");

    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the call answers once approved")
        .expect("the client's output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "mcp client failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stdout.contains("answer: The note is written (error: False)"),
        "{stdout}"
    );
}
