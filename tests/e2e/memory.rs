//! Memory and budgets through a real server: the sliding window and compaction of a long
//! session (against the OpenAI wire format, whose requests the loopback server keeps, and
//! the replay provider), a failing compaction falling back to truncation, long-term
//! memory across sessions and switched off, token budgets, and turn overrides.

use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::future::BoxFuture;
use odyssey_api::v1 as pb;
use odyssey_runtime::memory::compaction::{SUMMARY_INSTRUCTION, SUMMARY_PREFACE};
use odyssey_runtime::memory::{MemoryError, MemoryProvider, MemoryRecord, MemoryScope};
use odyssey_runtime::provider::ProviderSettings;
use odyssey_server::config::ServeArgs;
use odyssey_testing::openai_wire::{OpenAiWireServer, Reply, Script, StreamBuilder, WireUsage};
use pb::session_event::Payload;
use serde_json::Value;
use tonic::Code;

use crate::support::{
    Project, TestServer, bad_fields, bundle_name, error_reason, first_payload, payload_kind, turn,
};

const KEY: &str = "sk-test-memory-key-0123456789";

/// An agent on the `openai` provider with the given model config (a YAML flow map) and
/// extra lines under `spec:`.
fn openai_project(name: &str, model_config: &str, spec_extra: &str) -> Project {
    let project = Project::openai(name);
    project.write(
        "agents/main/agent.yaml",
        &format!(
            "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\n  version: 0.1.0\nspec:\n  kind: prompt\n  prompt: You are a test agent.\n  model:\n    provider: openai\n    name: gpt-test\n    config: {model_config}\n{spec_extra}"
        ),
    );
    project
}

async fn server_for(
    model: &OpenAiWireServer,
    configure: impl FnOnce(&mut ServeArgs),
) -> TestServer {
    let base_url = model.base_url();
    TestServer::start_configured(configure, move |config| {
        config.providers.insert(
            "openai".into(),
            ProviderSettings {
                base_url: Some(base_url),
                api_key: Some(KEY.into()),
                ..ProviderSettings::default()
            },
        );
    })
    .await
}

/// `prefix` padded with words to exactly `bytes` bytes.
fn sized(prefix: &str, bytes: usize) -> String {
    let mut text = prefix.to_owned();
    while text.len() < bytes {
        text.push_str(" lorem");
    }
    text.truncate(bytes);
    text
}

fn prompt(n: usize) -> String {
    sized(&format!("Question {n} about the harbour."), 200)
}

fn answer(n: usize) -> String {
    sized(&format!("Answer {n}: the harbour is calm."), 400)
}

fn usage(prompt_tokens: u64, completion_tokens: u64) -> WireUsage {
    WireUsage {
        prompt_tokens,
        completion_tokens,
        ..WireUsage::default()
    }
}

fn reply(text: &str, tokens: WireUsage) -> Reply {
    StreamBuilder::new()
        .text(text, 3)
        .finish("stop")
        .usage(tokens)
        .done()
        .build()
}

