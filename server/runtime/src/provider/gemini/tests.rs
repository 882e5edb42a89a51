//! The Gemini provider against the loopback server: real HTTP, real SSE.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;

use crate::chat::{ChatMessage, TokenUsage, ToolCall};
use crate::model::ModelSpec;
use crate::provider::{
    ModelDelta, ModelProvider, ModelRequest, ProviderError, ProviderRegistry, ProviderSettings,
    ToolSpec,
};
use odyssey_testing::gemini_wire::{
    GeminiReply, GeminiUsage, GeminiWireServer, error_chunk, finish_chunk, function_call,
    parts_chunk, text_chunk, thought_chunk, with_usage,
};

const KEY: &str = "AIza-loopback-5e1d7b";

fn provider(server: &GeminiWireServer, name: &str) -> Arc<dyn ModelProvider> {
    let settings = ProviderSettings {
        base_url: Some(server.base_url()),
        api_key: Some(KEY.into()),
        request_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(10),
        max_retries: 3,
        max_retry_delay: Duration::from_secs(2),
        ..ProviderSettings::default()
    };
    let registry =
        ProviderRegistry::with_env(HashMap::from([(name.to_owned(), settings)]), |_| None);
    match registry.resolve(&ModelSpec::new(name, "gemini-test"), Path::new(".")) {
        Ok(provider) => provider,
        Err(e) => panic!("resolve failed: {e}"),
    }
}

async fn start(replies: Vec<GeminiReply>) -> GeminiWireServer {
    GeminiWireServer::start(KEY, replies)
        .await
        .expect("loopback server starts")
}

fn request() -> ModelRequest {
    ModelRequest {
        model: ModelSpec::new("gemini", "gemini-test"),
        system_prompt: "You are terse.".into(),
        messages: vec![ChatMessage::user("Say hello")],
        tools: Vec::new(),
        call_index: 0,
    }
}

async fn run(provider: &Arc<dyn ModelProvider>) -> Vec<Result<ModelDelta, ProviderError>> {
    provider.stream(request()).collect().await
}

async fn deltas(provider: &Arc<dyn ModelProvider>) -> Vec<ModelDelta> {
    run(provider)
        .await
        .into_iter()
        .map(|item| item.unwrap_or_else(|e| panic!("unexpected error: {e}")))
        .collect()
}

fn usage(prompt: u64, candidates: u64) -> GeminiUsage {
    GeminiUsage {
        prompt,
        candidates,
        ..GeminiUsage::default()
    }
}

#[tokio::test]
async fn text_over_several_chunks_arrives_in_order_then_usage() {
    let server = start(vec![GeminiReply::stream(vec![
        text_chunk("Hello "),
        text_chunk("there, "),
        text_chunk("world!"),
        finish_chunk("STOP", usage(8, 3)),
    ])])
    .await;
    let got = deltas(&provider(&server, "gemini")).await;
    assert_eq!(
        got,
        [
            ModelDelta::Text("Hello ".into()),
            ModelDelta::Text("there, ".into()),
            ModelDelta::Text("world!".into()),
            ModelDelta::Usage(TokenUsage {
                input_tokens: 8,
                output_tokens: 3,
                total_tokens: 11,
                ..TokenUsage::default()
            }),
        ]
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].model, "gemini-test");
}

#[tokio::test]
async fn thought_parts_become_reasoning() {
    let server = start(vec![GeminiReply::stream(vec![
        thought_chunk("Thinking about "),
        thought_chunk("greetings."),
        text_chunk("Hi."),
        finish_chunk("STOP", usage(5, 1)),
    ])])
    .await;
    let got = deltas(&provider(&server, "google")).await;
    assert_eq!(
        &got[..3],
        [
            ModelDelta::Reasoning("Thinking about ".into()),
            ModelDelta::Reasoning("greetings.".into()),
            ModelDelta::Text("Hi.".into()),
        ]
    );
}

