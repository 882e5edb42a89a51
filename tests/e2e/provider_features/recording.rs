//! Record mode: a session run against the loopback OpenAI server (streamed text, a tool
//! call split over deltas, a real tool run, usage) on a server started with
//! `--record-cassettes`; its cassette fetched over gRPC and with the CLI; then the same
//! prompts replayed offline, on a server with no provider settings at all, from a bundle
//! shipping that cassette with provider `replay`: same events, same answers.

use odyssey_api::v1 as pb;
use odyssey_runtime::provider::ProviderSettings;
use odyssey_testing::openai_wire::{OpenAiWireServer, Script, StreamBuilder, WireUsage};
use pb::session_event::Payload;

use super::project;
use crate::support::{TestServer, bad_fields};

const KEY: &str = "sk-record-loopback-key-77f3a1";
const PROMPTS: [&str; 2] = ["What is in the workspace?", "Thanks!"];

fn usage(prompt: u64, completion: u64) -> WireUsage {
    WireUsage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        ..WireUsage::default()
    }
}

/// The model's side of both turns: a tool call, its answer, and a second turn's answer.
fn script() -> Script {
    Script::new(KEY)
        .reply(
            StreamBuilder::new()
                .text("Let me look. ", 3)
                .tool_call(0, "call_ls_1", "LS", r#"{"path": "."}"#, 4)
                .finish("tool_calls")
                .usage(usage(40, 12))
                .done()
                .build(),
        )
        .reply(
            StreamBuilder::new()
                .text("The workspace is empty.", 4)
                .finish("stop")
                .usage(usage(70, 6))
                .done()
                .build(),
        )
        .reply(
            StreamBuilder::new()
                .text("You are welcome.", 2)
                .finish("stop")
                .usage(usage(90, 4))
                .done()
                .build(),
        )
}

/// The events of a session as comparable lines: what a client sees, minus ids, times and
/// the turn context (which names the model: openai on one side, replay on the other).
fn transcript(events: &[pb::SessionEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| match &e.payload {
            Some(Payload::TurnStarted(t)) => format!("turn_started {}", t.prompt),
            Some(Payload::AgentMessageDelta(d)) => format!("text {:?}", d.delta),
            Some(Payload::ReasoningDelta(d)) => format!("reasoning {:?}", d.delta),
            Some(Payload::ToolCallStarted(c)) => {
                format!("tool_started {} {} {:?}", c.call_id, c.tool, c.arguments)
            }
            Some(Payload::ToolCallFinished(c)) => format!(
                "tool_finished {} {} {} {:?}",
                c.call_id, c.tool, c.success, c.result
            ),
            Some(Payload::TokenUsageReported(u)) => {
                format!("usage {:?} {:?}", u.call, u.turn_total)
            }
            Some(Payload::TurnCompleted(t)) => format!(
                "turn_completed {} {:?} {:?} {} {}",
                t.outcome,
                t.response,
                t.usage,
                t.model_calls,
                t.messages.len()
            ),
            Some(other) => format!("{other:?}"),
            None => "none".into(),
        })
        .collect()
}

/// Runs both prompts; returns the answers and the session's transcript.
async fn run_both(server: &TestServer, session: &pb::Session) -> (Vec<String>, Vec<String>) {
    let mut answers = Vec::new();
    let mut last = 0;
    for prompt in PROMPTS {
        let status = server.run(&session.id, prompt).await;
        assert_eq!(
            status.state,
            pb::ExecutionState::Completed as i32,
            "{status:?}"
        );
        answers.push(status.response);
        last = status.last_sequence;
    }
    let events = server.events(&session.id, 0, last).await;
    (answers, transcript(&events))
}

async fn export(server: &TestServer, session_id: &str) -> Result<Vec<u8>, tonic::Status> {
    let mut stream = server
        .sessions()
        .export_session_cassette(pb::ExportSessionCassetteRequest {
            session_id: session_id.into(),
        })
        .await?
        .into_inner();
    let mut cassette = Vec::new();
    while let Some(message) = stream.message().await? {
        cassette.extend_from_slice(&message.chunk);
    }
    Ok(cassette)
}

#[tokio::test]
async fn a_recorded_session_replays_offline_with_the_same_events_and_answers() {
    let model = OpenAiWireServer::start(script())
        .await
        .expect("loopback model");
    let base_url = model.base_url();
    let live = TestServer::start_configured(
        |args| args.record_cassettes = true,
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
    let recorded = live
        .session_on(&project("recorded", "openai", "gpt-test", "{}", &["LS"]))
        .await;
    let (answers, events) = run_both(&live, &recorded).await;
    assert_eq!(answers, ["The workspace is empty.", "You are welcome."]);
    assert_eq!(model.requests().len(), 3);
    // Usage per call and per turn is in the events; per session in GetSession.
    let usage = live.get_session(&recorded.id).await.usage.expect("usage");
    assert_eq!((usage.input_tokens, usage.output_tokens), (200, 22));
    assert!(
        events
            .iter()
            .any(|e| e.starts_with("tool_finished call_ls_1 LS true")),
        "the tool really ran: {events:#?}"
    );

    let cassette = export(&live, &recorded.id)
        .await
        .expect("cassette exported");
    let text = String::from_utf8(cassette.clone()).expect("utf-8");
    assert_eq!(text.lines().count(), 3, "one entry per model call:\n{text}");
    assert!(!text.contains(KEY), "no secret in a cassette:\n{text}");

    // The CLI writes the same bytes to stdout.
    let args: Vec<String> = [
        "--server",
        &live.handle.url(),
        "session",
        "cassette",
        &recorded.id,
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = odyssey_cli::run_cli(args, &mut out, &mut err).await;
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&err));
    assert_eq!(out, cassette);
    drop(model);

    // Offline: no provider settings, the loopback model gone; replay plays the recording.
    let offline = TestServer::start().await;
    let replay = project("replayed", "replay", "gpt-test", "{}", &["LS"]);
    replay.write("cassettes/gpt-test.jsonl", &text);
    let replayed = offline.session_on(&replay).await;
    let (replayed_answers, replayed_events) = run_both(&offline, &replayed).await;
    assert_eq!(replayed_answers, answers);
    assert_eq!(replayed_events, events);
}

#[tokio::test]
async fn a_replay_that_leaves_the_recorded_path_fails_with_a_mismatch() {
    let model = OpenAiWireServer::start(script())
        .await
        .expect("loopback model");
    let base_url = model.base_url();
    let live = TestServer::start_configured(
        |args| args.record_cassettes = true,
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
    let session = live
        .session_on(&project("strayed", "openai", "gpt-test", "{}", &["LS"]))
        .await;
    let status = live.run(&session.id, PROMPTS[0]).await;
    assert_eq!(status.state, pb::ExecutionState::Completed as i32);
    let cassette = export(&live, &session.id).await.expect("cassette");

    let replay = project("strayed-replay", "replay", "gpt-test", "{}", &["LS"]);
    replay.write(
        "cassettes/gpt-test.jsonl",
        std::str::from_utf8(&cassette).expect("utf-8"),
    );
    let replayed = live.session_on(&replay).await;
    let status = live.run(&replayed.id, "Something else entirely").await;
    assert_eq!(status.state, pb::ExecutionState::Failed as i32);
    assert!(
        status.error.contains("does not match") && status.error.contains(PROMPTS[0]),
        "{}",
        status.error
    );
}

#[tokio::test]
async fn without_a_recording_the_export_is_refused_and_unknown_sessions_are_not_found() {
    let server = TestServer::start().await;
    let session = server
        .session_on(&crate::support::Project::replay(
            "unrecorded",
            &[r#"{"text": "hi"}"#],
        ))
        .await;
    let status = server.run(&session.id, "hello").await;
    assert_eq!(status.state, pb::ExecutionState::Completed as i32);
    let refused = export(&server, &session.id)
        .await
        .expect_err("nothing recorded");
    assert_eq!(refused.code(), tonic::Code::FailedPrecondition);
    assert!(
        refused.message().contains("--record-cassettes"),
        "{}",
        refused.message()
    );
    let missing = export(&server, "0190a0b4-7d2e-7c1a-8a4e-3f2b1c0d9e8f")
        .await
        .expect_err("no such session");
    assert_eq!(missing.code(), tonic::Code::NotFound);
    let bad = export(&server, "not-a-uuid").await.expect_err("bad id");
    assert_eq!(bad.code(), tonic::Code::InvalidArgument);
    assert_eq!(bad_fields(&bad), ["session_id"]);
}