/// `(role, content)` of every message of a chat-completions request.
fn messages(request: &Value) -> Vec<(String, String)> {
    request["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or_default().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// The messages a request carries for prior turns `turns` and then the new prompt `now`.
fn expected_turns(turns: std::ops::RangeInclusive<usize>, now: usize) -> Vec<(String, String)> {
    let mut expected = Vec::new();
    for n in turns {
        expected.push(("user".to_owned(), prompt(n)));
        expected.push(("assistant".to_owned(), answer(n)));
    }
    expected.push(("user".to_owned(), prompt(now)));
    expected
}

async fn completed(server: &TestServer, session_id: &str, text: &str) -> pb::ExecutionStatus {
    let status = server.run(session_id, text).await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    status
}

// With a 1000-token window (100 kept as margin, 250 for the answer) and a 10-token system
// prompt, a 54-token prompt leaves 586 tokens of history; each turn here takes 158
// (a 200-byte prompt and a 400-byte answer, plus framing). Three prior turns fit, four do
// not: the fifth turn compacts the three oldest and keeps the fourth.
const WINDOW_CONFIG: &str = "{ context_window: 1000 }";

#[tokio::test]
async fn a_long_session_is_compacted_and_the_summary_survives_a_restart() {
    let summary = "The user asked three questions about the harbour; it was calm each time.";
    let mut script = Script::new(KEY);
    for n in 1..=4 {
        script = script.reply(reply(&answer(n), usage(100, 100)));
    }
    script = script
        .reply(reply(summary, usage(500, 20)))
        .reply(reply(&answer(5), usage(100, 100)))
        .reply(reply(&answer(6), usage(100, 100)));
    let model = OpenAiWireServer::start(script)
        .await
        .expect("loopback model");
    let server = server_for(&model, |_| {}).await;
    let session = server
        .session_on(&openai_project("harbour", WINDOW_CONFIG, ""))
        .await;
    let mut turn_ids = Vec::new();
    for n in 1..=4 {
        turn_ids.push(
            completed(&server, &session.id, &prompt(n))
                .await
                .execution_id,
        );
    }
    let requests = model.requests();
    assert_eq!(
        messages(&requests[3])[1..],
        expected_turns(1..=3, 4),
        "three turns fit"
    );

    let fifth = completed(&server, &session.id, &prompt(5)).await;
    assert_eq!(fifth.response, answer(5));
    let requests = model.requests();
    assert_eq!(requests.len(), 6, "the fifth turn made two calls");

    // The compaction call: same model, no tools, the fixed instruction, a transcript of
    // the three oldest turns.
    let compaction = &requests[4];
    assert_eq!(compaction["model"], "gpt-test");
    assert!(compaction.get("tools").is_none());
    let call = messages(compaction);
    assert_eq!(call.len(), 2);
    assert_eq!(call[0].0, "system");
    assert!(call[0].1.starts_with(SUMMARY_INSTRUCTION), "{}", call[0].1);
    let transcript = &call[1].1;
    for n in 1..=3 {
        assert!(
            transcript.contains(&format!("User: {}", prompt(n))),
            "{transcript}"
        );
        assert!(transcript.contains(&format!("Assistant: {}", answer(n))));
    }
    assert!(!transcript.contains(&prompt(4)) && !transcript.contains("omitted"));

    // The answer call: the summary, then the fourth turn, then the prompt.
    let sent = messages(&requests[5]);
    assert_eq!(sent[0].0, "system");
    assert_without_memory(&sent[0].1);
    assert_eq!(
        sent[1],
        ("user".to_owned(), format!("{SUMMARY_PREFACE}\n\n{summary}"))
    );
    assert_eq!(sent[2..], expected_turns(4..=4, 5));

    // The log holds the summary, within the turn that compacted.
    let events = server.events(&session.id, 0, fifth.last_sequence).await;
    let compacted = first_payload!(events, HistoryCompacted).expect("history_compacted");
    assert_eq!(compacted.summary, summary);
    assert_eq!(compacted.through_turn_id, turn_ids[2]);
    assert_eq!(compacted.turns_compacted, 3);
    assert!(
        compacted.tokens_after < compacted.tokens_before,
        "{compacted:?}"
    );
    let compaction_usage = compacted.usage.expect("usage");
    assert_eq!(
        (
            compaction_usage.input_tokens,
            compaction_usage.output_tokens
        ),
        (500, 20)
    );
    let event = events
        .iter()
        .find(|e| payload_kind(e) == "history_compacted")
        .expect("event");
    assert_eq!(event.turn_id, fifth.execution_id);
    let done = first_payload!(
        events
            .iter()
            .filter(|e| e.turn_id == fifth.execution_id)
            .collect::<Vec<_>>(),
        TurnCompleted
    );
    let done = done.expect("turn_completed");
    assert_eq!(done.model_calls, 2, "the compaction counts as a model call");
    let turn_usage = done.usage.expect("usage");
    assert_eq!(
        (turn_usage.input_tokens, turn_usage.output_tokens),
        (600, 120)
    );

    // A restart rebuilds summary + later turns from the log.
    let server = server.restart().await;
    let sixth = completed(&server, &session.id, &prompt(6)).await;
    assert_eq!(sixth.response, answer(6));
    let requests = model.requests();
    assert_eq!(requests.len(), 7);
    let sent = messages(&requests[6]);
    assert_eq!(
        sent[1],
        ("user".to_owned(), format!("{SUMMARY_PREFACE}\n\n{summary}"))
    );
    assert_eq!(sent[2..], expected_turns(4..=5, 6));
    let info = server.get_session(&session.id).await;
    assert_eq!(info.turn_count, 6);
}

#[tokio::test]
async fn compaction_calls_keep_replay_cassettes_in_step_across_a_restart() {
    let entry = |text: &str| serde_json::json!({ "text": text }).to_string();
    let mut cassette: Vec<String> = (1..=4).map(|n| entry(&answer(n))).collect();
    cassette.push(entry("Summary: three calm harbour questions."));
    cassette.push(
        serde_json::json!({
            "request": { "last_message": { "role": "user", "content": prompt(5) } },
            "text": answer(5),
        })
        .to_string(),
    );
    cassette.push(
        serde_json::json!({
            "request": { "last_message": { "role": "user", "content": prompt(6) } },
            "text": answer(6),
        })
        .to_string(),
    );
    let lines: Vec<&str> = cassette.iter().map(String::as_str).collect();
    let project = Project::replay("tides", &lines);
    project.write(
        "agents/main/agent.yaml",
        &format!("apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\n  version: 0.1.0\nspec:\n  kind: prompt\n  prompt: You are a test agent.\n  model:\n    provider: replay\n    name: main\n    config: {WINDOW_CONFIG}\n"),
    );
    let server = TestServer::start().await;
    let session = server.session_on(&project).await;
    for n in 1..=5 {
        completed(&server, &session.id, &prompt(n)).await;
    }
    let status = server.get_session(&session.id).await;
    let events = server.events(&session.id, 0, status.last_sequence).await;
    let compacted = first_payload!(events, HistoryCompacted).expect("history_compacted");
    assert_eq!(compacted.summary, "Summary: three calm harbour questions.");

    let server = server.restart().await;
    let sixth = completed(&server, &session.id, &prompt(6)).await;
    assert_eq!(
        sixth.response,
        answer(6),
        "entry 6 answers the sixth turn's call"
    );
}

#[tokio::test]
async fn a_failed_compaction_falls_back_to_the_newest_turns_that_fit() {
    let mut script = Script::new(KEY);
    for n in 1..=4 {
        script = script.reply(reply(&answer(n), usage(100, 100)));
    }
    script = script
        .reply(Reply::error(
            400,
            "This model's maximum context length is exceeded.",
        ))
        .reply(reply(&answer(5), usage(100, 100)))
        .reply(reply("Summary: calm questions.", usage(300, 10)))
        .reply(reply(&answer(6), usage(100, 100)));
    let model = OpenAiWireServer::start(script)
        .await
        .expect("loopback model");
    let server = server_for(&model, |_| {}).await;
    let session = server
        .session_on(&openai_project("squall", WINDOW_CONFIG, ""))
        .await;
    for n in 1..=4 {
        completed(&server, &session.id, &prompt(n)).await;
    }
    let fifth = completed(&server, &session.id, &prompt(5)).await;
    assert_eq!(fifth.response, answer(5), "the session stays usable");

    let events = server.events(&session.id, 0, fifth.last_sequence).await;
    assert!(first_payload!(events, HistoryCompacted).is_none());
    let error = first_payload!(events, ErrorOccurred).expect("error event");
    assert_eq!(error.code, "history_compaction_failed");
    assert!(!error.fatal);
    assert!(
        error.message.contains("maximum context length"),
        "{}",
        error.message
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 6);
    let sent = messages(&requests[5]);
    assert_eq!(
        sent[1..],
        expected_turns(2..=4, 5),
        "the oldest turn is left out"
    );
    assert_eq!(server.get_session(&session.id).await.turn_count, 5);

    // The next turn tries again: the history is still too long, and this time the
    // summary comes.
    let sixth = completed(&server, &session.id, &prompt(6)).await;
    assert_eq!(sixth.response, answer(6));
    let events = server
        .events(&session.id, fifth.last_sequence, sixth.last_sequence)
        .await;
    let compacted = first_payload!(events, HistoryCompacted).expect("history_compacted");
    assert_eq!(compacted.summary, "Summary: calm questions.");
    let sent = messages(&model.requests()[7]);
    assert_eq!(
        sent[1].1,
        format!("{SUMMARY_PREFACE}\n\nSummary: calm questions.")
    );
}

#[tokio::test]
async fn long_term_memory_is_recalled_into_a_new_sessions_first_request() {
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(Reply::text("Noted: your favourite colour is teal."))
            .reply(Reply::text("It is teal."))
            .reply(Reply::text("Still teal.")),
    )
    .await
    .expect("loopback model");
    let server = server_for(&model, |_| {}).await;
    let project = openai_project("keeper", "{}", "");
    let first = server.session_on(&project).await;
    completed(&server, &first.id, "My favourite colour is teal.").await;
    let requests = model.requests();
    // Nothing to recall yet.
    assert_without_memory(&messages(&requests[0])[0].1);
    let file = server
        .home()
        .join(format!("memory/local/{}/main.jsonl", "keeper"));
    assert!(file.is_file(), "{}", file.display());

    let second = server.create_session("keeper").await;
    let status = completed(&server, &second.id, "What is my favourite colour?").await;
    let system = messages(&model.requests()[1])[0].1.clone();
    assert!(
        system.starts_with("You are a test agent.\n\n# Memory\n"),
        "{system}"
    );
    assert!(
        system.contains("The user asked: My favourite colour is teal."),
        "{system}"
    );
    assert!(system.contains("You answered: Noted: your favourite colour is teal."));
    let events = server.events(&second.id, 0, status.last_sequence).await;
    let recalled = first_payload!(events, MemoryRecalled).expect("memory_recalled");
    assert_eq!(recalled.records, 1);
    // The section recorded in the event is the one the prompt carries, before the header.
    assert!(system.contains(&format!(
        "{}\n\n# Environment\n",
        recalled.section.trim_end()
    )));

    // Later turns of the session keep the same section, without this session's own turns.
    completed(&server, &second.id, "And again?").await;
    assert_eq!(messages(&model.requests()[2])[0].1, system);
}

#[tokio::test]
async fn memory_switched_off_by_the_agent_or_the_operator_records_and_recalls_nothing() {
    let replies = || {
        Script::new(KEY)
            .reply(Reply::text("Noted."))
            .reply(Reply::text("I do not know."))
    };
    // The agent switches it off.
    let model = OpenAiWireServer::start(replies())
        .await
        .expect("loopback model");
    let server = server_for(&model, |_| {}).await;
    let project = openai_project("forgetful", "{}", "  memory: { enabled: false }\n");
    let first = server.session_on(&project).await;
    completed(&server, &first.id, "My favourite colour is teal.").await;
    let second = server.create_session("forgetful").await;
    let status = completed(&server, &second.id, "What is my favourite colour?").await;
    assert_without_memory(&messages(&model.requests()[1])[0].1);
    assert!(!server.home().join("memory/local/forgetful").exists());
    let events = server.events(&second.id, 0, status.last_sequence).await;
    assert!(first_payload!(events, MemoryRecalled).is_none());

    // The operator switches it off.
    let model = OpenAiWireServer::start(replies())
        .await
        .expect("loopback model");
    let server = server_for(&model, |args| args.long_term_memory = Some(false)).await;
    let first = server
        .session_on(&openai_project("amnesiac", "{}", ""))
        .await;
    completed(&server, &first.id, "My favourite colour is teal.").await;
    let second = server.create_session("amnesiac").await;
    completed(&server, &second.id, "What is my favourite colour?").await;
    assert_without_memory(&messages(&model.requests()[1])[0].1);
    assert!(!server.home().join("memory").exists());
}

#[tokio::test]
async fn a_turn_past_its_output_token_budget_ends_with_an_error() {
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(reply("A long answer.", usage(10, 50)))
            .reply(reply("Short.", usage(10, 5))),
    )
    .await
    .expect("loopback model");
    let server = server_for(&model, |args| args.max_turn_output_tokens = Some(40)).await;
    let session = server
        .session_on(&openai_project("verbose", "{}", ""))
        .await;
    let status = server.run(&session.id, "Tell me everything.").await;
    assert_eq!(status.state, pb::ExecutionState::Failed as i32);
    assert!(
        status
            .error
            .contains("50 output tokens, over its budget of 40"),
        "{}",
        status.error
    );
    let events = server.events(&session.id, 0, status.last_sequence).await;
    let error = first_payload!(events, ErrorOccurred).expect("error");
    assert_eq!(error.code, "output_token_budget_exceeded");
    assert!(error.fatal);
    completed(&server, &session.id, "Briefly?").await;
}

