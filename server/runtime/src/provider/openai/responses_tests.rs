//! The OpenAI provider over the Responses API (`api: responses`) against the loopback
//! server: real HTTP, real SSE with typed events.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::json;

use crate::chat::{ChatMessage, TokenUsage, ToolCall};
use crate::model::ModelSpec;
use crate::provider::{
    ModelDelta, ModelProvider, ModelRequest, ProviderError, ProviderRegistry, ProviderSettings,
    ToolSpec,
};
use odyssey_testing::openai_wire::{
    OpenAiWireServer, Reply, ResponsesBuilder, ResponsesUsage, Script,
};

const KEY: &str = "sk-loopback-responses-41c2";

fn spec(config: serde_json::Value) -> ModelSpec {
    let mut spec = ModelSpec::new("openai", "gpt-test");
    let mut config = config.as_object().cloned().unwrap_or_default();
    config.insert("api".into(), json!("responses"));
    spec.config = Some(config);
    spec
}

fn provider(server: &OpenAiWireServer) -> Arc<dyn ModelProvider> {
    let settings = ProviderSettings {
        base_url: Some(server.base_url()),
        api_key: Some(KEY.into()),
        request_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(10),
        max_retries: 2,
        max_retry_delay: Duration::from_secs(2),
        ..ProviderSettings::default()
    };
    let registry =
        ProviderRegistry::with_env(HashMap::from([("openai".to_owned(), settings)]), |_| None);
    match registry.resolve(&spec(json!({})), Path::new(".")) {
        Ok(provider) => provider,
        Err(e) => panic!("resolve failed: {e}"),
    }
}

fn request() -> ModelRequest {
    ModelRequest {
        model: spec(json!({})),
        system_prompt: "You are terse.".into(),
        messages: vec![ChatMessage::user("Say hello")],
        tools: Vec::new(),
        call_index: 0,
    }
}

async fn serve(reply: Reply) -> OpenAiWireServer {
    OpenAiWireServer::start(Script::new(KEY).reply(reply))
        .await
        .expect("loopback server starts")
}

async fn run(
    server: &OpenAiWireServer,
    request: ModelRequest,
) -> Vec<Result<ModelDelta, ProviderError>> {
    provider(server).stream(request).collect().await
}

async fn deltas(server: &OpenAiWireServer) -> Vec<ModelDelta> {
    run(server, request())
        .await
        .into_iter()
        .map(|item| item.unwrap_or_else(|e| panic!("unexpected error: {e}")))
        .collect()
}

fn usage(input: u64, output: u64) -> ResponsesUsage {
    ResponsesUsage {
        input_tokens: input,
        output_tokens: output,
        ..ResponsesUsage::default()
    }
}