#[tokio::test]
async fn function_calls_become_tool_calls_with_json_arguments() {
    let server = start(vec![GeminiReply::stream(vec![
        text_chunk("Let me look."),
        parts_chunk(vec![
            function_call("read_file", json!({ "path": "a.txt" })),
            json!({
                "functionCall": { "id": "fc-7", "name": "list_dir", "args": { "path": "." } },
                "thoughtSignature": "c2lnbmF0dXJl",
            }),
        ]),
        finish_chunk("STOP", usage(20, 9)),
    ])])
    .await;
    let got = deltas(&provider(&server, "gemini")).await;
    assert_eq!(got[0], ModelDelta::Text("Let me look.".into()));
    let calls: Vec<(String, String, serde_json::Value)> = got
        .iter()
        .filter_map(|d| match d {
            ModelDelta::ToolCall {
                id,
                name,
                arguments,
            } => Some((
                id.clone(),
                name.clone(),
                serde_json::from_str(arguments).expect("arguments are JSON"),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls,
        [
            (
                "call_0".into(),
                "read_file".into(),
                json!({ "path": "a.txt" })
            ),
            (
                "fc-7#sig:c2lnbmF0dXJl".into(),
                "list_dir".into(),
                json!({ "path": "." })
            ),
        ]
    );
    assert!(matches!(got.last(), Some(ModelDelta::Usage(_))), "{got:?}");
}

#[tokio::test]
async fn usage_comes_once_from_the_last_chunk_with_cached_and_thoughts() {
    let early = with_usage(text_chunk("a"), usage(100, 1));
    let last = GeminiUsage {
        prompt: 100,
        candidates: 7,
        cached: 64,
        thoughts: 30,
    };
    let server = start(vec![GeminiReply::stream(vec![
        early,
        text_chunk("b"),
        finish_chunk("STOP", last),
    ])])
    .await;
    let got = deltas(&provider(&server, "gemini")).await;
    let usages: Vec<&TokenUsage> = got
        .iter()
        .filter_map(|d| match d {
            ModelDelta::Usage(u) => Some(u),
            _ => None,
        })
        .collect();
    assert_eq!(
        usages,
        [&TokenUsage {
            input_tokens: 100,
            output_tokens: 37,
            cached_input_tokens: 64,
            reasoning_tokens: 30,
            total_tokens: 137,
        }]
    );
}

#[tokio::test]
async fn an_error_mid_stream_ends_the_call_with_the_providers_message() {
    let server = start(vec![GeminiReply::stream(vec![
        text_chunk("Partial "),
        error_chunk(
            503,
            "UNAVAILABLE",
            "The model is overloaded. Please try again later.",
        ),
    ])])
    .await;
    let items = run(&provider(&server, "gemini")).await;
    assert!(matches!(&items[0], Ok(ModelDelta::Text(t)) if t == "Partial "));
    match items.last() {
        Some(Err(e @ ProviderError::Unavailable { .. })) => {
            assert!(e.to_string().contains("overloaded"), "{e}")
        }
        other => panic!("expected an error last, got {other:?}"),
    }
    assert_eq!(items.iter().filter(|i| i.is_err()).count(), 1);
}

#[tokio::test]
async fn a_stream_cut_off_before_finish_reason_is_an_error() {
    let server = start(vec![GeminiReply::stream(vec![text_chunk("Half")])]).await;
    let items = run(&provider(&server, "gemini")).await;
    assert!(matches!(items.last(), Some(Err(_))), "{items:?}");
}

#[tokio::test]
async fn rate_limited_then_success_is_retried_after_the_asked_wait() {
    let server = start(vec![
        GeminiReply::rate_limited(1),
        GeminiReply::stream(vec![text_chunk("ok"), finish_chunk("STOP", usage(1, 1))]),
    ])
    .await;
    let started = Instant::now();
    let got = deltas(&provider(&server, "gemini")).await;
    assert!(started.elapsed() >= Duration::from_millis(900));
    assert_eq!(got[0], ModelDelta::Text("ok".into()));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_wrong_key_is_refused_and_never_shown() {
    let server = start(vec![]).await;
    let settings = ProviderSettings {
        base_url: Some(server.base_url()),
        api_key: Some("AIza-wrong-key".into()),
        ..ProviderSettings::default()
    };
    let registry =
        ProviderRegistry::with_env(HashMap::from([("gemini".to_owned(), settings)]), |_| None);
    let provider = registry
        .resolve(&ModelSpec::new("gemini", "gemini-test"), Path::new("."))
        .map_err(|e| e.to_string())
        .expect("resolves");
    let items: Vec<_> = provider.stream(request()).collect().await;
    match items.as_slice() {
        [Err(e @ ProviderError::Http { status: 400, .. })] => {
            assert!(e.to_string().contains("API key not valid"), "{e}");
            assert!(!e.to_string().contains("AIza-wrong-key"), "{e}");
            assert!(e.to_string().contains("[REDACTED]"), "{e}");
        }
        other => panic!("expected one HTTP error, got {other:?}"),
    }
}

#[tokio::test]
async fn the_request_body_has_gemini_shape() {
    let server = start(vec![GeminiReply::stream(vec![
        text_chunk("done"),
        finish_chunk("STOP", usage(1, 1)),
    ])])
    .await;
    let mut spec = ModelSpec::new("gemini", "gemini-test");
    spec.config = json!({
        "temperature": 0.2, "top_p": 0.9, "max_tokens": 256, "reasoning_effort": "low"
    })
    .as_object()
    .cloned();
    let request = ModelRequest {
        model: spec,
        system_prompt: "You are terse.".into(),
        messages: vec![
            ChatMessage::user("Read a.txt and b.txt"),
            ChatMessage::assistant(
                "",
                vec![
                    ToolCall {
                        id: "call_0#sig:c2ln".into(),
                        name: "read_file".into(),
                        arguments: r#"{"path":"a.txt"}"#.into(),
                    },
                    ToolCall {
                        id: "call_1".into(),
                        name: "stat".into(),
                        arguments: r#"{"path":"b.txt"}"#.into(),
                    },
                ],
            ),
            ChatMessage::tool_result("call_0#sig:c2ln", "alpha", false),
            ChatMessage::tool_result("call_1", "no such file", true),
        ],
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "Reads a file".into(),
            parameters: json!({
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "path": { "type": "string", "description": "Relative path" },
                    "limit": { "type": ["integer", "null"], "const": 5 },
                    "tags": { "type": "array", "items": { "type": "string", "additionalProperties": false } }
                },
                "required": ["path"]
            }),
        }],
        call_index: 0,
    };
    let items: Vec<_> = provider(&server, "gemini").stream(request).collect().await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    let body = &server.requests()[0].body;
    assert_eq!(
        body["systemInstruction"],
        json!({ "parts": [{ "text": "You are terse." }] })
    );
    assert_eq!(
        body["contents"],
        json!([
            { "role": "user", "parts": [{ "text": "Read a.txt and b.txt" }] },
            { "role": "model", "parts": [
                { "functionCall": { "name": "read_file", "args": { "path": "a.txt" } }, "thoughtSignature": "c2ln" },
                { "functionCall": { "name": "stat", "args": { "path": "b.txt" } } }
            ]},
            { "role": "user", "parts": [
                { "functionResponse": { "name": "read_file", "response": { "content": "alpha" } } },
                { "functionResponse": { "name": "stat", "response": { "error": "no such file" } } }
            ]}
        ])
    );
    assert_eq!(
        body["tools"],
        json!([{ "functionDeclarations": [{
            "name": "read_file",
            "description": "Reads a file",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": { "type": "string", "description": "Relative path" },
                    "limit": { "type": "integer", "nullable": true },
                    "tags": { "type": "array", "items": { "type": "string" } }
                },
                "required": ["path"]
            }
        }]}])
    );
    assert_eq!(
        body["generationConfig"],
        json!({
            "temperature": 0.2, "topP": 0.9, "maxOutputTokens": 256,
            "thinkingConfig": { "thinkingBudget": 1024, "includeThoughts": true }
        })
    );
}

#[test]
fn a_tool_results_images_follow_its_function_response_as_inline_data() {
    let mut request = ModelRequest {
        messages: vec![
            ChatMessage::assistant(
                "",
                vec![ToolCall {
                    id: "call_1".into(),
                    name: "shot".into(),
                    arguments: "{}".into(),
                }],
            ),
            ChatMessage {
                images: vec![crate::chat::ChatImage {
                    mime_type: "image/png".into(),
                    data: "iVBORw0KGgo=".into(),
                }],
                ..ChatMessage::tool_result("call_1", "[image image/png, 8 bytes]", false)
            },
        ],
        ..request()
    };
    let body = super::request::body(&request);
    assert_eq!(
        body["contents"][1],
        json!({ "role": "user", "parts": [
            { "functionResponse": { "name": "shot", "response": { "content": "[image image/png, 8 bytes]" } } },
            { "inlineData": { "mimeType": "image/png", "data": "iVBORw0KGgo=" } }
        ] })
    );
    request.model.config = json!({ "images": false }).as_object().cloned();
    let body = super::request::body(&request);
    assert_eq!(
        body["contents"][1]["parts"].as_array().map(Vec::len),
        Some(1)
    );
}