#[tokio::test]
async fn a_session_that_spent_its_token_budget_refuses_more_turns() {
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(reply("First answer.", usage(80, 30)))
            .reply(
                StreamBuilder::new()
                    .tool_call(0, "call_1", "Read", r#"{"path": "x"}"#, 2)
                    .finish("tool_calls")
                    .usage(usage(120, 10))
                    .done()
                    .build(),
            ),
    )
    .await
    .expect("loopback model");
    let server = server_for(&model, |args| args.session_token_budget = Some(500)).await;
    let bundle = server.install(&openai_project("frugal", "{}", "")).await;
    let create = |budget: u64| pb::CreateSessionRequest {
        bundle_reference: bundle_name(&bundle),
        token_budget: budget,
        ..Default::default()
    };
    let defaulted = server
        .sessions()
        .create_session(create(0))
        .await
        .expect("session")
        .into_inner()
        .session
        .expect("session");
    assert_eq!(defaulted.token_budget, 500, "the operator's default");
    let session = server
        .sessions()
        .create_session(create(100))
        .await
        .expect("session")
        .into_inner()
        .session
        .expect("session");
    assert_eq!(session.token_budget, 100);

    // The answer that crosses the budget is delivered; the next turn is refused.
    completed(&server, &session.id, "hi").await;
    assert_eq!(server.get_session(&session.id).await.token_budget, 100);
    let refused = server.submit(&session.id, "more").await.expect_err("spent");
    assert_eq!(refused.code(), Code::FailedPrecondition);
    assert_eq!(
        error_reason(&refused).as_deref(),
        Some("SESSION_TOKEN_BUDGET_EXHAUSTED")
    );
    assert!(
        refused.message().contains("110 of 100 tokens"),
        "{}",
        refused.message()
    );

    // A turn that spends the budget midway ends before its next model call.
    let other = server
        .sessions()
        .create_session(create(100))
        .await
        .expect("session")
        .into_inner()
        .session
        .expect("session");
    let status = server.run(&other.id, "read x").await;
    assert_eq!(status.state, pb::ExecutionState::Failed as i32);
    let events = server.events(&other.id, 0, status.last_sequence).await;
    let error = first_payload!(events, ErrorOccurred).expect("error");
    assert_eq!(error.code, "session_token_budget_exhausted");
    assert_eq!(model.requests().len(), 2, "no model call past the budget");
}

