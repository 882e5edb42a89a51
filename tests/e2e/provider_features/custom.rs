//! A model provider and a tool registered from Rust, driven through the real embedded
//! runtime: bundles name the provider in `model.provider` and declare the tool with
//! `source: host`; session creation, ListModels, the known-provider list and the agent's
//! permission rules all see them.
//!
//! The provider is a plain implementation of the `ModelProvider` trait: registering one is
//! the feature under test, so it is not standing in for anything of the runtime's.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde_json::{Value, json};

use odyssey_runtime::chat::{Role, TokenUsage};
use odyssey_runtime::events::{ApprovalDecision, Event, EventPayload};
use odyssey_runtime::provider::{ModelDelta, ModelProvider, ModelRequest, ProviderError, ToolSpec};
use odyssey_runtime::tools::{Tool, ToolContext, ToolOutput};
use odyssey_runtime::{
    ErrorKind, ExecutionRequest, ExecutionState, InstallOptions, ModelSpec, OdysseyRuntime,
    PageRequest, RuntimeConfig, SessionSpec,
};

use crate::support::Project;

/// Calls `WordCount` on the prompt, then answers with what the tool said.
struct Counter;

impl ModelProvider for Counter {
    fn stream(
        &self,
        request: ModelRequest,
    ) -> BoxStream<'static, Result<ModelDelta, ProviderError>> {
        let offered = request.tools.iter().any(|t| t.name == "WordCount");
        let deltas = match request.messages.last().map(|m| (m.role, m.content.clone())) {
            Some((Role::Tool, result)) => vec![ModelDelta::Text(format!("Tool said: {result}"))],
            Some((Role::User, prompt)) if offered => vec![ModelDelta::ToolCall {
                id: format!("wc_{}", request.call_index),
                name: "WordCount".into(),
                arguments: json!({ "text": prompt }).to_string(),
            }],
            _ => vec![ModelDelta::Text("WordCount is not offered.".into())],
        };
        let usage = ModelDelta::Usage(TokenUsage {
            input_tokens: 7,
            output_tokens: 3,
            total_tokens: 10,
            ..TokenUsage::default()
        });
        futures::stream::iter(deltas.into_iter().chain([usage]).map(Ok)).boxed()
    }
}

/// Counts words; not read-only, so without a rule it would ask.
struct WordCount;

impl Tool for WordCount {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "WordCount".into(),
            description: "Counts the words of `text`.".into(),
            parameters: json!({ "type": "object", "properties": { "text": { "type": "string" } } }),
        }
    }

    fn call(&self, _ctx: ToolContext, arguments: Value) -> BoxFuture<'static, ToolOutput> {
        let words = arguments
            .get("text")
            .and_then(Value::as_str)
            .map(|t| t.split_whitespace().count());
        Box::pin(async move {
            match words {
                Some(n) => ToolOutput::ok(format!("{n} words")),
                None => ToolOutput::error("`text` is required"),
            }
        })
    }
}

/// A bundle on the `counter` provider declaring the host tool, with the given rules.
fn counter_project(name: &str, allow: &str, ask: &str) -> Project {
    let project = Project::empty();
    project.write(
        "odyssey.bundle.yaml",
        &format!("apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: {name}\n  version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n  tools:\n    - {{ name: WordCount, source: host }}\n  sandbox:\n    mode: workspace_write\n"),
    );
    project.write(
        "agents/main/agent.yaml",
        &format!("apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\n  version: 0.1.0\nspec:\n  kind: prompt\n  prompt: Count.\n  model:\n    provider: counter\n    name: rules\n  tools:\n    allow: {allow}\n    ask: {ask}\n"),
    );
    project
}

async fn runtime_with_both(home: &tempfile::TempDir) -> OdysseyRuntime {
    OdysseyRuntime::builder(RuntimeConfig::with_home(home.path()))
        .provider("counter", Arc::new(Counter))
        .tool(Arc::new(WordCount))
        .start()
        .await
        .expect("runtime starts")
}

