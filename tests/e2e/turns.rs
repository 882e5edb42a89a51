//! Turns: streamed events, tool-call round trips, replay equal to the live tail,
//! concurrency across sessions, order within one, a full queue, cancellation.

use std::time::Duration;

use futures::StreamExt;
use odyssey_api::v1 as pb;
use pb::session_event::Payload;
use tonic::Code;

use crate::support::{Project, TestServer, bad_fields, first_payload, payload_kind, turn};

/// A cassette answer streamed in `chunks` pieces, `delay_ms` apart.
fn slow_answer(chunks: usize, delay_ms: u64) -> String {
    let pieces: Vec<String> = (0..chunks).map(|i| format!("\"w{i} \"")).collect();
    format!(
        r#"{{"text": [{}], "chunk_delay_ms": {delay_ms}}}"#,
        pieces.join(",")
    )
}

#[tokio::test]
async fn a_turn_streams_reasoning_text_usage_and_ends_with_its_record() {
    let server = TestServer::start().await;
    let session = server
        .session_on(&Project::replay(
            "streamer",
            &[r#"{"reasoning": ["Think", "ing"], "text": ["Hel", "lo ", "world"], "usage": {"input_tokens": 11, "output_tokens": 3}}"#],
        ))
        .await;
    let status = server.run(&session.id, "Say hello").await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    assert_eq!(status.response, "Hello world");
    assert_eq!(status.usage.as_ref().map(|u| u.input_tokens), Some(11));

    let events = server.events(&session.id, 0, status.last_sequence).await;
    let kinds: Vec<&str> = events.iter().map(payload_kind).collect();
    assert_eq!(
        kinds,
        [
            "turn_started",
            "reasoning_delta",
            "reasoning_delta",
            "agent_message_delta",
            "agent_message_delta",
            "agent_message_delta",
            "token_usage_reported",
            "turn_completed"
        ]
    );
    let sequences: Vec<u64> = events.iter().map(|e| e.sequence).collect();
    assert_eq!(sequences, (1..=8).collect::<Vec<u64>>(), "gap-free from 1");
    assert!(events.iter().all(|e| e.turn_id == status.execution_id));
    let Some(Payload::TurnStarted(started)) = &events[0].payload else {
        panic!("first event is turn_started");
    };
    assert_eq!(started.prompt, "Say hello");
    let context = started.context.as_ref().expect("context");
    assert_eq!(context.sandbox_mode, pb::SandboxMode::WorkspaceWrite as i32);
    assert_eq!(
        context.model.as_ref().map(|m| m.name.as_str()),
        Some("main")
    );
    let Some(Payload::TurnCompleted(done)) = &events[7].payload else {
        panic!("last event is turn_completed");
    };
    assert_eq!(done.outcome, pb::TurnOutcome::Completed as i32);
    assert_eq!(done.response, "Hello world");
    let roles: Vec<i32> = done.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [pb::ChatRole::User as i32, pb::ChatRole::Assistant as i32]
    );

    let session = server.get_session(&session.id).await;
    assert_eq!(session.turn_count, 1);
    assert_eq!(session.last_sequence, 8);
    assert_eq!(session.usage.map(|u| u.output_tokens), Some(3));
}

