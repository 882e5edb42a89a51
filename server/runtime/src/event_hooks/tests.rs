//! The dispatcher and the command hook with a real process: filters, order, the bounded
//! queue, and the metrics that report them.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::registry::Registry;
use uuid::Uuid;

use super::*;
use crate::events::{EventPayload, now_ms};

fn event(session: Uuid, sequence: u64, payload: EventPayload) -> Arc<Event> {
    Arc::new(Event {
        id: Uuid::new_v4(),
        session_id: session,
        sequence,
        created_at_ms: now_ms(),
        turn_id: None,
        payload,
    })
}

fn delta(session: Uuid, sequence: u64) -> Arc<Event> {
    event(
        session,
        sequence,
        EventPayload::AgentMessageDelta {
            delta: format!("piece {sequence}"),
        },
    )
}

/// The text of `hooks`' metrics.
fn scrape(hooks: &Arc<EventHooks>) -> String {
    #[derive(Debug)]
    struct Hooks(Arc<EventHooks>);
    impl Collector for Hooks {
        fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
            self.0.encode(&mut encoder)
        }
    }
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Hooks(hooks.clone())));
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).expect("encodes");
    text
}

fn sink(name: &str, file: &std::path::Path) -> EventHookConfig {
    EventHookConfig::new(
        name,
        HookTarget::Command(vec![
            "/bin/sh".into(),
            "-c".into(),
            format!("cat >> '{}'", file.display()),
        ]),
    )
}

#[tokio::test(flavor = "current_thread")]
async fn a_hook_gets_its_event_types_in_order_and_drops_what_overflows_its_queue() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("events.jsonl");
    let mut config = sink("deltas", &file);
    config.events = vec!["agent_message_delta".into()];
    config.queue_capacity = 3;
    let hooks =
        Arc::new(EventHooks::start(&[config], &EventEncoder::default()).expect("hooks start"));
    let session = Uuid::new_v4();
    // The hook's task cannot run before this returns (one thread): three fit the queue.
    hooks.dispatch(&event(session, 1, EventPayload::ReasoningSectionBreak));
    for sequence in 2..=6 {
        hooks.dispatch(&delta(session, sequence));
    }
    hooks.close(Duration::from_secs(10)).await;

    let text = std::fs::read_to_string(&file).expect("the hook wrote");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON event per line"))
        .collect();
    let sequences: Vec<u64> = lines.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(sequences, [2, 3, 4], "{text}");
    assert!(lines.iter().all(|e| e["type"] == "agent_message_delta"));
    assert_eq!(lines[0]["data"]["delta"], "piece 2");
    assert_eq!(lines[0]["session_id"], session.to_string());

    let metrics = scrape(&hooks);
    for line in [
        r#"odyssey_event_hook_events_total{hook="deltas",outcome="delivered"} 3"#,
        r#"odyssey_event_hook_events_total{hook="deltas",outcome="dropped"} 2"#,
        r#"odyssey_event_hook_events_total{hook="deltas",outcome="failed"} 0"#,
        r#"odyssey_event_hook_queue_depth{hook="deltas"} 0"#,
    ] {
        assert!(metrics.contains(line), "{line} in\n{metrics}");
    }
}

#[tokio::test]
async fn a_command_that_cannot_start_fails_its_events_and_says_why() {
    let hook = EventHookConfig::new(
        "missing",
        HookTarget::Command(vec!["/nonexistent/odyssey-hook".into()]),
    );
    let hooks =
        Arc::new(EventHooks::start(&[hook], &EventEncoder::default()).expect("hooks start"));
    let session = Uuid::new_v4();
    for sequence in 1..=3 {
        hooks.dispatch(&delta(session, sequence));
    }
    hooks.close(Duration::from_secs(10)).await;
    let metrics = scrape(&hooks);
    // One start is tried; the events after it wait for the back-off and fail too.
    for line in [
        r#"odyssey_event_hook_errors_total{hook="missing",kind="start"} 1"#,
        r#"odyssey_event_hook_events_total{hook="missing",outcome="failed"} 3"#,
        r#"odyssey_event_hook_events_total{hook="missing",outcome="delivered"} 0"#,
    ] {
        assert!(metrics.contains(line), "{line} in\n{metrics}");
    }
}

#[test]
fn bad_configurations_are_refused_before_anything_starts() {
    let hook = EventHookConfig::new(
        "plain",
        HookTarget::Webhook {
            url: "http://hooks.example.com/x".into(),
            allow_http: false,
        },
    );
    let error = EventHooks::start(&[hook], &EventEncoder::default()).expect_err("refused");
    assert!(error.contains("allow_http"), "{error}");
}

/// The seam a server fills: hooks receive what the installed encoder writes (the server's
/// is the API's JSON form; `tests/e2e/operations/hooks.rs` checks it on a real server).
#[tokio::test(flavor = "current_thread")]
async fn hooks_receive_what_the_installed_encoder_writes() {
    struct Sequence;
    impl EncodeEvent for Sequence {
        fn encode(&self, event: &Event) -> Vec<u8> {
            format!("{{\"n\": {}}}", event.sequence).into_bytes()
        }
    }
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("events.jsonl");
    let hooks = Arc::new(
        EventHooks::start(&[sink("numbers", &file)], &EventEncoder::new(Sequence))
            .expect("hooks start"),
    );
    let session = Uuid::new_v4();
    for sequence in 1..=2 {
        hooks.dispatch(&delta(session, sequence));
    }
    hooks.close(Duration::from_secs(10)).await;
    let text = std::fs::read_to_string(&file).expect("the hook wrote");
    assert_eq!(text, "{\"n\": 1}\n{\"n\": 2}\n");
}
