//! The OpenAI-wire provider against the loopback server: real HTTP, real SSE.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;

use crate::chat::{ChatMessage, TokenUsage, ToolCall};
use crate::error::ErrorKind;
use crate::model::ModelSpec;
use crate::provider::{
    ModelDelta, ModelProvider, ModelRequest, ProviderError, ProviderRegistry, ProviderSettings,
    ToolSpec,
};
use odyssey_testing::openai_wire::{OpenAiWireServer, Reply, Script, StreamBuilder, WireUsage};

const KEY: &str = "sk-loopback-7f3a9c2e";

fn settings(server: &OpenAiWireServer) -> ProviderSettings {
    ProviderSettings {
        base_url: Some(server.base_url()),
        api_key: Some(KEY.into()),
        request_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(10),
        max_retries: 3,
        max_retry_delay: Duration::from_secs(2),
        ..ProviderSettings::default()
    }
}

fn provider_with(settings: ProviderSettings) -> Arc<dyn ModelProvider> {
    let registry =
        ProviderRegistry::with_env(HashMap::from([("openai".to_owned(), settings)]), |_| None);
    match registry.resolve(
        &ModelSpec::new("openai", "gpt-test"),
        Path::new("/nonexistent"),
    ) {
        Ok(provider) => provider,
        Err(e) => panic!("resolve failed: {e}"),
    }
}

async fn start(script: Script) -> OpenAiWireServer {
    OpenAiWireServer::start(script)
        .await
        .expect("loopback server starts")
}