#[tokio::test]
async fn a_call_to_a_missing_tool_goes_back_to_the_model_and_the_turn_goes_on() {
    let server = TestServer::start().await;
    let session = server
        .session_on(&Project::replay(
            "tooly",
            &[
                r#"{"tool_calls": [{"id": "call_1", "name": "Read", "arguments": {"path": "notes.txt"}}]}"#,
                // Matches only if the tool's error result was fed back as the last message.
                r#"{"text": "No Read tool here.", "request": {"last_message": {"role": "tool", "content": "tool `Read` is not available: this agent has no tools"}}}"#,
                r#"{"text": "Second turn remembers.", "request": {"last_message": {"role": "user", "content": "again"}}}"#,
            ],
        ))
        .await;
    let status = server.run(&session.id, "Read my notes").await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    assert_eq!(status.response, "No Read tool here.");
    let events = server.events(&session.id, 0, status.last_sequence).await;
    let finished = first_payload!(events, ToolCallFinished).expect("tool_call_finished");
    assert_eq!(finished.call_id, "call_1");
    assert!(!finished.success);
    let started = first_payload!(events, ToolCallStarted).expect("tool_call_started");
    assert_eq!(started.tool, "Read");
    assert!(
        started
            .arguments
            .expect("arguments")
            .fields
            .contains_key("path")
    );

    let second = server.run(&session.id, "again").await;
    assert_eq!(
        second.state,
        pb::ExecutionState::Completed as i32,
        "{second:?}"
    );
    assert_eq!(second.response, "Second turn remembers.");
}

#[tokio::test]
async fn replay_from_the_middle_of_a_turn_equals_the_live_tail() {
    let server = TestServer::start().await;
    let session = server
        .session_on(&Project::replay("live", &[&slow_answer(30, 20)]))
        .await;
    // Follow live from the start while the turn runs.
    let mut live = server
        .sessions()
        .subscribe_session(pb::SubscribeSessionRequest {
            session_id: session.id.clone(),
            after_sequence: 0,
        })
        .await
        .expect("subscribe")
        .into_inner();
    let execution_id = server.submit(&session.id, "go").await.expect("submit");
    let mut live_events = Vec::new();
    while let Some(item) = tokio::time::timeout(Duration::from_secs(20), live.next())
        .await
        .expect("live events")
    {
        if let Some(pb::subscribe_session_response::Item::Event(e)) = item.expect("item").item {
            let done = matches!(e.payload, Some(Payload::TurnCompleted(_)));
            live_events.push(e);
            if done {
                break;
            }
        }
    }
    let last = live_events.last().map(|e| e.sequence).expect("events");
    assert_eq!(server.status(&execution_id).await.last_sequence, last);
    for middle in [1, 7, 15, last - 1] {
        let replayed = server.events(&session.id, middle, last).await;
        assert_eq!(
            replayed,
            live_events[middle as usize..].to_vec(),
            "replay after {middle}"
        );
    }
}

#[tokio::test]
async fn a_subscriber_joining_mid_turn_misses_nothing_and_sees_no_duplicate() {
    let server = TestServer::start().await;
    let session = server
        .session_on(&Project::replay("seam", &[&slow_answer(40, 15)]))
        .await;
    let execution_id = server.submit(&session.id, "go").await.expect("submit");
    server
        .wait_for_state(&execution_id, pb::ExecutionState::Running)
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let events = server.events_until_turn_end(&session.id, 0).await;
    let kinds: Vec<&str> = events.iter().map(payload_kind).collect();
    assert_eq!(kinds.first(), Some(&"turn_started"));
    assert_eq!(kinds.last(), Some(&"turn_completed"));
    let sequences: Vec<u64> = events.iter().map(|e| e.sequence).collect();
    assert_eq!(sequences, (1..=events.len() as u64).collect::<Vec<_>>());
}

