//! The Anthropic provider against the loopback Messages API server: real HTTP, real SSE.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;

use crate::chat::{ChatMessage, ReasoningState, TokenUsage, ToolCall};
use crate::error::ErrorKind;
use crate::model::ModelSpec;
use crate::provider::{
    ModelDelta, ModelProvider, ModelRequest, ProviderError, ProviderRegistry, ProviderSettings,
    ToolSpec,
};
use odyssey_testing::anthropic_wire::{AnthropicReply, AnthropicWireServer, MessageBuilder};

const KEY: &str = "sk-ant-loopback-41d9e0";

async fn start(replies: Vec<AnthropicReply>) -> AnthropicWireServer {
    AnthropicWireServer::start(KEY, replies)
        .await
        .expect("loopback server starts")
}

fn provider(server: &AnthropicWireServer, key: &str) -> Arc<dyn ModelProvider> {
    let settings = ProviderSettings {
        base_url: Some(server.base_url()),
        api_key: Some(key.into()),
        request_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(10),
        max_retries: 2,
        max_retry_delay: Duration::from_secs(2),
        ..ProviderSettings::default()
    };
    let registry =
        ProviderRegistry::with_env(HashMap::from([("anthropic".to_owned(), settings)]), |_| {
            None
        });
    match registry.resolve(&spec(), Path::new("/nonexistent")) {
        Ok(provider) => provider,
        Err(e) => panic!("resolve failed: {e}"),
    }
}

fn spec() -> ModelSpec {
    ModelSpec::new("anthropic", "claude-test")
}

fn request() -> ModelRequest {
    ModelRequest {
        model: spec(),
        system_prompt: "You are terse.".into(),
        messages: vec![ChatMessage::user("Say hello")],
        tools: Vec::new(),
        call_index: 0,
    }
}

async fn run(
    provider: &Arc<dyn ModelProvider>,
    request: ModelRequest,
) -> Vec<Result<ModelDelta, ProviderError>> {
    provider.stream(request).collect().await
}

async fn deltas(provider: &Arc<dyn ModelProvider>) -> Vec<ModelDelta> {
    run(provider, request())
        .await
        .into_iter()
        .map(|item| item.unwrap_or_else(|e| panic!("unexpected error: {e}")))
        .collect()
}

async fn failure(provider: &Arc<dyn ModelProvider>) -> ProviderError {
    let items = run(provider, request()).await;
    assert_eq!(items.iter().filter(|i| i.is_err()).count(), 1, "{items:?}");
    match items.into_iter().last() {
        Some(Err(e)) => e,
        other => panic!("the error must be the last item, got {other:?}"),
    }
}

