//! Recording the calls of a real provider (replay, playing a source cassette) and playing
//! the recording back.

use std::sync::Arc;

use futures::StreamExt;
use uuid::Uuid;

use super::{CASSETTE_FILE, CassetteRecorder};
use crate::chat::{ChatMessage, TokenUsage};
use crate::model::ModelSpec;
use crate::provider::replay::{Cassette, ReplayProvider};
use crate::provider::{ModelDelta, ModelProvider, ModelRequest, ProviderError};

struct Fixture {
    home: tempfile::TempDir,
    recorder: Arc<CassetteRecorder>,
    session: Uuid,
}

impl Fixture {
    fn new() -> Self {
        let home = tempfile::tempdir().expect("home");
        let session = Uuid::now_v7();
        std::fs::create_dir_all(home.path().join(session.to_string())).expect("session dir");
        let recorder = Arc::new(CassetteRecorder::new(home.path().to_path_buf()));
        Self {
            home,
            recorder,
            session,
        }
    }

    /// `source` (cassette lines) played by replay, recorded for the fixture's session.
    fn provider(&self, source: &[&str]) -> Arc<dyn ModelProvider> {
        self.recorder.wrap(
            self.session,
            Arc::new(ReplayProvider::new(cassette(source))),
        )
    }

    fn recorded(&self) -> String {
        let bytes = self
            .recorder
            .read(self.session)
            .expect("readable")
            .expect("something was recorded");
        String::from_utf8(bytes).expect("utf-8")
    }

    fn file(&self) -> std::path::PathBuf {
        self.home
            .path()
            .join(self.session.to_string())
            .join(CASSETTE_FILE)
    }
}

fn cassette(lines: &[&str]) -> Arc<Cassette> {
    Arc::new(Cassette::parse("source.jsonl", &lines.join("\n")).expect("valid cassette"))
}

fn request(call_index: u64, messages: Vec<ChatMessage>) -> ModelRequest {
    ModelRequest {
        model: ModelSpec::new("replay", "source"),
        system_prompt: "Be brief.".into(),
        messages,
        tools: Vec::new(),
        call_index,
    }
}

async fn collect(
    provider: &Arc<dyn ModelProvider>,
    request: ModelRequest,
) -> Vec<Result<ModelDelta, String>> {
    provider
        .stream(request)
        .map(|item| item.map_err(|e: ProviderError| e.to_string()))
        .collect()
        .await
}

const SOURCE: [&str; 2] = [
    r#"{"reasoning": ["Look", "ing"], "text": ["Let me ", "check."], "tool_calls": [{"id": "call_7", "name": "LS", "arguments": "{\"path\": \".\"}"}], "usage": {"input_tokens": 30, "output_tokens": 9, "cached_input_tokens": 4, "reasoning_tokens": 2}}"#,
    r#"{"text": "Empty.", "usage": {"input_tokens": 50, "output_tokens": 2}}"#,
];

fn conversation() -> (Vec<ChatMessage>, Vec<ChatMessage>) {
    let first = vec![ChatMessage::user("What is here?")];
    let mut second = first.clone();
    second.push(ChatMessage::assistant("Let me check.", Vec::new()));
    second.push(ChatMessage::tool_result(
        "call_7",
        "(empty) /home/x/sandbox/1/data",
        false,
    ));
    (first, second)
}

#[tokio::test]
async fn recorded_calls_replay_as_the_same_deltas() {
    let fixture = Fixture::new();
    let provider = fixture.provider(&SOURCE);
    let (first, second) = conversation();
    let original = [
        collect(&provider, request(0, first.clone())).await,
        collect(&provider, request(1, second.clone())).await,
    ];

    let recorded = fixture.recorded();
    let lines: Vec<&str> = recorded.lines().collect();
    assert_eq!(lines.len(), 2, "{recorded}");
    let entry: serde_json::Value = serde_json::from_str(lines[0]).expect("json");
    assert_eq!(
        entry["request"],
        serde_json::json!({ "last_message": { "role": "user", "content": "What is here?" } })
    );
    let entry: serde_json::Value = serde_json::from_str(lines[1]).expect("json");
    assert_eq!(
        entry["request"],
        serde_json::json!({ "last_message": { "role": "tool" } }),
        "tool results are matched by role only"
    );

    let replay: Arc<dyn ModelProvider> = Arc::new(ReplayProvider::new(cassette(&lines)));
    let replayed = [
        collect(&replay, request(0, first)).await,
        collect(&replay, request(1, second)).await,
    ];
    assert_eq!(replayed, original);
    assert_eq!(
        original[0].last(),
        Some(&Ok(ModelDelta::Usage(TokenUsage {
            input_tokens: 30,
            output_tokens: 9,
            cached_input_tokens: 4,
            reasoning_tokens: 2,
            total_tokens: 39,
        })))
    );
}