#[tokio::test]
async fn sessions_run_concurrently_while_one_session_runs_in_order() {
    let server = TestServer::start().await;
    let cassette = [slow_answer(10, 40), slow_answer(10, 40)];
    let cassette: Vec<&str> = cassette.iter().map(String::as_str).collect();
    let project = Project::replay("parallel", &cassette);
    let bundle = server.install(&project).await;
    let reference = format!(
        "{}@{}",
        crate::support::bundle_name(&bundle),
        crate::support::bundle_version(&bundle)
    );
    let a = server.create_session(&reference).await;
    let b = server.create_session(&reference).await;

    let a1 = server.submit(&a.id, "first").await.expect("a1");
    let a2 = server.submit(&a.id, "second").await.expect("a2");
    let b1 = server.submit(&b.id, "other").await.expect("b1");
    for id in [&a1, &a2, &b1] {
        server
            .wait_for_state(id, pb::ExecutionState::Completed)
            .await;
    }
    let (a1s, a2s, b1s) = (
        server.status(&a1).await,
        server.status(&a2).await,
        server.status(&b1).await,
    );
    // One session: the second turn starts after the first ended, in submission order.
    assert!(
        a2s.first_sequence > a1s.last_sequence,
        "{a1s:?} then {a2s:?}"
    );
    // Two sessions: B's turn started before A's first turn ended.
    let a_events = server.events(&a.id, 0, a1s.last_sequence).await;
    let b_events = server.events(&b.id, 0, b1s.last_sequence).await;
    let millis = |t: &Option<prost_types::Timestamp>| {
        t.as_ref()
            .map_or(0, |t| t.seconds * 1000 + i64::from(t.nanos / 1_000_000))
    };
    let a1_end = millis(&a_events.last().expect("a events").created_at);
    let b1_start = millis(&b_events.first().expect("b events").created_at);
    assert!(
        b1_start < a1_end,
        "B started at {b1_start}, A's first turn ended at {a1_end}: they overlapped"
    );
}

#[tokio::test]
async fn a_full_queue_answers_resource_exhausted_with_a_retry_hint() {
    let server = TestServer::start_with(|args| {
        args.worker_count = Some(1);
        args.queue_capacity = Some(1);
    })
    .await;
    let project = Project::replay("busy", &[&slow_answer(20, 50)]);
    let bundle = server.install(&project).await;
    let reference = format!("busy@{}", crate::support::bundle_version(&bundle));
    let (a, b, c) = (
        server.create_session(&reference).await,
        server.create_session(&reference).await,
        server.create_session(&reference).await,
    );
    let running = server.submit(&a.id, "one").await.expect("runs");
    server
        .wait_for_state(&running, pb::ExecutionState::Running)
        .await;
    let queued = server.submit(&b.id, "two").await.expect("queued");
    assert_eq!(
        server.status(&queued).await.state,
        pb::ExecutionState::Queued as i32
    );
    let refused = server
        .submit(&c.id, "three")
        .await
        .expect_err("queue is full");
    assert_eq!(refused.code(), Code::ResourceExhausted);
    use tonic_types::StatusExt;
    assert!(
        refused.get_details_retry_info().is_some(),
        "carries RetryInfo"
    );
    // Cancel the queued one: it is recorded as cancelled without running.
    let cancelled = server
        .executions()
        .cancel_execution(pb::CancelExecutionRequest {
            execution_id: queued.clone(),
        })
        .await
        .expect("cancel queued")
        .into_inner()
        .status
        .expect("status");
    assert_eq!(cancelled.state, pb::ExecutionState::Cancelled as i32);
    server
        .submit(&c.id, "three again")
        .await
        .expect("room again");
}

#[tokio::test]
async fn cancelling_a_running_turn_stops_it_promptly_and_records_it() {
    let server = TestServer::start().await;
    let session = server
        .session_on(&Project::replay("cancel", &[&slow_answer(200, 50)]))
        .await;
    let execution_id = server
        .submit(&session.id, "talk forever")
        .await
        .expect("submit");
    server
        .wait_for_state(&execution_id, pb::ExecutionState::Running)
        .await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    let status = tokio::time::timeout(
        Duration::from_secs(1),
        server
            .executions()
            .cancel_execution(pb::CancelExecutionRequest {
                execution_id: execution_id.clone(),
            }),
    )
    .await
    .expect("cancel answers within 1 s")
    .expect("cancel")
    .into_inner()
    .status
    .expect("status");
    assert_eq!(status.state, pb::ExecutionState::Cancelled as i32);
    let events = server.events(&session.id, 0, status.last_sequence).await;
    let Some(Payload::TurnCompleted(done)) = &events.last().and_then(|e| e.payload.clone()) else {
        panic!("the turn ends with turn_completed");
    };
    assert_eq!(done.outcome, pb::TurnOutcome::Cancelled as i32);
    assert!(events.len() < 200, "stopped before the answer ended");
    // The session takes new turns afterwards.
    let next = server
        .submit(&session.id, "again")
        .await
        .expect("next turn queues");
    server
        .wait_for_state(&next, pb::ExecutionState::Failed)
        .await; // cassette has one entry
}