#[tokio::test]
async fn text_deltas_arrive_in_order_then_usage() {
    let server = serve(
        ResponsesBuilder::new()
            .text("Hello there, world!", 3)
            .completed(usage(9, 4))
            .build(),
    )
    .await;
    let got = deltas(&server).await;
    let text: Vec<&ModelDelta> = got
        .iter()
        .filter(|d| matches!(d, ModelDelta::Text(_)))
        .collect();
    assert_eq!(text.len(), 3, "{got:?}");
    let joined: String = got
        .iter()
        .filter_map(|d| match d {
            ModelDelta::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(joined, "Hello there, world!");
    assert_eq!(
        got.last(),
        Some(&ModelDelta::Usage(TokenUsage {
            input_tokens: 9,
            output_tokens: 4,
            total_tokens: 13,
            ..TokenUsage::default()
        }))
    );
}

#[tokio::test]
async fn reasoning_summary_deltas_become_reasoning_with_breaks_between_parts() {
    let server = serve(
        ResponsesBuilder::new()
            .reasoning_summary(&["First idea.", "Second idea."], 2)
            .text("Answer.", 1)
            .completed(usage(5, 20))
            .build(),
    )
    .await;
    let got = deltas(&server).await;
    assert_eq!(
        &got[..6],
        [
            ModelDelta::Reasoning("First ".into()),
            ModelDelta::Reasoning("idea.".into()),
            ModelDelta::ReasoningBreak,
            ModelDelta::Reasoning("Second".into()),
            ModelDelta::Reasoning(" idea.".into()),
            ModelDelta::Text("Answer.".into()),
        ]
    );
}

#[tokio::test]
async fn function_call_arguments_split_over_many_deltas_are_assembled() {
    let arguments = r#"{"path":"src/main.rs","limit":200}"#;
    let server = serve(
        ResponsesBuilder::new()
            .function_call("call_abc", "read_file", arguments, 9)
            .function_call("call_def", "list_dir", r#"{"path":"."}"#, 3)
            .completed(usage(30, 12))
            .build(),
    )
    .await;
    let got = deltas(&server).await;
    assert_eq!(
        &got[..2],
        [
            ModelDelta::ToolCall {
                id: "call_abc".into(),
                name: "read_file".into(),
                arguments: arguments.into(),
            },
            ModelDelta::ToolCall {
                id: "call_def".into(),
                name: "list_dir".into(),
                arguments: r#"{"path":"."}"#.into(),
            },
        ]
    );
}

#[tokio::test]
async fn usage_comes_from_response_completed_with_cached_and_reasoning() {
    let server = serve(
        ResponsesBuilder::new()
            .text("ok", 1)
            .completed(ResponsesUsage {
                input_tokens: 1200,
                output_tokens: 300,
                cached_tokens: 1024,
                reasoning_tokens: 256,
            })
            .build(),
    )
    .await;
    let got = deltas(&server).await;
    let usages: Vec<&ModelDelta> = got
        .iter()
        .filter(|d| matches!(d, ModelDelta::Usage(_)))
        .collect();
    assert_eq!(
        usages,
        [&ModelDelta::Usage(TokenUsage {
            input_tokens: 1200,
            output_tokens: 300,
            cached_input_tokens: 1024,
            reasoning_tokens: 256,
            total_tokens: 1500,
        })]
    );
}

#[tokio::test]
async fn response_failed_is_an_error_with_the_providers_message() {
    let server = serve(
        ResponsesBuilder::new()
            .text("Partial", 1)
            .failed("server_error", "The model produced invalid content.")
            .build(),
    )
    .await;
    let items = run(&server, request()).await;
    assert!(matches!(&items[0], Ok(ModelDelta::Text(t)) if t == "Partial"));
    match items.last() {
        Some(Err(e)) => assert!(e.to_string().contains("invalid content"), "{e}"),
        other => panic!("expected an error last, got {other:?}"),
    }
    assert_eq!(items.iter().filter(|i| i.is_err()).count(), 1);
}

#[tokio::test]
async fn an_error_event_is_an_error() {
    let server = serve(
        ResponsesBuilder::new()
            .error("rate_limit_exceeded", "Rate limit reached mid-stream.")
            .build(),
    )
    .await;
    let items = run(&server, request()).await;
    match items.as_slice() {
        [Err(e)] => assert!(e.to_string().contains("Rate limit reached"), "{e}"),
        other => panic!("expected one error, got {other:?}"),
    }
}

#[tokio::test]
async fn the_request_body_has_responses_shape() {
    let server = serve(
        ResponsesBuilder::new()
            .text("ok", 1)
            .completed(usage(1, 1))
            .build(),
    )
    .await;
    let request = ModelRequest {
        model: spec(json!({ "reasoning_effort": "high", "max_tokens": 512, "temperature": 1 })),
        system_prompt: "You are terse.".into(),
        messages: vec![
            ChatMessage::user("Read a.txt"),
            ChatMessage::assistant(
                "Reading.",
                vec![ToolCall {
                    id: "call_1".into(),
                    name: "read_file".into(),
                    arguments: r#"{"path":"a.txt"}"#.into(),
                }],
            ),
            ChatMessage::tool_result("call_1", "alpha", false),
        ],
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "Reads a file".into(),
            parameters: json!({ "type": "object", "properties": { "path": { "type": "string" } } }),
        }],
        call_index: 0,
    };
    let items = run(&server, request).await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    let body = &server.requests()[0];
    assert_eq!(body["model"], "gpt-test");
    assert_eq!(body["stream"], true);
    assert_eq!(body["instructions"], "You are terse.");
    assert_eq!(
        body["input"],
        json!([
            { "role": "user", "content": "Read a.txt" },
            { "role": "assistant", "content": "Reading." },
            { "type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": "{\"path\":\"a.txt\"}" },
            { "type": "function_call_output", "call_id": "call_1", "output": "alpha" }
        ])
    );
    assert_eq!(
        body["tools"],
        json!([{ "type": "function", "name": "read_file", "description": "Reads a file",
                 "parameters": { "type": "object", "properties": { "path": { "type": "string" } } },
                 "strict": false }])
    );
    assert_eq!(
        body["reasoning"],
        json!({ "effort": "high", "summary": "auto" })
    );
    assert_eq!(body["max_output_tokens"], 512);
    assert!(body.get("messages").is_none() && body.get("max_tokens").is_none());
}

#[test]
fn an_unknown_api_is_refused_at_validation() {
    let registry = ProviderRegistry::with_env(HashMap::new(), |_| None);
    let mut bad = ModelSpec::new("openai", "gpt-test");
    bad.config = json!({ "api": "assistants" }).as_object().cloned();
    let e = registry
        .validate(&bad)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("`api`"), "{e}");
    assert!(registry.validate(&spec(json!({}))).is_ok());
}

/// A call and its result holding an image, as a turn records them.
fn image_result() -> Vec<ChatMessage> {
    vec![
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
    ]
}

#[test]
fn a_tool_results_images_are_input_images_of_its_output_unless_the_model_takes_none() {
    let mut request = ModelRequest {
        messages: image_result(),
        ..request()
    };
    let body = super::responses_request::body(&request);
    assert_eq!(
        body["input"][1],
        json!({ "type": "function_call_output", "call_id": "call_1", "output": [
            { "type": "input_text", "text": "[image image/png, 8 bytes]" },
            { "type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=" }
        ] })
    );
    request.model = spec(json!({ "images": false }));
    let body = super::responses_request::body(&request);
    assert_eq!(body["input"][1]["output"], "[image image/png, 8 bytes]");
}