#[tokio::test]
async fn a_failed_call_is_recorded_and_replays_its_failure() {
    let fixture = Fixture::new();
    let provider = fixture
        .provider(&[r#"{"text": "Part", "error": "provider `x` is unavailable: HTTP 503"}"#]);
    let original = collect(&provider, request(0, vec![ChatMessage::user("hi")])).await;
    assert!(matches!(original.last(), Some(Err(_))), "{original:?}");

    let recorded = fixture.recorded();
    let replay: Arc<dyn ModelProvider> =
        Arc::new(ReplayProvider::new(cassette(&[recorded.trim()])));
    let replayed = collect(&replay, request(0, vec![ChatMessage::user("hi")])).await;
    assert_eq!(replayed[0], Ok(ModelDelta::Text("Part".into())));
    let Some(Err(message)) = replayed.last() else {
        panic!("the failure replays: {replayed:?}");
    };
    assert!(message.contains("HTTP 503"), "{message}");
    assert_eq!(replayed.len(), 2, "no usage was recorded, none is invented");
}

#[tokio::test]
async fn a_call_dropped_midway_is_recorded_as_interrupted() {
    let fixture = Fixture::new();
    let provider = fixture.provider(&[r#"{"text": ["one", "two", "three"]}"#]);
    let mut stream = provider.stream(request(0, vec![ChatMessage::user("go")]));
    assert_eq!(
        stream.next().await.map(|i| i.ok()),
        Some(Some(ModelDelta::Text("one".into())))
    );
    drop(stream);
    let entry: serde_json::Value =
        serde_json::from_str(fixture.recorded().trim()).expect("one entry");
    assert_eq!(entry["text"], serde_json::json!(["one"]));
    assert!(
        entry["error"]
            .as_str()
            .is_some_and(|e| e.contains("interrupted")),
        "{entry}"
    );
}

#[tokio::test]
async fn a_session_not_recorded_from_its_first_call_is_not_recorded() {
    let fixture = Fixture::new();
    let provider = fixture.provider(&SOURCE);
    let (_, second) = conversation();
    let answered = collect(&provider, request(1, second)).await;
    assert!(
        answered.iter().all(Result::is_ok),
        "the call itself is untouched"
    );
    assert!(!fixture.file().exists());
    // Once stopped, later calls are not recorded either, even numbered from 0.
    let (first, _) = conversation();
    let _ = collect(&provider, request(0, first)).await;
    assert!(
        fixture
            .recorder
            .read(fixture.session)
            .expect("readable")
            .is_none()
    );
}

#[tokio::test]
async fn recording_resumes_after_a_restart_and_a_partial_line_is_never_served() {
    let fixture = Fixture::new();
    let (first, second) = conversation();
    let _ = collect(&fixture.provider(&SOURCE), request(0, first)).await;
    // A new process: the recorder counts what the file holds and continues after it.
    let restarted = Arc::new(CassetteRecorder::new(fixture.home.path().to_path_buf()));
    let provider = restarted.wrap(
        fixture.session,
        Arc::new(ReplayProvider::new(cassette(&SOURCE))),
    );
    let _ = collect(&provider, request(1, second)).await;
    assert_eq!(fixture.recorded().lines().count(), 2);

    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(fixture.file())
        .expect("open");
    std::io::Write::write_all(&mut file, b"{\"text\": \"tor").expect("write");
    let served = fixture.recorded();
    assert_eq!(served.lines().count(), 2);
    assert!(served.ends_with('\n'));
}