fn tool_calls(deltas: &[ModelDelta]) -> Vec<(String, String, serde_json::Value)> {
    deltas
        .iter()
        .filter_map(|d| match d {
            ModelDelta::ToolCall {
                id,
                name,
                arguments,
            } => Some((
                id.clone(),
                name.clone(),
                serde_json::from_str(arguments).unwrap_or_else(|e| panic!("{arguments}: {e}")),
            )),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn text_arrives_as_several_text_deltas_then_usage() {
    let reply = MessageBuilder::new(25, 0)
        .text("Hello there, dear world!", 4)
        .finish("end_turn", 7);
    let server = start(vec![reply]).await;
    let got = deltas(&provider(&server, KEY)).await;
    assert_eq!(
        got,
        [
            ModelDelta::Text("Hello ".into()),
            ModelDelta::Text("there,".into()),
            ModelDelta::Text(" dear ".into()),
            ModelDelta::Text("world!".into()),
            ModelDelta::Usage(TokenUsage {
                input_tokens: 25,
                output_tokens: 7,
                cached_input_tokens: 0,
                reasoning_tokens: 0,
                total_tokens: 32,
            }),
        ]
    );
}

#[tokio::test]
async fn thinking_becomes_reasoning_with_a_break_between_blocks() {
    let reply = MessageBuilder::new(10, 0)
        .thinking("Let me think.", 2)
        .thinking("Again.", 1)
        .text("Done", 1)
        .finish("end_turn", 3);
    let server = start(vec![reply]).await;
    let got: Vec<ModelDelta> = deltas(&provider(&server, KEY))
        .await
        .into_iter()
        .filter(|d| !matches!(d, ModelDelta::ReasoningState(_)))
        .collect();
    assert_eq!(
        &got[..5],
        [
            ModelDelta::Reasoning("Let me ".into()),
            ModelDelta::Reasoning("think.".into()),
            ModelDelta::ReasoningBreak,
            ModelDelta::Reasoning("Again.".into()),
            ModelDelta::Text("Done".into()),
        ]
    );
}

#[tokio::test]
async fn signed_and_redacted_thinking_blocks_are_kept_whole_in_order() {
    let reply = MessageBuilder::new(10, 0)
        .thinking("I should list the files.", 3)
        .redacted_thinking("EmwKAhgBEgy3va3pzix")
        .tool_use("toolu_1", "LS", &json!({ "path": "." }), 2)
        .finish("tool_use", 9);
    let server = start(vec![reply]).await;
    let got = deltas(&provider(&server, KEY)).await;
    let states: Vec<&ReasoningState> = got
        .iter()
        .filter_map(|d| match d {
            ModelDelta::ReasoningState(state) => Some(state),
            _ => None,
        })
        .collect();
    assert_eq!(
        states,
        [
            &ReasoningState {
                format: "anthropic".into(),
                data: json!({ "type": "thinking", "thinking": "I should list the files.",
                              "signature": MessageBuilder::SIGNATURE }),
            },
            &ReasoningState {
                format: "anthropic".into(),
                data: json!({ "type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix" }),
            },
        ]
    );
    // Each block is released when it stops: before the tool call that follows it.
    let first_state = got
        .iter()
        .position(|d| matches!(d, ModelDelta::ReasoningState(_)));
    let call = got
        .iter()
        .position(|d| matches!(d, ModelDelta::ToolCall { .. }));
    assert!(first_state < call, "{got:?}");
}

#[tokio::test]
async fn a_thinking_block_without_signature_is_not_kept() {
    let unsigned = json!({ "type": "content_block_start", "index": 0,
                           "content_block": { "type": "thinking", "thinking": "hmm" } });
    let reply = MessageBuilder::new(10, 0)
        .event(unsigned)
        .event(json!({ "type": "content_block_stop", "index": 0 }))
        .finish("end_turn", 2);
    let server = start(vec![reply]).await;
    let got = deltas(&provider(&server, KEY)).await;
    assert_eq!(got[0], ModelDelta::Reasoning("hmm".into()));
    assert!(
        !got.iter()
            .any(|d| matches!(d, ModelDelta::ReasoningState(_))),
        "{got:?}"
    );
}

#[tokio::test]
async fn kept_thinking_goes_back_first_and_only_to_its_own_wire() {
    let reply = MessageBuilder::new(5, 0)
        .text("ok", 1)
        .finish("end_turn", 1);
    let server = start(vec![reply]).await;
    let thinking = json!({ "type": "thinking", "thinking": "Check a.", "signature": "c2lnbmVk" });
    let call = ToolCall {
        id: "toolu_1".into(),
        name: "Read".into(),
        arguments: r#"{"path":"a"}"#.into(),
    };
    let assistant = ChatMessage {
        reasoning_state: vec![
            ReasoningState {
                format: "anthropic".into(),
                data: thinking.clone(),
            },
            ReasoningState {
                format: "gemini".into(),
                data: json!({ "thoughtSignature": "b3RoZXI=" }),
            },
        ],
        ..ChatMessage::assistant("Reading.", vec![call])
    };
    let request = ModelRequest {
        messages: vec![
            ChatMessage::user("Read a"),
            assistant,
            ChatMessage::tool_result("toolu_1", "alpha", false),
        ],
        ..request()
    };
    let items = run(&provider(&server, KEY), request).await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    assert_eq!(
        server.requests()[0]["messages"][1],
        json!({ "role": "assistant", "content": [
            thinking,
            { "type": "text", "text": "Reading." },
            { "type": "tool_use", "id": "toolu_1", "name": "Read", "input": { "path": "a" } },
        ] })
    );
}

#[tokio::test]
async fn tool_use_split_over_many_deltas_is_assembled() {
    let input = json!({ "command": "ls -la /tmp", "timeout_ms": 5000, "nested": { "a": [1, 2] } });
    let reply = MessageBuilder::new(40, 0)
        .text("Listing.", 1)
        .tool_use("toolu_01A", "Bash", &input, 12)
        .finish("tool_use", 30);
    let server = start(vec![reply]).await;
    let got = deltas(&provider(&server, KEY)).await;
    assert_eq!(got[0], ModelDelta::Text("Listing.".into()));
    assert_eq!(
        tool_calls(&got),
        [("toolu_01A".to_owned(), "Bash".to_owned(), input)]
    );
}

#[tokio::test]
async fn two_tool_use_blocks_arrive_in_order() {
    let reply = MessageBuilder::new(40, 0)
        .tool_use("toolu_1", "Read", &json!({ "path": "a.txt" }), 3)
        .tool_use("toolu_2", "Read", &json!({ "path": "b.txt" }), 5)
        .finish("tool_use", 30);
    let server = start(vec![reply]).await;
    let got = deltas(&provider(&server, KEY)).await;
    let ids: Vec<String> = tool_calls(&got).into_iter().map(|c| c.0).collect();
    assert_eq!(ids, ["toolu_1", "toolu_2"]);
}

#[tokio::test]
async fn usage_counts_cache_reads_as_cached_input_and_comes_last() {
    let reply = MessageBuilder::new(100, 900)
        .text("ok", 1)
        .finish("end_turn", 12);
    let server = start(vec![reply]).await;
    let got = deltas(&provider(&server, KEY)).await;
    assert_eq!(
        got.last(),
        Some(&ModelDelta::Usage(TokenUsage {
            input_tokens: 1000,
            output_tokens: 12,
            cached_input_tokens: 900,
            reasoning_tokens: 0,
            total_tokens: 1012,
        }))
    );
    let usages = got
        .iter()
        .filter(|d| matches!(d, ModelDelta::Usage(_)))
        .count();
    assert_eq!(usages, 1);
}

#[tokio::test]
async fn an_error_event_mid_stream_fails_with_its_message() {
    let reply = MessageBuilder::new(10, 0)
        .text("partial", 1)
        .error("overloaded_error", "Overloaded");
    let server = start(vec![reply]).await;
    let items = run(&provider(&server, KEY), request()).await;
    assert!(
        matches!(&items[0], Ok(ModelDelta::Text(t)) if t == "partial"),
        "{items:?}"
    );
    match items.last() {
        Some(Err(e)) => {
            assert_eq!(e.kind(), ErrorKind::Unavailable);
            assert!(e.to_string().contains("Overloaded"), "{e}");
        }
        other => panic!("expected an error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_stream_cut_before_message_stop_is_an_error() {
    let reply = match MessageBuilder::new(10, 0)
        .text("half", 1)
        .finish("end_turn", 1)
    {
        AnthropicReply::Stream(mut events) => {
            events.truncate(events.len() - 2);
            AnthropicReply::Stream(events)
        }
        other => other,
    };
    let server = start(vec![reply]).await;
    let e = failure(&provider(&server, KEY)).await;
    assert!(e.to_string().contains("before the model finished"), "{e}");
}

#[tokio::test]
async fn a_429_with_retry_after_is_retried_then_succeeds() {
    let ok = MessageBuilder::new(5, 0)
        .text("after wait", 1)
        .finish("end_turn", 2);
    let server = start(vec![AnthropicReply::rate_limited(1), ok]).await;
    let started = Instant::now();
    let got = deltas(&provider(&server, KEY)).await;
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "retry-after honoured"
    );
    assert_eq!(got[0], ModelDelta::Text("after wait".into()));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn overloaded_529_is_retried() {
    let ok = MessageBuilder::new(5, 0)
        .text("fine", 1)
        .finish("end_turn", 2);
    let server = start(vec![AnthropicReply::error(529, "Overloaded"), ok]).await;
    let got = deltas(&provider(&server, KEY)).await;
    assert_eq!(got[0], ModelDelta::Text("fine".into()));
}

#[tokio::test]
async fn a_wrong_key_is_a_failed_precondition_with_the_message_and_no_key() {
    let server = start(Vec::new()).await;
    let e = failure(&provider(&server, "sk-ant-wrong-key-123")).await;
    assert_eq!(e.kind(), ErrorKind::FailedPrecondition);
    let text = e.to_string();
    assert!(text.contains("invalid x-api-key"), "{text}");
    assert!(!text.contains("sk-ant-wrong-key-123"), "{text}");
    assert_eq!(server.requests().len(), 1, "a 401 is not retried");
}

#[tokio::test]
async fn the_request_body_has_the_messages_api_shape() {
    let reply = MessageBuilder::new(5, 0)
        .text("ok", 1)
        .finish("end_turn", 1);
    let server = start(vec![reply]).await;
    let mut spec = spec();
    spec.config = json!({ "temperature": 0.2, "top_p": 0.9, "max_tokens": 20000, "reasoning_effort": "medium" })
        .as_object()
        .cloned();
    let request = ModelRequest {
        model: spec,
        system_prompt: "You are terse.".into(),
        messages: vec![
            ChatMessage::user("List two files"),
            ChatMessage::assistant(
                "Reading both.",
                vec![
                    ToolCall {
                        id: "toolu_1".into(),
                        name: "Read".into(),
                        arguments: r#"{"path":"a"}"#.into(),
                    },
                    ToolCall {
                        id: "toolu_2".into(),
                        name: "Read".into(),
                        arguments: r#"{"path":"b"}"#.into(),
                    },
                ],
            ),
            ChatMessage::tool_result("toolu_1", "alpha", false),
            ChatMessage::tool_result("toolu_2", "no such file", true),
        ],
        tools: vec![ToolSpec {
            name: "Read".into(),
            description: "Reads a file".into(),
            parameters: json!({ "type": "object", "properties": { "path": { "type": "string" } } }),
        }],
        call_index: 0,
    };
    let items = run(&provider(&server, KEY), request).await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    let body = &server.requests()[0];
    assert_eq!(body["model"], "claude-test");
    assert_eq!(body["stream"], true);
    assert_eq!(body["system"], "You are terse.");
    assert_eq!(body["max_tokens"], 20000);
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(body["top_p"], 0.9);
    assert_eq!(
        body["thinking"],
        json!({ "type": "enabled", "budget_tokens": 4096 })
    );
    assert_eq!(
        body["tools"],
        json!([{ "name": "Read", "description": "Reads a file",
                 "input_schema": { "type": "object", "properties": { "path": { "type": "string" } } } }])
    );
    assert_eq!(
        body["messages"],
        json!([
            { "role": "user", "content": [{ "type": "text", "text": "List two files" }] },
            { "role": "assistant", "content": [
                { "type": "text", "text": "Reading both." },
                { "type": "tool_use", "id": "toolu_1", "name": "Read", "input": { "path": "a" } },
                { "type": "tool_use", "id": "toolu_2", "name": "Read", "input": { "path": "b" } },
            ] },
            { "role": "user", "content": [
                { "type": "tool_result", "tool_use_id": "toolu_1", "content": "alpha", "is_error": false },
                { "type": "tool_result", "tool_use_id": "toolu_2", "content": "no such file", "is_error": true },
            ] },
        ])
    );
}

#[tokio::test]
async fn without_config_max_tokens_defaults_and_thinking_is_off() {
    let reply = MessageBuilder::new(5, 0)
        .text("ok", 1)
        .finish("end_turn", 1);
    let server = start(vec![reply]).await;
    let _ = deltas(&provider(&server, KEY)).await;
    let body = &server.requests()[0];
    assert_eq!(body["max_tokens"], 4096);
    assert!(body.get("thinking").is_none(), "{body}");
    assert!(body.get("temperature").is_none(), "{body}");
}
