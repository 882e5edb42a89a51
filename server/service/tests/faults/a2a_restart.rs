//! A2A tasks across a crash and a restart, driven by the official `a2a-sdk` client: a
//! streamed task whose server is killed (SIGKILL) mid-answer is found by the restarted
//! server from its session's log, with every chunk of the answer the log kept (the client
//! had seen only the first), once over each binding the cards offer.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use futures::StreamExt;
use odyssey_api::v1 as pb;
use odyssey_testing::openai_wire::{Reply, Script, StreamBuilder};
use serde_json::Value;

use crate::support::odysseyd::MODEL_KEY;
use crate::support::{Launch, Odysseyd, bundle_archive, last_message, temp_home};

const TOKEN: &str = "a2a-restart-token";

/// The Python of the virtual environment holding `a2a-sdk` (see scripts/install-tools).
fn python() -> PathBuf {
    if let Some(path) = std::env::var_os("A2A_PYTHON") {
        return PathBuf::from(path);
    }
    let installed =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.ci/tools/a2a-venv/bin/python");
    assert!(
        installed.is_file(),
        "the a2a-sdk environment is not at {}: run scripts/install-tools (or set A2A_PYTHON)",
        installed.display()
    );
    installed
}

/// The story starts in two chunks, then the model stalls (the kill lands there); any
/// other prompt gets a short answer.
fn model(request: &Value) -> Reply {
    let (_, prompt) = last_message(request);
    let stream = if prompt == "Tell a long story" {
        StreamBuilder::new()
            .text("Once upon ", 1)
            .pause(Duration::from_millis(300))
            .text("a time ", 1)
            .pause(Duration::from_secs(120))
            .text("the end", 1)
    } else {
        StreamBuilder::new().text("Done.", 1)
    };
    stream.finish("stop").done().build()
}

/// `message` with the server's token.
fn authed<T>(message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {TOKEN}").parse().expect("ascii"),
    );
    request
}

/// The HTTP listener's address, from the child's log.
fn http_addr(server: &Odysseyd) -> SocketAddr {
    server
        .log_lines()
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|r| r["fields"]["message"] == "HTTP gateway listening")
        .and_then(|r| r["fields"]["addr"].as_str().and_then(|a| a.parse().ok()))
        .expect("the child logs its HTTP listener")
}

async fn python_step(args: &[&str]) -> String {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/faults/a2a_restart.py");
    let run = tokio::process::Command::new(python())
        .arg(&script)
        .args(args)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(90), run)
        .await
        .expect("the a2a-sdk client finishes within 90 s")
        .expect("the client runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "a2a-sdk client failed: {args:?}\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Waits until session `session_id` shows `count` agent text deltas.
async fn wait_for_deltas(server: &Odysseyd, session_id: &str, count: usize) {
    let mut stream = server
        .sessions()
        .subscribe_session(authed(pb::SubscribeSessionRequest {
            session_id: session_id.into(),
            after_sequence: 0,
        }))
        .await
        .expect("subscribe")
        .into_inner();
    let mut seen = 0;
    while seen < count {
        let item = tokio::time::timeout(Duration::from_secs(20), stream.next())
            .await
            .expect("the deltas come")
            .expect("the stream goes on")
            .expect("an event");
        if let Some(pb::subscribe_session_response::Item::Event(event)) = item.item
            && matches!(
                event.payload,
                Some(pb::session_event::Payload::AgentMessageDelta(_))
            )
        {
            seen += 1;
        }
    }
}

async fn killed_and_restarted(binding: &str) {
    let model =
        odyssey_testing::openai_wire::OpenAiWireServer::start(Script::respond(MODEL_KEY, model))
            .await
            .expect("loopback model");
    let home = temp_home();
    let mut launch = Launch::new(home.path());
    launch.model_url = Some(model.base_url());
    launch.flags = ["--http-listen", "127.0.0.1:0", "--auth-token", TOKEN]
        .map(String::from)
        .to_vec();
    let server = Odysseyd::start(&launch).await;
    let chunks = vec![pb::BuildBundleRequest {
        item: Some(pb::build_bundle_request::Item::Chunk(bundle_archive(
            "storyteller",
        ))),
    }];
    server
        .bundles()
        .build_bundle(authed(futures::stream::iter(chunks)))
        .await
        .expect("bundle installs");
    let base = format!("http://{}", http_addr(&server));

    let sent = python_step(&["send", &base, TOKEN, binding]).await;
    let sent: Value = serde_json::from_str(sent.trim()).expect("the send step's JSON line");
    let (task, context, seen) = (
        sent["task"].as_str().expect("task"),
        sent["context"].as_str().expect("context"),
        sent["text"].as_str().expect("text"),
    );
    assert_eq!(seen, "Once upon ", "the client left after the first chunk");
    assert!(sent["sequence"].as_u64().is_some_and(|s| s > 0), "{sent}");
    // The second chunk reaches the log after the client left; then the server dies.
    wait_for_deltas(&server, context, 2).await;
    server.kill().await;

    let server = Odysseyd::start(&launch).await;
    let base = format!("http://{}", http_addr(&server));
    let after = python_step(&["after", &base, TOKEN, binding, task, context, seen]).await;
    assert!(
        after.contains("ok: its answer holds all the log kept: 'Once upon a time '"),
        "{after}"
    );
    assert!(
        after.contains("ok: the newest task is listed first"),
        "every check ran: {after}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_a2a_task_killed_with_its_server_is_found_from_the_log_over_jsonrpc() {
    killed_and_restarted("JSONRPC").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_a2a_task_killed_with_its_server_is_found_from_the_log_over_grpc() {
    killed_and_restarted("GRPC").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_a2a_task_killed_with_its_server_is_found_from_the_log_over_http_json() {
    killed_and_restarted("HTTP+JSON").await;
}
