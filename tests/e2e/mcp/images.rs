//! Images from MCP tools: `@modelcontextprotocol/server-everything`'s `get-tiny-image`
//! runs in the sandbox, and the loopback model server receives the image in its
//! provider's form (an `image_url` part after the tool message for chat completions, an
//! `image` block in the `tool_result` for Anthropic), also after a restart; events only
//! describe it, and a model configured without images reads the description alone.

use std::path::Path;
use std::time::Duration;

use odyssey_api::v1 as pb;
use odyssey_runtime::provider::ProviderSettings;
use odyssey_testing::anthropic_wire::{AnthropicWireServer, MessageBuilder};
use odyssey_testing::openai_wire::{OpenAiWireServer, Script};
use serde_json::{Value, json};

use super::{KEY, call, everything, finished, node_modules, text};
use crate::support::{Project, TestServer};

/// The start of any PNG's base64.
const PNG_BASE64: &str = "iVBORw0KGgo";
const TOOL: &str = "mcp__everything__get-tiny-image";

/// A bundle whose agent uses server-everything, with model `provider/name` and `config`.
fn project(name: &str, modules: &Path, provider: &str, config: &str) -> Project {
    let project = Project::empty();
    let command = serde_json::to_string(&everything(modules)).expect("json");
    project.write(
        "odyssey.bundle.yaml",
        &format!(
            "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: {name}\n  version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      default: true\n  mcp_servers:\n    - name: everything\n      command: {command}\n  sandbox:\n    mode: workspace_write\n    permissions:\n      filesystem:\n        mounts:\n          read: [\"{}\"]\n",
            modules.display()
        ),
    );
    project.write(
        "agents/main/agent.yaml",
        &format!("apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\nspec:\n  kind: prompt\n  prompt: You are a test agent.\n  model:\n    provider: {provider}\n    name: test-model\n    config: {config}\n  mcp_servers: [everything]\n  tools:\n    allow: [\"mcp__everything__*\"]\n"),
    );
    project
}

async fn server(provider: &str, base_url: String, modules: &Path) -> TestServer {
    let provider = provider.to_owned();
    let modules = modules.to_path_buf();
    TestServer::start_configured(
        move |args| {
            args.mount_roots = vec![modules];
            args.env_allowlist = vec!["PATH".into()];
        },
        move |config| {
            config.providers.insert(
                provider,
                ProviderSettings {
                    base_url: Some(base_url),
                    api_key: Some(KEY.into()),
                    ..ProviderSettings::default()
                },
            );
            config.mcp.call_timeout = Duration::from_secs(60);
        },
    )
    .await
}

/// Runs `prompt` and checks that the turn completed and that its events describe the
/// tool's image without carrying it.
async fn run_and_check_events(server: &TestServer, session: &str, prompt: &str) {
    let status = server.run(session, prompt).await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    let events = server.events(session, 0, status.last_sequence).await;
    let calls = finished(&events);
    let (tool, success, result) = calls.last().expect("a tool call");
    assert_eq!(tool, TOOL);
    assert!(success, "{result}");
    assert!(
        result.contains("[image image/png, ") && result.contains("MCP logo"),
        "the text and the image's description: {result}"
    );
    for event in &events {
        let shown = format!("{event:?}");
        assert!(
            !shown.contains(PNG_BASE64),
            "no event carries the image: {shown:.300}"
        );
    }
}

#[tokio::test]
async fn chat_completions_get_a_tools_image_in_a_user_message_after_its_result() {
    let modules = node_modules();
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(call("c1", TOOL, "{}"))
            .reply(text("A logo."))
            .reply(call("c2", TOOL, "{}"))
            .reply(text("Described only.")),
    )
    .await
    .expect("loopback model");
    let server = server("openai", model.base_url(), &modules).await;

    let session = server
        .session_on(&project("img-openai", &modules, "openai", "{}"))
        .await;
    run_and_check_events(&server, &session.id, "Show me the image.").await;
    let requests = model.requests();
    let messages = requests[1]["messages"].as_array().expect("messages");
    let at = messages
        .iter()
        .position(|m| m["role"] == "tool")
        .expect("the tool's result");
    let result = messages[at]["content"].as_str().expect("text only");
    assert!(result.contains("[image image/png, "), "{result}");
    assert!(!result.contains(PNG_BASE64), "{result}");
    let images = &messages[at + 1];
    assert_eq!(images["role"], "user", "{images}");
    assert_eq!(
        images["content"][0]["text"],
        "The images returned by tool call c1:"
    );
    assert_eq!(images["content"][1]["type"], "image_url");
    let url = images["content"][1]["image_url"]["url"]
        .as_str()
        .expect("a data URL");
    assert!(
        url.starts_with(&format!("data:image/png;base64,{PNG_BASE64}")),
        "{url:.80}"
    );

    // A model configured without images reads the description alone.
    let session = server
        .session_on(&project(
            "img-none",
            &modules,
            "openai",
            "{ images: false }",
        ))
        .await;
    run_and_check_events(&server, &session.id, "Show me the image.").await;
    let requests = model.requests();
    let sent = requests[3].to_string();
    assert!(sent.contains("[image image/png, "), "{sent:.2000}");
    assert!(!sent.contains(PNG_BASE64), "{sent:.2000}");
    assert!(!sent.contains("image_url"), "{sent:.2000}");
}

/// The tool_result blocks of a request, in order.
fn tool_results(request: &Value) -> Vec<Value> {
    request["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|block| block["type"] == "tool_result")
        .cloned()
        .collect()
}

#[tokio::test]
async fn anthropic_gets_a_tools_image_in_its_tool_result_also_after_a_restart() {
    let modules = node_modules();
    let model = AnthropicWireServer::start(
        KEY,
        vec![
            MessageBuilder::new(10, 0)
                .tool_use("toolu_1", TOOL, &json!({}), 1)
                .finish("tool_use", 5),
            MessageBuilder::new(20, 0)
                .text("A logo.", 1)
                .finish("end_turn", 3),
            MessageBuilder::new(30, 0)
                .text("Still a logo.", 1)
                .finish("end_turn", 3),
        ],
    )
    .await
    .expect("loopback model");
    let server = server("anthropic", model.base_url(), &modules).await;
    let session = server
        .session_on(&project("img-anthropic", &modules, "anthropic", "{}"))
        .await;
    run_and_check_events(&server, &session.id, "Show me the image.").await;

    let expect_image = |request: &Value| {
        let results = tool_results(request);
        assert_eq!(results.len(), 1, "{request}");
        let content = results[0]["content"].as_array().expect("blocks");
        assert_eq!(content[0]["type"], "text");
        assert!(
            content[0]["text"]
                .as_str()
                .is_some_and(|t| t.contains("[image image/png, ")),
            "{content:?}"
        );
        assert_eq!(content[1]["type"], "image");
        assert_eq!(content[1]["source"]["type"], "base64");
        assert_eq!(content[1]["source"]["media_type"], "image/png");
        assert!(
            content[1]["source"]["data"]
                .as_str()
                .is_some_and(|d| d.starts_with(PNG_BASE64)),
            "{content:?}"
        );
    };
    expect_image(&model.requests()[1]);

    // The session's history, read back from its log, still holds the image.
    let server = server.restart().await;
    let status = server.run(&session.id, "And now?").await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    assert_eq!(status.response, "Still a logo.");
    expect_image(&model.requests()[2]);
}
