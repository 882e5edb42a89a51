//! The replay provider, through the registry, against cassette files on disk.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use futures::StreamExt;
use serde_json::json;

use crate::chat::{ChatMessage, TokenUsage};
use crate::error::ErrorKind;
use crate::model::ModelSpec;
use crate::provider::{ModelDelta, ModelProvider, ModelRequest, ProviderError, ProviderRegistry};

/// A bundle directory holding `cassettes/demo.jsonl` with `lines`.
fn bundle(lines: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    write_cassette(dir.path(), "cassettes/demo.jsonl", lines);
    dir
}

fn write_cassette(root: &Path, relative: &str, lines: &[&str]) {
    let path = root.join(relative);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("cassette dir");
    }
    std::fs::write(path, lines.join("\n") + "\n").expect("cassette written");
}

fn registry() -> ProviderRegistry {
    ProviderRegistry::with_env(HashMap::new(), |_| None)
}

fn resolve(spec: &ModelSpec, root: &Path) -> Result<Arc<dyn ModelProvider>, ProviderError> {
    registry().resolve(spec, root)
}

fn call(call_index: u64, messages: Vec<ChatMessage>) -> ModelRequest {
    ModelRequest {
        model: ModelSpec::new("replay", "demo"),
        system_prompt: "You are a demo.".into(),
        messages,
        tools: Vec::new(),
        call_index,
    }
}

async fn play(
    provider: &Arc<dyn ModelProvider>,
    request: ModelRequest,
) -> Vec<Result<ModelDelta, ProviderError>> {
    provider.stream(request).collect().await
}

async fn play_err(provider: &Arc<dyn ModelProvider>, request: ModelRequest) -> ProviderError {
    let mut items = play(provider, request).await;
    assert_eq!(
        items.len(),
        1,
        "a failing call yields only its error: {items:?}"
    );
    match items.pop() {
        Some(Err(e)) => e,
        other => panic!("expected an error, got {other:?}"),
    }
}

fn resolve_err(spec: &ModelSpec, root: &Path) -> ProviderError {
    match resolve(spec, root) {
        Ok(_) => panic!("{spec} resolved"),
        Err(e) => e,
    }
}

fn demo() -> ModelSpec {
    ModelSpec::new("replay", "demo")
}

fn with_cassette(path: &str) -> ModelSpec {
    let mut spec = demo();
    spec.config = json!({ "cassette": path }).as_object().cloned();
    spec
}

#[tokio::test]
async fn chunks_reasoning_tool_calls_and_usage_stream_in_order() {
    let root = bundle(&[
        r#"{"reasoning": "Need the file.", "text": ["Let me ", "look."], "tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}, {"id": "x1", "name": "ls", "arguments": "{\"dir\":\".\"}"}], "usage": {"input_tokens": 10, "output_tokens": 4, "cached_input_tokens": 8}}"#,
    ]);
    let provider = resolve(&demo(), root.path()).expect("resolves");
    let got: Vec<ModelDelta> = play(&provider, call(0, vec![ChatMessage::user("hi")]))
        .await
        .into_iter()
        .collect::<Result<_, _>>()
        .expect("plays");
    assert_eq!(
        got,
        [
            ModelDelta::Reasoning("Need the file.".into()),
            ModelDelta::Text("Let me ".into()),
            ModelDelta::Text("look.".into()),
            ModelDelta::ToolCall {
                id: "call_0_0".into(),
                name: "read_file".into(),
                arguments: r#"{"path":"a.txt"}"#.into(),
            },
            ModelDelta::ToolCall {
                id: "x1".into(),
                name: "ls".into(),
                arguments: r#"{"dir":"."}"#.into(),
            },
            ModelDelta::Usage(TokenUsage {
                input_tokens: 10,
                output_tokens: 4,
                cached_input_tokens: 8,
                reasoning_tokens: 0,
                total_tokens: 14,
            }),
        ]
    );
}

