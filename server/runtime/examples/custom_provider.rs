//! Embeds the Odyssey runtime with a model provider and a tool of the program's own: the
//! bundle names the provider in `model.provider` and declares the tool with
//! `source: host`; the agent's permission rules decide the tool's calls as for any tool.
//!
//! The provider here is a tiny rule-based "model" (it asks for a word count, then reports
//! it), standing in for a client of a model API the runtime does not speak.
//!
//! Run it with `cargo run -p odyssey-runtime --example custom_provider`.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde_json::{Value, json};

use odyssey_runtime::chat::{Role, TokenUsage};
use odyssey_runtime::provider::{ModelDelta, ModelProvider, ModelRequest, ProviderError, ToolSpec};
use odyssey_runtime::tools::{Tool, ToolContext, ToolOutput};
use odyssey_runtime::{
    ExecutionRequest, InstallOptions, OdysseyRuntime, RuntimeConfig, RuntimeError, SessionSpec,
};

/// Asks the `WordCount` tool about the user's words, then answers with its result.
struct Counter;

impl ModelProvider for Counter {
    fn stream(
        &self,
        request: ModelRequest,
    ) -> BoxStream<'static, Result<ModelDelta, ProviderError>> {
        let last = request.messages.last();
        let deltas = match last.map(|m| (m.role, m.content.clone())) {
            Some((Role::Tool, result)) => vec![ModelDelta::Text(format!("Counted: {result}."))],
            Some((_, prompt)) => vec![ModelDelta::ToolCall {
                id: format!("count_{}", request.call_index),
                name: "WordCount".into(),
                arguments: json!({ "text": prompt }).to_string(),
            }],
            None => vec![ModelDelta::Text("Nothing to count.".into())],
        };
        let usage = ModelDelta::Usage(TokenUsage {
            input_tokens: 10,
            output_tokens: 5,
            total_tokens: 15,
            ..TokenUsage::default()
        });
        futures::stream::iter(deltas.into_iter().chain([usage]).map(Ok)).boxed()
    }
}

/// Counts the words of a text.
struct WordCount;

impl Tool for WordCount {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "WordCount".into(),
            description: "Counts the words of `text`.".into(),
            parameters: json!({
                "type": "object",
                "properties": { "text": { "type": "string" } },
                "required": ["text"],
            }),
        }
    }

    fn read_only(&self) -> bool {
        true
    }

    fn call(&self, _ctx: ToolContext, arguments: Value) -> BoxFuture<'static, ToolOutput> {
        let output = match arguments.get("text").and_then(Value::as_str) {
            Some(text) => ToolOutput::ok(format!("{} words", text.split_whitespace().count())),
            None => ToolOutput::error("`text` (a string) is required"),
        };
        Box::pin(async move { output })
    }
}

const MANIFEST: &str = "apiVersion: odyssey.ai/bundle.v1
kind: AgentBundle
metadata:
  name: counter
  version: 0.1.0
spec:
  agents:
    - id: main
      spec: agents/main/agent.yaml
  tools:
    - { name: WordCount, source: host }
";

const AGENT: &str = "apiVersion: odyssey.ai/v1
kind: Agent
metadata:
  name: main
  version: 0.1.0
spec:
  kind: prompt
  prompt: Count words when asked.
  model:
    provider: counter
    name: rules-v1
  tools:
    allow: [WordCount]
";

#[tokio::main]
async fn main() -> Result<(), RuntimeError> {
    let temp = |what: &str| {
        let what = what.to_owned();
        move |e| RuntimeError::storage(what, e)
    };
    let home = tempfile::tempdir().map_err(temp("temp home"))?;
    let project = tempfile::tempdir().map_err(temp("temp project"))?;
    std::fs::create_dir_all(project.path().join("agents/main")).map_err(temp("project"))?;
    std::fs::write(project.path().join("odyssey.bundle.yaml"), MANIFEST)
        .map_err(temp("manifest"))?;
    std::fs::write(project.path().join("agents/main/agent.yaml"), AGENT).map_err(temp("agent"))?;

    let runtime = OdysseyRuntime::builder(RuntimeConfig::with_home(home.path()))
        .provider("counter", Arc::new(Counter))
        .tool(Arc::new(WordCount))
        .start()
        .await?;
    let bundle = runtime
        .build_and_install(project.path(), InstallOptions::default())
        .await?;
    for model in runtime.list_models(&bundle.id.to_string()).await? {
        println!("{}: {} ({})", model.agent_id, model.model, model.detail);
    }
    let session = runtime
        .create_session(SessionSpec::new(bundle.id.to_string()))
        .await?;
    let status = runtime
        .run(ExecutionRequest {
            session_id: session.record.id,
            prompt: "how many words are in this sentence".into(),
            ..Default::default()
        })
        .await?;
    println!("{:?}: {}", status.state, status.response);
    runtime.shutdown(Duration::from_secs(5)).await;
    Ok(())
}