/// Every event of the session up to `last`.
async fn events(runtime: &OdysseyRuntime, session: uuid::Uuid, last: u64) -> Vec<Arc<Event>> {
    let mut subscription = runtime
        .subscribe_session(session, 0)
        .await
        .expect("subscribe");
    let mut all = Vec::new();
    while subscription.cursor() < last {
        let batch = tokio::time::timeout(Duration::from_secs(10), subscription.next_batch())
            .await
            .expect("events keep coming")
            .expect("readable")
            .expect("session exists");
        all.extend(batch);
    }
    all
}

#[tokio::test]
async fn a_custom_provider_and_host_tool_run_a_turn_under_the_agents_rules() {
    let home = tempfile::tempdir().expect("home");
    let runtime = runtime_with_both(&home).await;
    assert!(
        runtime
            .server_info()
            .providers
            .contains(&"counter".to_owned())
    );

    let project = counter_project("counting", "[WordCount]", "[]");
    let bundle = runtime
        .build_and_install(project.path(), InstallOptions::default())
        .await
        .expect("bundle installs");
    let models = runtime
        .list_models(&bundle.id.to_string())
        .await
        .expect("list models");
    assert_eq!(models.len(), 1);
    assert!(models[0].available, "{models:?}");
    assert!(models[0].detail.contains("embedding"), "{models:?}");

    let session = runtime
        .create_session(SessionSpec::new(bundle.id.to_string()))
        .await
        .expect("session on the custom provider");
    let status = runtime
        .run(ExecutionRequest {
            session_id: session.record.id,
            prompt: "one two three four".into(),
            ..Default::default()
        })
        .await
        .expect("turn runs");
    assert_eq!(status.state, ExecutionState::Completed, "{status:?}");
    assert_eq!(status.response, "Tool said: 4 words");
    assert_eq!(status.usage.input_tokens, 14, "two calls of 7");

    let events = events(&runtime, session.record.id, status.last_sequence).await;
    let finished = events.iter().find_map(|e| match &e.payload {
        EventPayload::ToolCallFinished {
            tool,
            success,
            result,
            ..
        } => Some((tool.clone(), *success, result.clone())),
        _ => None,
    });
    assert_eq!(
        finished,
        Some(("WordCount".to_owned(), true, "4 words".to_owned()))
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.payload, EventPayload::PermissionRequested { .. })),
        "allowed by the agent's rule, so nobody was asked"
    );

    // An unknown provider is refused with the list of known ones, custom ones included.
    let err = runtime
        .create_session(SessionSpec {
            model: Some(ModelSpec::new("nope", "m")),
            ..SessionSpec::new(bundle.id.to_string())
        })
        .await
        .expect_err("unknown provider");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    let text = err.to_string();
    assert!(
        text.contains("`nope`") && text.contains("counter") && text.contains("openai"),
        "{text}"
    );
    runtime.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn an_ask_rule_makes_a_host_tool_wait_for_a_human_and_deny_holds() {
    let home = tempfile::tempdir().expect("home");
    let runtime = runtime_with_both(&home).await;
    let project = counter_project("asking", "[]", "[WordCount]");
    let bundle = runtime
        .build_and_install(project.path(), InstallOptions::default())
        .await
        .expect("bundle installs");
    let session = runtime
        .create_session(SessionSpec::new(bundle.id.to_string()))
        .await
        .expect("session");
    let handle = runtime
        .submit(ExecutionRequest {
            session_id: session.record.id,
            prompt: "count me".into(),
            ..Default::default()
        })
        .await
        .expect("submitted");
    let pending = loop {
        let page = runtime
            .list_approvals(Some(session.record.id), PageRequest::default())
            .expect("list approvals");
        if let Some(approval) = page.items.into_iter().next() {
            break approval;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(pending.request.tool, "WordCount");
    runtime
        .resolve_approval(
            &pending.request_id,
            ApprovalDecision::Deny,
            "not now".into(),
        )
        .expect("resolved");
    let status = runtime.wait(handle.execution_id).await.expect("turn ends");
    assert_eq!(status.state, ExecutionState::Completed, "{status:?}");
    assert_eq!(status.response, "Tool said: denied by the user: not now");
    runtime.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_deny_rule_keeps_a_host_tool_from_the_model() {
    let home = tempfile::tempdir().expect("home");
    let runtime = runtime_with_both(&home).await;
    let project = counter_project("denying", "[]", "[]");
    project.write(
        "agents/main/agent.yaml",
        "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\n  version: 0.1.0\nspec:\n  kind: prompt\n  prompt: Count.\n  model:\n    provider: counter\n    name: rules\n  tools:\n    deny: [WordCount]\n",
    );
    let bundle = runtime
        .build_and_install(project.path(), InstallOptions::default())
        .await
        .expect("bundle installs");
    let session = runtime
        .create_session(SessionSpec::new(bundle.id.to_string()))
        .await
        .expect("session");
    let status = runtime
        .run(ExecutionRequest {
            session_id: session.record.id,
            prompt: "count me".into(),
            ..Default::default()
        })
        .await
        .expect("turn runs");
    assert_eq!(status.response, "WordCount is not offered.");
    runtime.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_bundle_needing_a_host_tool_this_runtime_lacks_is_refused_at_session_creation() {
    let home = tempfile::tempdir().expect("home");
    let runtime = OdysseyRuntime::builder(RuntimeConfig::with_home(home.path()))
        .provider("counter", Arc::new(Counter))
        .start()
        .await
        .expect("runtime starts");
    let project = counter_project("lacking", "[WordCount]", "[]");
    let bundle = runtime
        .build_and_install(project.path(), InstallOptions::default())
        .await
        .expect("the bundle itself is valid");
    let err = runtime
        .create_session(SessionSpec::new(bundle.id.to_string()))
        .await
        .expect_err("refused");
    assert_eq!(err.kind(), ErrorKind::FailedPrecondition);
    let text = err.to_string();
    assert!(
        text.contains("`WordCount`") && text.contains("registered here: none"),
        "{text}"
    );
    runtime.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn registrations_that_would_shadow_or_collide_are_refused() {
    let home = tempfile::tempdir().expect("home");
    let start = |builder: odyssey_runtime::RuntimeBuilder| async move {
        builder.start().await.err().expect("refused")
    };
    let config = || RuntimeConfig::with_home(home.path());

    let err = start(OdysseyRuntime::builder(config()).provider("openai", Arc::new(Counter))).await;
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.to_string().contains("built-in provider"), "{err}");

    let twice = OdysseyRuntime::builder(config())
        .provider("mine", Arc::new(Counter))
        .provider("mine", Arc::new(Counter));
    assert!(
        start(twice)
            .await
            .to_string()
            .contains("already registered")
    );

    let err =
        start(OdysseyRuntime::builder(config()).provider("My Model", Arc::new(Counter))).await;
    assert!(err.to_string().contains("a-z"), "{err}");

    struct FakeRead;
    impl Tool for FakeRead {
        fn spec(&self) -> ToolSpec {
            ToolSpec {
                name: "Read".into(),
                description: String::new(),
                parameters: json!({ "type": "object" }),
            }
        }
        fn call(&self, _: ToolContext, _: Value) -> BoxFuture<'static, ToolOutput> {
            Box::pin(async { ToolOutput::ok("") })
        }
    }
    let err = start(OdysseyRuntime::builder(config()).tool(Arc::new(FakeRead))).await;
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.to_string().contains("builtin tool"), "{err}");
}

#[tokio::test]
async fn a_turn_fails_cleanly_when_a_restarted_runtime_no_longer_has_the_host_tool() {
    let home = tempfile::tempdir().expect("home");
    let runtime = runtime_with_both(&home).await;
    let project = counter_project("restarted", "[WordCount]", "[]");
    let bundle = runtime
        .build_and_install(project.path(), InstallOptions::default())
        .await
        .expect("bundle installs");
    let session = runtime
        .create_session(SessionSpec::new(bundle.id.to_string()))
        .await
        .expect("session");
    runtime.shutdown(Duration::from_secs(5)).await;

    let without_tool = OdysseyRuntime::builder(RuntimeConfig::with_home(home.path()))
        .provider("counter", Arc::new(Counter))
        .start()
        .await
        .expect("runtime starts again");
    let status = without_tool
        .run(ExecutionRequest {
            session_id: session.record.id,
            prompt: "count me".into(),
            ..Default::default()
        })
        .await
        .expect("the turn is accepted");
    assert_eq!(status.state, ExecutionState::Failed, "{status:?}");
    assert!(status.error.contains("`WordCount`"), "{}", status.error);
    without_tool.shutdown(Duration::from_secs(5)).await;
}