fn request() -> ModelRequest {
    ModelRequest {
        model: ModelSpec::new("openai", "gpt-test"),
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

/// All items, panicking on the first error.
async fn deltas(provider: &Arc<dyn ModelProvider>) -> Vec<ModelDelta> {
    run(provider, request())
        .await
        .into_iter()
        .map(|item| item.unwrap_or_else(|e| panic!("unexpected error: {e}")))
        .collect()
}

/// The only error of a call that must fail, after any deltas.
async fn failure(provider: &Arc<dyn ModelProvider>) -> ProviderError {
    let items = run(provider, request()).await;
    let error_count = items.iter().filter(|i| i.is_err()).count();
    assert_eq!(error_count, 1, "exactly one error expected: {items:?}");
    match items.into_iter().last() {
        Some(Err(e)) => e,
        other => panic!("the error must be the last item, got {other:?}"),
    }
}

fn usage(prompt: u64, completion: u64) -> WireUsage {
    WireUsage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        ..WireUsage::default()
    }
}

#[tokio::test]
async fn text_in_several_deltas_arrives_as_several_text_deltas_in_order() {
    let reply = StreamBuilder::new()
        .text("Hello there, dear world!", 4)
        .finish("stop")
        .usage(usage(10, 6))
        .done()
        .build();
    let server = start(Script::new(KEY).reply(reply)).await;
    let got = deltas(&provider_with(settings(&server))).await;
    let texts: Vec<&str> = got
        .iter()
        .filter_map(|d| match d {
            ModelDelta::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["Hello ", "there,", " dear ", "world!"]);
    assert!(matches!(got.last(), Some(ModelDelta::Usage(_))), "{got:?}");
}

#[tokio::test]
async fn text_arrives_while_the_model_is_still_writing() {
    let reply = StreamBuilder::new()
        .text("first", 1)
        .pause(Duration::from_secs(30))
        .text("second", 1)
        .finish("stop")
        .done()
        .build();
    let server = start(Script::new(KEY).reply(reply)).await;
    let provider = provider_with(settings(&server));
    let mut stream = provider.stream(request());
    let first = tokio::time::timeout(Duration::from_secs(5), stream.next()).await;
    assert!(
        matches!(first, Ok(Some(Ok(ModelDelta::Text(ref t)))) if t == "first"),
        "{first:?}"
    );
}

#[tokio::test]
async fn a_tool_call_split_over_many_deltas_is_assembled() {
    let arguments = r#"{"path": "src/main.rs", "limit": 200}"#;
    let reply = StreamBuilder::new()
        .tool_call(0, "call_abc123", "read_file", arguments, 7)
        .finish("tool_calls")
        .usage(usage(40, 18))
        .done()
        .build();
    let server = start(Script::new(KEY).reply(reply)).await;
    let got = deltas(&provider_with(settings(&server))).await;
    assert_eq!(
        got[0],
        ModelDelta::ToolCall {
            id: "call_abc123".into(),
            name: "read_file".into(),
            arguments: arguments.into(),
        }
    );
    assert_eq!(got.len(), 2, "{got:?}");
}

#[tokio::test]
async fn parallel_tool_calls_are_assembled_in_index_order() {
    let reply = StreamBuilder::new()
        .text("Checking both.", 2)
        .tool_calls(
            &[
                (0, "call_a", "read_file", r#"{"path":"a.txt"}"#),
                (1, "call_b", "list_dir", r#"{"path":"src","depth":2}"#),
            ],
            5,
        )
        .finish("tool_calls")
        .done()
        .build();
    let server = start(Script::new(KEY).reply(reply)).await;
    let got = deltas(&provider_with(settings(&server))).await;
    let calls: Vec<_> = got
        .iter()
        .filter_map(|d| match d {
            ModelDelta::ToolCall {
                id,
                name,
                arguments,
            } => Some((id.as_str(), name.as_str(), arguments.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("call_a", "read_file", r#"{"path":"a.txt"}"#),
            ("call_b", "list_dir", r#"{"path":"src","depth":2}"#),
        ]
    );
    assert_eq!(got[0], ModelDelta::Text("Checkin".into()));
}

#[tokio::test]
async fn reasoning_deltas_from_both_field_names() {
    let reply = StreamBuilder::new()
        .reasoning("The user wants a greeting.", 3)
        .deltas("reasoning", " Keep it short.", 2)
        .text("Hi!", 1)
        .finish("stop")
        .done()
        .build();
    let server = start(Script::new(KEY).reply(reply)).await;
    let got = deltas(&provider_with(settings(&server))).await;
    let reasoning: String = got
        .iter()
        .filter_map(|d| match d {
            ModelDelta::Reasoning(r) => Some(r.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning, "The user wants a greeting. Keep it short.");
    assert_eq!(
        got.iter()
            .filter(|d| matches!(d, ModelDelta::Reasoning(_)))
            .count(),
        5
    );
    assert_eq!(got.last(), Some(&ModelDelta::Text("Hi!".into())));
}

#[tokio::test]
async fn usage_comes_from_the_final_chunk_with_cached_and_reasoning_tokens() {
    let reply = StreamBuilder::new()
        .text("Done.", 1)
        .finish("stop")
        .usage(WireUsage {
            prompt_tokens: 1200,
            completion_tokens: 300,
            cached_tokens: 1024,
            reasoning_tokens: 256,
        })
        .done()
        .build();
    let server = start(Script::new(KEY).reply(reply)).await;
    let got = deltas(&provider_with(settings(&server))).await;
    assert_eq!(
        got.last(),
        Some(&ModelDelta::Usage(TokenUsage {
            input_tokens: 1200,
            output_tokens: 300,
            cached_input_tokens: 1024,
            reasoning_tokens: 256,
            total_tokens: 1500,
        }))
    );
    assert_eq!(
        got.iter()
            .filter(|d| matches!(d, ModelDelta::Usage(_)))
            .count(),
        1
    );
}

#[tokio::test]
async fn an_error_object_mid_stream_becomes_an_error_with_the_providers_message() {
    let reply = StreamBuilder::new()
        .text("Partial answer", 2)
        .error("The server had an error while processing your request. Sorry about that!")
        .build();
    let server = start(Script::new(KEY).reply(reply)).await;
    let items = run(&provider_with(settings(&server)), request()).await;
    assert_eq!(items.len(), 3, "{items:?}");
    let Some(Err(e)) = items.last() else {
        panic!("expected an error last: {items:?}");
    };
    assert_eq!(e.kind(), ErrorKind::Unavailable);
    assert!(
        e.to_string()
            .contains("The server had an error while processing"),
        "{e}"
    );
    assert_eq!(
        server.requests().len(),
        1,
        "a started answer is never retried"
    );
}

#[tokio::test]
async fn rate_limit_with_retry_after_is_retried_once_then_answers() {
    let script = Script::new(KEY)
        .reply(Reply::rate_limited(1))
        .reply(Reply::text("Hello after waiting"));
    let server = start(script).await;
    let started = Instant::now();
    let got = deltas(&provider_with(settings(&server))).await;
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "Retry-After not honoured"
    );
    let text: String = got
        .iter()
        .filter_map(|d| match d {
            ModelDelta::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Hello after waiting");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn server_errors_give_up_after_the_bounded_retries() {
    let boom = || {
        Reply::error(
            500,
            "The server had an error while processing your request.",
        )
    };
    let server = start(
        Script::new(KEY)
            .reply(boom())
            .reply(boom())
            .reply(boom())
            .reply(Reply::text("late")),
    )
    .await;
    let provider = provider_with(ProviderSettings {
        max_retries: 2,
        max_retry_delay: Duration::from_millis(20),
        ..settings(&server)
    });
    let e = failure(&provider).await;
    assert_eq!(e.kind(), ErrorKind::Unavailable);
    assert_eq!(e.reason(), "PROVIDER_UNAVAILABLE");
    assert!(e.to_string().contains("HTTP 500"), "{e}");
    assert_eq!(server.requests().len(), 3, "1 attempt + 2 retries");
}

#[tokio::test]
async fn a_retry_after_beyond_the_bound_is_not_waited_for() {
    let server = start(
        Script::new(KEY)
            .reply(Reply::rate_limited(3600))
            .reply(Reply::text("late")),
    )
    .await;
    let e = failure(&provider_with(settings(&server))).await;
    assert_eq!(e.kind(), ErrorKind::Unavailable);
    assert_eq!(e.retry_after(), Some(Duration::from_secs(3600)));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn unauthorized_is_a_failed_precondition_with_the_message_and_no_key() {
    let wrong_key = "sk-wrong-5ecret-d0-not-leak";
    let server = start(Script::new(KEY).reply(Reply::text("never"))).await;
    let provider = provider_with(ProviderSettings {
        api_key: Some(wrong_key.into()),
        ..settings(&server)
    });
    let e = failure(&provider).await;
    assert_eq!(e.kind(), ErrorKind::FailedPrecondition);
    assert_eq!(e.reason(), "PROVIDER_HTTP_ERROR");
    let message = e.to_string();
    assert!(message.contains("Incorrect API key provided"), "{message}");
    assert!(message.contains("HTTP 401"), "{message}");
    assert!(!message.contains(wrong_key), "key leaked: {message}");
    assert!(message.contains("[REDACTED]"), "{message}");
    assert_eq!(server.requests().len(), 1, "4xx is not retried");
}

/// Issue 11 item 6: a provider that quotes the key where its error body is cut to 1,000
/// characters leaks none of it (the cut used to come first, leaving all but its end).
#[tokio::test]
async fn a_key_quoted_across_the_error_cut_is_redacted_whole() {
    let message = format!("{} {KEY} was refused", "x".repeat(990));
    let server = start(Script::new(KEY).reply(Reply::error(400, message))).await;
    let text = failure(&provider_with(settings(&server))).await.to_string();
    assert!(!text.contains(&KEY[..8]), "key leaked: {text}");
    assert!(text.contains("[REDACTED"), "{text}");
}

/// Issue 21: a request that picks an operator credential by name calls the provider with
/// that credential's key (and nothing of it reaches the request body).
#[tokio::test]
async fn a_named_credential_is_the_key_the_provider_sees() {
    let server = start(Script::new(KEY).reply(Reply::text("hi"))).await;
    let operator = ProviderSettings {
        api_key: None,
        ..settings(&server)
    };
    let team = crate::provider::CredentialSettings {
        provider: "openai".into(),
        api_key: Some(KEY.into()),
        ..Default::default()
    };
    let registry =
        ProviderRegistry::with_env(HashMap::from([("openai".to_owned(), operator)]), |_| None)
            .with_credentials(HashMap::from([("team".to_owned(), team)]));
    let mut spec = ModelSpec::new("openai", "gpt-test");
    spec.config = json!({ "credential": "team" }).as_object().cloned();
    let provider = registry
        .resolve(&spec, Path::new("."))
        .unwrap_or_else(|e| panic!("{e}"));
    let items = run(
        &provider,
        ModelRequest {
            model: spec,
            ..request()
        },
    )
    .await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    let body = server.requests()[0].to_string();
    assert!(
        !body.contains("credential") && !body.contains(KEY),
        "{body}"
    );
}

#[tokio::test]
async fn a_missing_key_names_the_environment_variable() {
    let registry = ProviderRegistry::with_env(HashMap::new(), |_| None);
    let e = match registry.resolve(&ModelSpec::new("openai", "gpt-test"), Path::new(".")) {
        Ok(_) => panic!("resolved without a key"),
        Err(e) => e,
    };
    assert_eq!(e.reason(), "PROVIDER_NOT_CONFIGURED");
    assert_eq!(e.kind(), ErrorKind::FailedPrecondition);
    assert!(e.to_string().contains("OPENAI_API_KEY"), "{e}");
}

#[tokio::test]
async fn the_request_body_has_the_chat_completions_shape() {
    let server = start(Script::new(KEY).reply(Reply::text("ok"))).await;
    let mut spec = ModelSpec::new("openai", "gpt-test");
    spec.config = json!({
        "temperature": 0.2,
        "max_tokens": 512,
        "top_p": 0.9,
        "reasoning_effort": "low",
        "extra_body": { "seed": 7, "stream": false, "metadata": { "run": "x" } },
        // A client-chosen URL must not receive the server's key.
        "base_url": "http://127.0.0.1:9/v1",
    })
    .as_object()
    .cloned();
    let request = ModelRequest {
        model: spec,
        system_prompt: "You are terse.".into(),
        messages: vec![
            ChatMessage::user("Read a.txt"),
            ChatMessage::assistant(
                "",
                vec![ToolCall {
                    id: "call_1".into(),
                    name: "read_file".into(),
                    arguments: r#"{"path":"a.txt"}"#.into(),
                }],
            ),
            ChatMessage::tool_result("call_1", "hello from a.txt", false),
        ],
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "Reads a file.".into(),
            parameters: json!({ "type": "object", "properties": { "path": { "type": "string" } } }),
        }],
        call_index: 1,
    };
    let items = run(&provider_with(settings(&server)), request).await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    let requests = server.requests();
    let body = &requests[0];
    assert_eq!(
        *body,
        json!({
            "model": "gpt-test",
            "stream": true,
            "stream_options": { "include_usage": true },
            "messages": [
                { "role": "system", "content": "You are terse." },
                { "role": "user", "content": "Read a.txt" },
                { "role": "assistant", "content": null, "tool_calls": [
                    { "id": "call_1", "type": "function", "function": { "name": "read_file", "arguments": "{\"path\":\"a.txt\"}" } }
                ] },
                { "role": "tool", "tool_call_id": "call_1", "content": "hello from a.txt" },
            ],
            "tools": [{ "type": "function", "function": {
                "name": "read_file",
                "description": "Reads a file.",
                "parameters": { "type": "object", "properties": { "path": { "type": "string" } } },
            } }],
            "temperature": 0.2,
            "max_tokens": 512,
            "top_p": 0.9,
            "reasoning_effort": "low",
            "seed": 7,
            "metadata": { "run": "x" },
        })
    );
}

#[tokio::test]
async fn tools_are_omitted_when_there_are_none() {
    let server = start(Script::new(KEY).reply(Reply::text("ok"))).await;
    deltas(&provider_with(settings(&server))).await;
    assert!(server.requests()[0].get("tools").is_none());
}

#[tokio::test]
async fn silence_mid_stream_trips_the_idle_timeout() {
    let reply = StreamBuilder::new()
        .text("Hel", 1)
        .pause(Duration::from_secs(30))
        .text("lo", 1)
        .build();
    let server = start(Script::new(KEY).reply(reply)).await;
    let provider = provider_with(ProviderSettings {
        idle_timeout: Duration::from_millis(200),
        ..settings(&server)
    });
    let e = failure(&provider).await;
    assert_eq!(e.kind(), ErrorKind::DeadlineExceeded);
    assert_eq!(e.reason(), "PROVIDER_TIMEOUT");
}

#[tokio::test]
async fn no_response_trips_the_request_timeout_without_retrying() {
    let server =
        start(Script::new(KEY).reply(Reply::text("late").delayed(Duration::from_secs(30)))).await;
    let provider = provider_with(ProviderSettings {
        request_timeout: Duration::from_millis(200),
        ..settings(&server)
    });
    let e = failure(&provider).await;
    assert_eq!(e.kind(), ErrorKind::DeadlineExceeded);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_stream_cut_off_before_the_finish_is_an_error() {
    let reply = StreamBuilder::new()
        .text("Half an ans", 2)
        .tool_call(0, "call_1", "write_file", r#"{"path":"#, 2)
        .build();
    let server = start(Script::new(KEY).reply(reply)).await;
    let items = run(&provider_with(settings(&server)), request()).await;
    assert!(
        !items
            .iter()
            .any(|i| matches!(i, Ok(ModelDelta::ToolCall { .. }))),
        "a truncated tool call must not be released: {items:?}"
    );
    assert!(
        matches!(items.last(), Some(Err(ProviderError::Unavailable { .. }))),
        "{items:?}"
    );
}

#[tokio::test]
async fn connection_refused_is_retried_then_unavailable() {
    let port = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let provider = provider_with(ProviderSettings {
        base_url: Some(format!("http://127.0.0.1:{port}/v1")),
        api_key: Some(KEY.into()),
        max_retries: 1,
        max_retry_delay: Duration::from_millis(10),
        ..ProviderSettings::default()
    });
    let e = failure(&provider).await;
    assert_eq!(e.kind(), ErrorKind::Unavailable);
    assert!(!e.to_string().contains(KEY));
}

#[tokio::test]
async fn echo_mode_answers_any_request() {
    let server = start(Script::echo(KEY)).await;
    let provider = provider_with(settings(&server));
    for _ in 0..3 {
        let got = deltas(&provider).await;
        let text: String = got
            .iter()
            .filter_map(|d| match d {
                ModelDelta::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, "echo: Say hello");
        assert!(matches!(got.last(), Some(ModelDelta::Usage(u)) if u.input_tokens > 0));
    }
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn an_endless_server_answers_every_request_and_keeps_only_timings() {
    let server = start(Script::repeat(KEY, Reply::text("Always the same."))).await;
    let provider = provider_with(settings(&server));
    for _ in 0..3 {
        let got = deltas(&provider).await;
        let text: String = got
            .iter()
            .filter_map(|d| match d {
                ModelDelta::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, "Always the same.");
    }
    assert!(server.requests().is_empty(), "bodies are not kept");
    let timings = server.take_timings();
    assert_eq!(timings.len(), 3);
    assert!(timings.iter().all(|t| t.answered >= t.received));
    assert!(server.take_timings().is_empty(), "taken once");
}

#[tokio::test]
async fn a_tool_loop_server_asks_for_its_tool_until_the_turn_has_the_results() {
    let done = Reply::text("Finished.");
    let server = start(Script::tool_loop(
        KEY,
        "Bash",
        r#"{"command":"true"}"#,
        2,
        done,
    ))
    .await;
    let provider = provider_with(settings(&server));
    let mut request = request();
    request.tools = vec![ToolSpec {
        name: "Bash".into(),
        description: "Runs a command".into(),
        parameters: json!({ "type": "object" }),
    }];
    let mut names = Vec::new();
    for round in 0..3 {
        let got: Vec<ModelDelta> = run(&provider, request.clone())
            .await
            .into_iter()
            .map(|item| item.unwrap_or_else(|e| panic!("unexpected error: {e}")))
            .collect();
        let call = got.iter().find_map(|d| match d {
            ModelDelta::ToolCall {
                id,
                name,
                arguments,
            } => Some((id.clone(), name.clone(), arguments.clone())),
            _ => None,
        });
        let Some((id, name, arguments)) = call else {
            assert_eq!(round, 2, "the third call answers");
            break;
        };
        assert_eq!(arguments, r#"{"command":"true"}"#);
        names.push(name.clone());
        request.messages.push(ChatMessage::assistant(
            "",
            vec![ToolCall {
                id: id.clone(),
                name,
                arguments,
            }],
        ));
        request
            .messages
            .push(ChatMessage::tool_result(id, "exit 0", false));
    }
    assert_eq!(names, ["Bash", "Bash"]);
    assert_eq!(server.take_timings().len(), 3);
}