#[tokio::test]
async fn turn_overrides_are_checked_and_recorded_in_the_turn_context() {
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(Reply::text("first"))
            .reply(Reply::text("from src"))
            .reply(Reply::text("other model")),
    )
    .await
    .expect("loopback model");
    let server = server_for(&model, |_| {}).await;
    let session = server
        .session_on(&openai_project("steered", "{}", ""))
        .await;
    let overridden = |cwd: &str, model: Option<pb::ModelSpec>| pb::RunRequest {
        input: Some(pb::TurnInput {
            overrides: Some(pb::TurnOverrides {
                cwd: cwd.into(),
                model,
            }),
            ..turn(&session.id, "go")
        }),
    };

    // A new session has no workspace yet: the turn itself finds `src` missing.
    let status = server
        .executions()
        .run(overridden("src", None))
        .await
        .expect("accepted")
        .into_inner()
        .status
        .expect("status");
    assert_eq!(status.state, pb::ExecutionState::Failed as i32);
    assert!(
        status
            .error
            .contains("`src` is not a folder of the session workspace"),
        "{}",
        status.error
    );
    completed(&server, &session.id, "hello").await;

    // With a workspace, submit refuses a missing folder, naming the field.
    let refused = server
        .executions()
        .run(overridden("missing", None))
        .await
        .expect_err("missing folder");
    assert_eq!(refused.code(), Code::InvalidArgument);
    assert_eq!(bad_fields(&refused), ["input.overrides.cwd"]);
    let data = server.home().join(format!("sandbox/{}/data", session.id));
    std::fs::create_dir_all(data.join("src")).expect("mkdir src");
    let status = server
        .executions()
        .run(overridden("./src/", None))
        .await
        .expect("run")
        .into_inner()
        .status
        .expect("status");
    assert_eq!(status.response, "from src");
    let events = server.events(&session.id, 0, status.last_sequence).await;
    let started = events
        .iter()
        .rev()
        .find_map(|e| match &e.payload {
            Some(Payload::TurnStarted(p)) => Some(p.clone()),
            _ => None,
        })
        .expect("turn_started");
    assert_eq!(
        started.context.as_ref().map(|c| c.cwd.as_str()),
        Some("src")
    );

    // The model goes through the provider registry.
    let spec = |provider: &str, config: Option<prost_types::Struct>| pb::ModelSpec {
        provider: provider.into(),
        name: "gpt-other".into(),
        config,
    };
    let unknown = server
        .executions()
        .run(overridden("", Some(spec("acme", None))))
        .await
        .expect_err("unknown provider");
    assert_eq!(unknown.code(), Code::InvalidArgument);
    assert_eq!(bad_fields(&unknown), ["input.overrides.model"]);
    let zero_window = prost_types::Struct {
        fields: [("context_window".to_owned(), prost_types::Value::from(0.0))].into(),
    };
    let bad_window = server
        .executions()
        .run(overridden("", Some(spec("openai", Some(zero_window)))))
        .await
        .expect_err("zero context window");
    assert_eq!(bad_fields(&bad_window), ["input.overrides.model"]);
    assert!(
        bad_window.message().contains("context_window"),
        "{}",
        bad_window.message()
    );

    let status = server
        .executions()
        .run(overridden("", Some(spec("openai", None))))
        .await
        .expect("run")
        .into_inner()
        .status
        .expect("status");
    assert_eq!(status.response, "other model");
    assert_eq!(
        model.requests().last().expect("request")["model"],
        "gpt-other"
    );
    let events = server.events(&session.id, 0, status.last_sequence).await;
    let started = events
        .iter()
        .rev()
        .find_map(|e| match &e.payload {
            Some(Payload::TurnStarted(p)) => Some(p.clone()),
            _ => None,
        })
        .expect("turn_started");
    let context = started.context.expect("context");
    assert_eq!(context.model.map(|m| m.name), Some("gpt-other".to_owned()));
    assert_eq!(context.cwd, ".");
}