#[tokio::test]
async fn the_call_index_picks_the_entry_and_usage_defaults_to_an_estimate() {
    let root = bundle(&[r#"{"text": "first"}"#, "", r#"{"text": "second answer"}"#]);
    let provider = resolve(&demo(), root.path()).expect("resolves");
    let got = play(&provider, call(1, vec![ChatMessage::user("again")])).await;
    assert_eq!(
        got[0].as_ref().ok(),
        Some(&ModelDelta::Text("second answer".into()))
    );
    match got.last() {
        Some(Ok(ModelDelta::Usage(u))) => {
            assert!(u.input_tokens > 0 && u.output_tokens > 0, "{u:?}");
            assert_eq!(u.total_tokens, u.input_tokens + u.output_tokens);
        }
        other => panic!("usage expected last, got {other:?}"),
    }
}

#[tokio::test]
async fn a_call_past_the_end_is_exhausted_naming_cassette_and_entry() {
    let root = bundle(&[r#"{"text": "only"}"#]);
    let provider = resolve(&demo(), root.path()).expect("resolves");
    let e = play_err(&provider, call(3, vec![ChatMessage::user("more")])).await;
    assert_eq!(e.reason(), "CASSETTE_EXHAUSTED");
    assert_eq!(e.kind(), ErrorKind::FailedPrecondition);
    let message = e.to_string();
    assert!(
        message.contains("cassettes/demo.jsonl") && message.contains("call 3"),
        "{message}"
    );
}

#[tokio::test]
async fn an_unexpected_last_message_is_a_mismatch_showing_both() {
    let root = bundle(&[
        r#"{"text": "one"}"#,
        r#"{"request": {"last_message": {"role": "tool", "content": "42 files"}}, "text": "two"}"#,
    ]);
    let provider = resolve(&demo(), root.path()).expect("resolves");

    let matching = play(
        &provider,
        call(1, vec![ChatMessage::tool_result("c1", "42 files", false)]),
    )
    .await;
    assert!(matching.iter().all(Result::is_ok), "{matching:?}");

    let e = play_err(
        &provider,
        call(1, vec![ChatMessage::tool_result("c1", "41 files", false)]),
    )
    .await;
    assert_eq!(e.reason(), "CASSETTE_MISMATCH");
    let message = e.to_string();
    for part in [
        "cassettes/demo.jsonl",
        "entry 1",
        "line 2",
        "\"42 files\"",
        "\"41 files\"",
    ] {
        assert!(message.contains(part), "{part} missing from: {message}");
    }
}

#[tokio::test]
async fn a_bad_line_is_reported_with_its_number() {
    let root = bundle(&[
        r#"{"text": "fine"}"#,
        "",
        r#"{"text": "x", "temperature": 1}"#,
    ]);
    let e = resolve_err(&demo(), root.path());
    assert_eq!(e.reason(), "CASSETTE_INVALID");
    let message = e.to_string();
    assert!(
        message.contains("line 3") && message.contains("temperature"),
        "{message}"
    );

    let root = bundle(&["not json"]);
    assert!(
        resolve_err(&demo(), root.path())
            .to_string()
            .contains("line 1")
    );

    let root = bundle(&[r#"{"tool_calls": [{"name": "f", "arguments": 3}]}"#]);
    assert!(
        resolve_err(&demo(), root.path())
            .to_string()
            .contains("arguments must be")
    );
}

#[tokio::test]
async fn paths_leaving_the_bundle_are_refused() {
    let root = bundle(&[r#"{"text": "x"}"#]);
    for path in ["../demo.jsonl", "cassettes/../../x.jsonl", "/etc/passwd"] {
        let e = resolve_err(&with_cassette(path), root.path());
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{path}: {e}");
        assert!(registry().validate(&with_cassette(path)).is_err(), "{path}");
    }
    let e = resolve_err(&ModelSpec::new("replay", "../escape"), root.path());
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
}

#[cfg(unix)]
#[tokio::test]
async fn a_symlink_out_of_the_bundle_is_refused() {
    let outside = bundle(&[r#"{"text": "secret"}"#]);
    let root = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(root.path().join("cassettes")).expect("dir");
    std::os::unix::fs::symlink(
        outside.path().join("cassettes/demo.jsonl"),
        root.path().join("cassettes/demo.jsonl"),
    )
    .expect("symlink");
    let e = resolve_err(&demo(), root.path());
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
}

#[tokio::test]
async fn a_missing_cassette_is_named() {
    let root = bundle(&[]);
    let e = resolve_err(&with_cassette("cassettes/other.jsonl"), root.path());
    assert_eq!(e.kind(), ErrorKind::FailedPrecondition);
    assert!(e.to_string().contains("cassettes/other.jsonl"), "{e}");
    let (available, why) =
        registry().availability(&with_cassette("cassettes/other.jsonl"), root.path());
    assert!(!available && why.contains("cassettes/other.jsonl"), "{why}");
}

#[tokio::test]
async fn availability_counts_entries_and_edits_are_picked_up() {
    let root = bundle(&[r#"{"text": "a"}"#, r#"{"text": "b"}"#]);
    let registry = registry();
    assert_eq!(
        registry.availability(&demo(), root.path()),
        (true, "cassette cassettes/demo.jsonl (2 entries)".into())
    );
    write_cassette(
        root.path(),
        "cassettes/demo.jsonl",
        &[r#"{"text": "a"}"#, r#"{"text": "b"}"#, r#"{"text": "c"}"#],
    );
    assert_eq!(
        registry.availability(&demo(), root.path()),
        (true, "cassette cassettes/demo.jsonl (3 entries)".into())
    );
}
