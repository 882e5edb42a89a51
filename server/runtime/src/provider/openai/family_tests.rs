//! OpenAI-compatible providers other than `openai`: each reaches its server with the right
//! path, query and auth header, through the registry, against the loopback server.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use futures::StreamExt;
use serde_json::json;

use crate::chat::ChatMessage;
use crate::model::ModelSpec;
use crate::provider::{ModelDelta, ModelRequest, ProviderRegistry, ProviderSettings};
use odyssey_testing::openai_wire::{OpenAiWireServer, Reply, Script, StreamBuilder};

/// Runs one call of `spec` through a registry with `settings` for its provider and
/// `env` as the environment; returns the text the model streamed.
async fn call(
    spec: ModelSpec,
    settings: ProviderSettings,
    env: &'static [(&'static str, &'static str)],
) -> String {
    let settings = ProviderSettings {
        request_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(10),
        ..settings
    };
    let registry = ProviderRegistry::with_env(
        HashMap::from([(spec.provider.clone(), settings)]),
        move |name| {
            env.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        },
    );
    let provider = match registry.resolve(&spec, Path::new("/nonexistent")) {
        Ok(provider) => provider,
        Err(e) => panic!("resolve failed: {e}"),
    };
    let request = ModelRequest {
        model: spec,
        system_prompt: String::new(),
        messages: vec![ChatMessage::user("hi")],
        tools: Vec::new(),
        call_index: 0,
    };
    let items: Vec<_> = provider.stream(request).collect().await;
    items
        .into_iter()
        .filter_map(|item| match item {
            Ok(ModelDelta::Text(text)) => Some(text),
            Ok(_) => None,
            Err(e) => panic!("unexpected error: {e}"),
        })
        .collect()
}

fn hello() -> Reply {
    StreamBuilder::new()
        .text("hello", 2)
        .finish("stop")
        .done()
        .build()
}

async fn start(key: &str) -> OpenAiWireServer {
    OpenAiWireServer::start(Script::new(key).reply(hello()))
        .await
        .expect("loopback server starts")
}

#[tokio::test]
async fn deepseek_sends_its_env_key_as_a_bearer_token() {
    let server = start("sk-deepseek").await;
    let settings = ProviderSettings {
        base_url: Some(server.base_url()),
        ..ProviderSettings::default()
    };
    let spec = ModelSpec::new("deepseek", "deepseek-chat");
    let text = call(spec, settings, &[("DEEPSEEK_API_KEY", "sk-deepseek")]).await;
    assert_eq!(text, "hello");
    let calls = server.calls();
    assert_eq!(calls[0].path_and_query, "/v1/chat/completions");
    assert_eq!(
        calls[0].authorization.as_deref(),
        Some("Bearer sk-deepseek")
    );
    assert_eq!(calls[0].api_key, None);
    assert_eq!(server.requests()[0]["model"], "deepseek-chat");
}

#[tokio::test]
async fn azure_names_the_deployment_in_the_path_and_sends_an_api_key_header() {
    let server = start("azure-key").await;
    let origin: &'static str = Box::leak(server.origin().into_boxed_str());
    let env: &'static [(&'static str, &'static str)] = Box::leak(Box::new([
        ("AZURE_OPENAI_API_KEY", "azure-key"),
        ("AZURE_OPENAI_ENDPOINT", origin),
    ]));
    let mut spec = ModelSpec::new("azure_openai", "gpt4o-prod");
    spec.config = json!({ "api_version": "2025-01-01-preview" })
        .as_object()
        .cloned();
    let text = call(spec, ProviderSettings::default(), env).await;
    assert_eq!(text, "hello");
    let calls = server.calls();
    assert_eq!(
        calls[0].path_and_query,
        "/openai/deployments/gpt4o-prod/chat/completions?api-version=2025-01-01-preview"
    );
    assert_eq!(calls[0].api_key.as_deref(), Some("azure-key"));
    assert_eq!(calls[0].authorization, None);
}

#[tokio::test]
async fn azure_defaults_the_api_version() {
    let server = start("azure-key").await;
    let settings = ProviderSettings {
        base_url: Some(format!("{}/", server.origin())),
        api_key: Some("azure-key".into()),
        ..ProviderSettings::default()
    };
    let text = call(ModelSpec::new("azure_openai", "dep"), settings, &[]).await;
    assert_eq!(text, "hello");
    assert_eq!(
        server.calls()[0].path_and_query,
        format!(
            "/openai/deployments/dep/chat/completions?api-version={}",
            super::AZURE_API_VERSION
        )
    );
}

#[tokio::test]
async fn azure_refuses_the_responses_api_without_calling() {
    let server = start("azure-key").await;
    let settings = ProviderSettings {
        base_url: Some(server.origin()),
        api_key: Some("azure-key".into()),
        ..ProviderSettings::default()
    };
    let registry =
        ProviderRegistry::with_env(HashMap::from([("azure_openai".into(), settings)]), |_| None);
    let mut spec = ModelSpec::new("azure_openai", "dep");
    spec.config = json!({ "api": "responses" }).as_object().cloned();
    let provider = match registry.resolve(&spec, Path::new("/nonexistent")) {
        Ok(provider) => provider,
        Err(e) => panic!("resolve failed: {e}"),
    };
    let request = ModelRequest {
        model: spec,
        system_prompt: String::new(),
        messages: vec![ChatMessage::user("hi")],
        tools: Vec::new(),
        call_index: 0,
    };
    let items: Vec<_> = provider.stream(request).collect().await;
    match items.as_slice() {
        [Err(e)] => assert_eq!(e.reason(), "INVALID_MODEL", "{e}"),
        other => panic!("expected one error, got {} items", other.len()),
    }
    assert!(server.calls().is_empty());
}

#[tokio::test]
async fn ollama_calls_without_any_key() {
    let server = start("").await;
    let settings = ProviderSettings {
        base_url: Some(server.base_url()),
        ..ProviderSettings::default()
    };
    let text = call(ModelSpec::new("ollama", "llama3.2"), settings, &[]).await;
    assert_eq!(text, "hello");
    let calls = server.calls();
    assert_eq!(calls[0].path_and_query, "/v1/chat/completions");
    assert_eq!(
        (calls[0].authorization.clone(), calls[0].api_key.clone()),
        (None, None)
    );
}
