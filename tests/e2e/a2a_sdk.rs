//! Interop with the official A2A Python SDK (`a2a-sdk`, pinned in
//! scripts/tools/a2a-requirements.txt, installed by scripts/install-tools): its client
//! discovers an Odyssey agent from the card, runs tasks over gRPC, JSON-RPC and HTTP+JSON (plain,
//! streamed, cancelled, input-required answered with a decision) and reads A2A's errors, against a real server whose agent talks
//! to the loopback OpenAI wire server.

use std::path::PathBuf;
use std::time::Duration;

use odyssey_runtime::provider::ProviderSettings;
use odyssey_testing::openai_wire::{OpenAiWireServer, Script, StreamBuilder};

use crate::support::{Project, TestServer, loopback};

const KEY: &str = "sk-test-a2a-interop-0123456789";
const TOKEN: &str = "a2a-sdk-test-token";

/// The Python of the virtual environment holding `a2a-sdk`.
fn python() -> PathBuf {
    if let Some(path) = std::env::var_os("A2A_PYTHON") {
        return PathBuf::from(path);
    }
    let installed =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.ci/tools/a2a-venv/bin/python");
    assert!(
        installed.is_file(),
        "the a2a-sdk environment is not at {}: run scripts/install-tools (or set A2A_PYTHON)",
        installed.display()
    );
    installed
}

#[tokio::test]
async fn the_official_a2a_python_client_discovers_runs_streams_and_cancels_tasks_over_grpc() {
    drive("GRPC").await;
}

#[tokio::test]
async fn the_official_a2a_python_client_discovers_runs_streams_and_cancels_tasks_over_jsonrpc() {
    drive("JSONRPC").await;
}

#[tokio::test]
async fn the_official_a2a_python_client_discovers_runs_streams_and_cancels_tasks_over_http_json() {
    drive("HTTP+JSON").await;
}

/// Runs the client's checks over `binding`, the card's name of an interface.
async fn drive(binding: &str) {
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(
                StreamBuilder::new()
                    .text("Hello from Odyssey", 3)
                    .finish("stop")
                    .done()
                    .build(),
            )
            .reply(
                StreamBuilder::new()
                    .text("one two three", 3)
                    .finish("stop")
                    .done()
                    .build(),
            )
            .reply(
                StreamBuilder::new()
                    .tool_call(0, "call_1", "Bash", r#"{"command": "echo decided"}"#, 2)
                    .finish("tool_calls")
                    .done()
                    .build(),
            )
            .reply(
                StreamBuilder::new()
                    .text("Denied as asked", 2)
                    .finish("stop")
                    .done()
                    .build(),
            )
            // Last: a task cancelled before its model call starts leaves it unused.
            .reply(
                StreamBuilder::new()
                    .text("Slowly ", 1)
                    .pause(Duration::from_secs(60))
                    .text("never sent", 1)
                    .finish("stop")
                    .done()
                    .build(),
            ),
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
    let project = Project::openai("interop");
    // Bash asks a person first: its call makes the task input-required.
    project.write(
        "odyssey.bundle.yaml",
        "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: interop\n  version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      default: true\n  tools:\n    - { name: Bash, source: builtin }\n  sandbox:\n    mode: workspace_write\n",
    );
    project.write(
        "agents/main/agent.yaml",
        "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\n  version: 0.1.0\n  description: test agent\nspec:\n  kind: prompt\n  prompt: You are a test agent.\n  model:\n    provider: openai\n    name: gpt-test\n  tools:\n    allow: []\n    ask: [Bash]\n    deny: []\n",
    );
    server
        .handle
        .runtime()
        .build_and_install(project.path(), Default::default())
        .await
        .expect("install");

    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("e2e/a2a_sdk/client.py");
    let base = format!(
        "http://{}",
        server.handle.http_addr().expect("the gateway runs")
    );
    let run = tokio::process::Command::new(python())
        .arg(&script)
        .arg(&base)
        .arg(TOKEN)
        .arg(binding)
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
        "a2a-sdk client failed over {binding}\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stdout.contains(&format!("ok: the card offers {binding}: ")),
        "the client took the card's {binding} interface:\n{stdout}"
    );
    assert!(
        stdout.contains("ok: the extended card, behind the token, lists the agent's tools"),
        "the client read the extended card:\n{stdout}"
    );
    assert!(
        stdout.contains("ok: the decision resolves the approval"),
        "the input-required task was answered:\n{stdout}"
    );
    assert!(
        stdout.contains("ok: ListTasks lists the context's task"),
        "the task was listed:\n{stdout}"
    );
    assert!(
        stdout.contains("ok: an unknown task is TaskNotFoundError"),
        "every check ran:\n{stdout}"
    );
}