/// An embedder's memory store: records kept in the embedding program's own memory.
#[derive(Clone, Default)]
struct Notebook(Arc<Mutex<Vec<(MemoryScope, MemoryRecord)>>>);

impl MemoryProvider for Notebook {
    fn capture(
        &self,
        scope: MemoryScope,
        record: MemoryRecord,
    ) -> BoxFuture<'static, Result<(), MemoryError>> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((scope, record));
        futures::future::ready(Ok(())).boxed()
    }

    fn recall(
        &self,
        scope: MemoryScope,
        limit: usize,
    ) -> BoxFuture<'static, Result<Vec<MemoryRecord>, MemoryError>> {
        let notes = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let mine: Vec<MemoryRecord> = notes
            .iter()
            .filter(|(s, _)| *s == scope)
            .map(|(_, r)| r.clone())
            .collect();
        let recent = mine[mine.len().saturating_sub(limit)..].to_vec();
        futures::future::ready(Ok(recent)).boxed()
    }
}

#[tokio::test]
async fn an_embedder_can_supply_its_own_memory_store() {
    let notebook = Notebook::default();
    let store = notebook.clone();
    let server = TestServer::start_configured(
        |_| {},
        move |config| config.memory.provider = Some(Arc::new(store)),
    )
    .await;
    let project = Project::replay(
        "diary",
        &[r#"{"text": "Noted: teal."}"#, r#"{"text": "Teal."}"#],
    );
    let first = server.session_on(&project).await;
    let done = completed(&server, &first.id, "My favourite colour is teal.").await;
    {
        let notes = notebook.0.lock().unwrap_or_else(|p| p.into_inner());
        assert_eq!(notes.len(), 1);
        let (scope, record) = &notes[0];
        assert_eq!(
            (
                scope.namespace.as_str(),
                scope.bundle.as_str(),
                scope.agent_id.as_str()
            ),
            ("local", "diary", "main")
        );
        assert_eq!(record.prompt, "My favourite colour is teal.");
        assert_eq!(record.response, "Noted: teal.");
        assert_eq!(record.turn_id.to_string(), done.execution_id);
    }
    assert!(
        !server.home().join("memory").exists(),
        "the files are not used"
    );

    let second = server.create_session("diary").await;
    let status = completed(&server, &second.id, "Which colour?").await;
    let events = server.events(&second.id, 0, status.last_sequence).await;
    let recalled = first_payload!(events, MemoryRecalled).expect("memory_recalled");
    assert!(
        recalled.section.contains("My favourite colour is teal."),
        "{}",
        recalled.section
    );
}

/// The system prompt of the test agent with no memory section: the agent prompt is
/// followed directly by the environment header (the agent has no files and no skills).
fn assert_without_memory(system: &str) {
    assert!(
        system.starts_with("You are a test agent.\n\n# Environment\n"),
        "{system}"
    );
}