#[tokio::test]
async fn bad_turn_requests_and_exhausted_cassettes_fail_clearly() {
    let server = TestServer::start().await;
    let session = server
        .session_on(&Project::replay("strict", &[r#"{"text": "only once"}"#]))
        .await;
    let empty = server
        .executions()
        .run(pb::RunRequest {
            input: Some(turn(&session.id, "   ")),
        })
        .await
        .expect_err("empty prompt");
    assert_eq!(empty.code(), Code::InvalidArgument);
    assert_eq!(bad_fields(&empty), vec!["input.prompt"]);
    let missing = server
        .executions()
        .run(pb::RunRequest { input: None })
        .await
        .expect_err("no input");
    assert_eq!(missing.code(), Code::InvalidArgument);
    let escape = server
        .executions()
        .run(pb::RunRequest {
            input: Some(pb::TurnInput {
                overrides: Some(pb::TurnOverrides {
                    cwd: "../../etc".into(),
                    model: None,
                }),
                ..turn(&session.id, "hi")
            }),
        })
        .await
        .expect_err("cwd escape");
    assert_eq!(bad_fields(&escape), vec!["input.overrides.cwd"]);
    let unknown = server
        .executions()
        .submit(pb::SubmitRequest {
            input: Some(turn(&uuid::Uuid::new_v4().to_string(), "hi")),
        })
        .await
        .expect_err("unknown session");
    assert_eq!(unknown.code(), Code::NotFound);

    assert_eq!(
        server.run(&session.id, "first").await.state,
        pb::ExecutionState::Completed as i32
    );
    let failed = server.run(&session.id, "second").await;
    assert_eq!(failed.state, pb::ExecutionState::Failed as i32);
    assert!(
        failed.error.contains("cassettes/main.jsonl"),
        "names the cassette: {}",
        failed.error
    );
    let events = server.events(&session.id, 0, failed.last_sequence).await;
    let kinds: Vec<&str> = events.iter().map(payload_kind).collect();
    assert_eq!(
        &kinds[kinds.len() - 3..],
        ["turn_started", "error_occurred", "turn_completed"]
    );
}

#[tokio::test]
async fn the_step_and_time_budgets_end_a_turn_with_an_error_event() {
    let server = TestServer::start_with(|args| {
        args.max_turn_steps = Some(2);
        args.max_turn_seconds = Some(1);
    })
    .await;
    let looping = r#"{"tool_calls": [{"name": "Read", "arguments": {"path": "x"}}]}"#;
    let session = server
        .session_on(&Project::replay("budget", &[looping, looping, looping]))
        .await;
    let status = server.run(&session.id, "loop").await;
    assert_eq!(status.state, pb::ExecutionState::Failed as i32);
    assert!(
        status.error.contains("budget of 2 model calls"),
        "{}",
        status.error
    );
    let events = server.events(&session.id, 0, status.last_sequence).await;
    let code = first_payload!(events, ErrorOccurred).map(|p| p.code);
    assert_eq!(code.as_deref(), Some("step_budget_exceeded"));

    let slow = server
        .session_on(&Project::replay("slowpoke", &[&slow_answer(100, 50)]))
        .await;
    let status = server.run(&slow.id, "take your time").await;
    assert_eq!(status.state, pb::ExecutionState::Failed as i32);
    let events = server.events(&slow.id, 0, status.last_sequence).await;
    let code = first_payload!(events, ErrorOccurred).map(|p| p.code);
    assert_eq!(code.as_deref(), Some("turn_timeout"));
}
