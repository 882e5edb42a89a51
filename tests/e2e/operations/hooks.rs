//! Operator event hooks on a real server: a webhook on loopback (axum) gets every event of
//! a turn in order, a command hook from the configuration file writes the types it asked
//! for to a file, and hooks that hang or crash never hold up a turn.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use odyssey_api::v1 as pb;
use serde_json::Value;

use super::{sample, scrape_until};
use crate::support::{Project, TestServer, loopback, payload_kind};

/// A hook's body parsed by the canonical proto3 JSON parser: the event of the
/// `SubscribeSessionResponse` the server sends hooks, as SubscribeSession would.
fn parsed(body: &Value) -> pb::SessionEvent {
    let response: pb::SubscribeSessionResponse = odyssey_api::json::from_str(&body.to_string())
        .unwrap_or_else(|e| panic!("not a SubscribeSessionResponse ({e}): {body}"));
    match response.item {
        Some(pb::subscribe_session_response::Item::Event(event)) => event,
        other => panic!("not an event: {other:?}"),
    }
}

const BASH_CALL: &str = r#"{"tool_calls": [{"id": "call_h", "name": "Bash", "arguments": {"command": "printf hooked"}}]}"#;

fn project(name: &str) -> Project {
    Project::with_tools(
        name,
        &[BASH_CALL, r#"{"text": "Hooked."}"#],
        &["Bash"],
        "[Bash]",
        "[]",
        "[]",
    )
}

/// A webhook receiver on loopback: `POST /events` keeps each JSON body; `POST /hang`
/// never answers.
pub(super) struct Receiver {
    addr: SocketAddr,
    received: Arc<Mutex<Vec<Value>>>,
}

impl Receiver {
    pub(super) async fn start() -> Self {
        let received = Arc::new(Mutex::new(Vec::new()));
        let app = Router::new()
            .route(
                "/events",
                post(
                    |State(kept): State<Arc<Mutex<Vec<Value>>>>, body: String| async move {
                        let event = serde_json::from_str(&body).expect("a JSON event");
                        kept.lock().unwrap_or_else(|p| p.into_inner()).push(event);
                        StatusCode::NO_CONTENT
                    },
                ),
            )
            .route("/hang", post(std::future::pending::<StatusCode>))
            .with_state(received.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { addr, received }
    }

    pub(super) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// What arrived, once `count` events have (bounded: 30 s).
    pub(super) async fn wait_for(&self, count: usize) -> Vec<Value> {
        for _ in 0..300 {
            let received = self
                .received
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            if received.len() >= count {
                return received;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the webhook never got {count} events");
    }
}

/// Reads `file` until it holds `count` lines (bounded: 30 s).
async fn lines_of(file: &Path, count: usize) -> Vec<Value> {
    for _ in 0..300 {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        if text.lines().count() >= count {
            return text
                .lines()
                .map(|l| serde_json::from_str(l).expect("one JSON event per line"))
                .collect();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{} never held {count} events", file.display());
}

#[tokio::test]
async fn a_webhook_gets_every_event_of_a_turn_in_order() {
    let receiver = Receiver::start().await;
    let url = receiver.url("/events");
    let server = TestServer::start_with(|args| {
        args.event_hooks = vec![url];
        args.metrics_listen = Some(loopback());
    })
    .await;
    let session = server.session_on(&project("webhooked")).await;
    let status = server.run(&session.id, "tell the webhook").await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    let events = server.events(&session.id, 0, status.last_sequence).await;
    let received = receiver.wait_for(events.len()).await;

    let seen: Vec<(u64, String)> = received
        .iter()
        .map(|e| {
            // The public JSON form: the proto's names, 64-bit integers as strings.
            assert_eq!(e["event"]["sessionId"], session.id.as_str());
            let event = parsed(e);
            assert_eq!(e["event"]["sequence"], event.sequence.to_string());
            (event.sequence, payload_kind(&event).to_owned())
        })
        .collect();
    let logged: Vec<(u64, String)> = events
        .iter()
        .map(|e| (e.sequence, payload_kind(e).to_owned()))
        .collect();
    assert_eq!(seen, logged, "every event once, in order");
    assert_eq!(
        received[0]["event"]["turnStarted"]["prompt"],
        "tell the webhook"
    );
    let exec_end = received
        .iter()
        .find_map(|e| match parsed(e).payload {
            Some(pb::session_event::Payload::ExecCommandEnd(end)) => Some(end),
            _ => None,
        })
        .expect("the tool ran");
    assert_eq!(exec_end.exit_code, 0);

    let addr = server.handle.metrics_addr().expect("metrics");
    let delivered = [("hook", "hook-1"), ("outcome", "delivered")];
    let total = events.len() as f64;
    scrape_until(addr, None, "every event delivered", |text| {
        sample(text, "odyssey_event_hook_events_total", &delivered) == Some(total)
    })
    .await;
}

#[tokio::test]
async fn a_command_hook_from_the_config_file_writes_the_types_it_asked_for() {
    let dir = tempfile::tempdir().expect("dir");
    let sink = dir.path().join("turns.jsonl");
    let config = dir.path().join("odysseyd.toml");
    std::fs::write(
        &config,
        format!(
            "[[hooks.event]]\nname = \"turns\"\ncommand = [\"/bin/sh\", \"-c\", \"cat >> '{}'\"]\nevents = [\"turn_started\", \"turn_completed\"]\n",
            sink.display()
        ),
    )
    .expect("config file");
    let server = TestServer::start_with(|args| args.config = Some(config)).await;
    let session = server
        .session_on(&Project::replay(
            "recorded",
            &[r#"{"text": "One."}"#, r#"{"text": "Two."}"#],
        ))
        .await;
    for prompt in ["first", "second"] {
        let status = server.run(&session.id, prompt).await;
        assert_eq!(
            status.state,
            pb::ExecutionState::Completed as i32,
            "{status:?}"
        );
    }
    let lines = lines_of(&sink, 4).await;
    let events: Vec<pb::SessionEvent> = lines.iter().map(parsed).collect();
    let kinds: Vec<&str> = events.iter().map(payload_kind).collect();
    assert_eq!(
        kinds,
        [
            "turn_started",
            "turn_completed",
            "turn_started",
            "turn_completed"
        ]
    );
    assert_eq!(lines[1]["event"]["turnCompleted"]["response"], "One.");
    assert_eq!(lines[3]["event"]["turnCompleted"]["response"], "Two.");
    let sequences: Vec<u64> = events.iter().map(|e| e.sequence).collect();
    assert!(sequences.windows(2).all(|w| w[0] < w[1]), "{sequences:?}");

    // Stopping the server lets the hook finish; nothing is lost or repeated.
    server.stop().await;
    assert_eq!(lines_of(&sink, 4).await.len(), 4);
}

#[tokio::test]
async fn hooks_that_hang_or_crash_never_hold_up_a_turn() {
    let receiver = Receiver::start().await;
    let dir = tempfile::tempdir().expect("dir");
    let config = dir.path().join("odysseyd.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[[hooks.event]]
name = "hanging-webhook"
url = "{}"
timeout_ms = 300
queue_capacity = 1

[[hooks.event]]
name = "crashing"
command = ["/bin/sh", "-c", "exit 3"]

[[hooks.event]]
name = "not-reading"
command = ["/bin/sleep", "600"]
timeout_ms = 300
"#,
            receiver.url("/hang")
        ),
    )
    .expect("config file");
    let server = TestServer::start_with(|args| {
        args.config = Some(config);
        args.metrics_listen = Some(loopback());
    })
    .await;
    let session = server.session_on(&project("unhooked")).await;
    // Far more than a pipe holds: a hook that does not read blocks on the first event.
    let prompt = format!("remember this: {}", "x".repeat(300 * 1024));
    let status = tokio::time::timeout(Duration::from_secs(60), server.run(&session.id, &prompt))
        .await
        .expect("the turn ends while its hooks fail");
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    assert_eq!(status.response, "Hooked.");

    let addr = server.handle.metrics_addr().expect("metrics");
    let events = status.last_sequence as f64;
    let count = |text: &str, hook: &str, outcome: &str| {
        sample(
            text,
            "odyssey_event_hook_events_total",
            &[("hook", hook), ("outcome", outcome)],
        )
        .unwrap_or(0.0)
    };
    let error = |text: &str, hook: &str, kind: &str| {
        sample(
            text,
            "odyssey_event_hook_errors_total",
            &[("hook", hook), ("kind", kind)],
        )
        .unwrap_or(0.0)
    };
    // The webhook never answers: each event it was handed failed after its timeout, and
    // the ones that did not fit its queue of one were dropped.
    let text = scrape_until(addr, None, "the hanging webhook's events settled", |text| {
        count(text, "hanging-webhook", "failed") + count(text, "hanging-webhook", "dropped")
            == events
    })
    .await;
    assert_eq!(count(&text, "hanging-webhook", "delivered"), 0.0);
    assert_eq!(
        error(&text, "hanging-webhook", "timeout"),
        count(&text, "hanging-webhook", "failed")
    );
    assert!(count(&text, "hanging-webhook", "failed") >= 1.0, "{text}");
    scrape_until(addr, None, "the crashing hook's exit", |text| {
        error(text, "crashing", "exit") >= 1.0
    })
    .await;
    scrape_until(
        addr,
        None,
        "the hook that stopped reading timed out",
        |text| error(text, "not-reading", "timeout") >= 1.0,
    )
    .await;

    // Shutting down does not wait on them either.
    tokio::time::timeout(Duration::from_secs(30), server.stop())
        .await
        .expect("the server stops despite its hooks");
}
