//! Extended thinking with tool use against the loopback Anthropic Messages API: the signed
//! thinking block of the assistant turn that called a tool goes back, first and verbatim,
//! on the request that carries the tool's result.

use odyssey_api::v1 as pb;
use odyssey_runtime::provider::ProviderSettings;
use odyssey_testing::anthropic_wire::{AnthropicWireServer, MessageBuilder};
use serde_json::json;

use super::project;
use crate::support::{TestServer, payload_kind};

const KEY: &str = "sk-ant-e2e-thinking-5c1f";

#[tokio::test]
async fn a_tool_call_made_while_thinking_sends_its_signed_thinking_back_first() {
    let model = AnthropicWireServer::start(
        KEY,
        vec![
            MessageBuilder::new(30, 0)
                .thinking("The user wants the files; LS shows them.", 3)
                .redacted_thinking("EmwKAhgBEgy3va3pzix")
                .text("Looking.", 1)
                .tool_use("toolu_ls", "LS", &json!({ "path": "." }), 3)
                .finish("tool_use", 40),
            MessageBuilder::new(80, 0)
                .thinking("Empty folder.", 1)
                .text("The workspace is empty.", 2)
                .finish("end_turn", 12),
        ],
    )
    .await
    .expect("loopback model");
    let base_url = model.base_url();
    let server = TestServer::start_configured(
        |_| {},
        move |config| {
            config.providers.insert(
                "anthropic".into(),
                ProviderSettings {
                    base_url: Some(base_url),
                    api_key: Some(KEY.into()),
                    ..ProviderSettings::default()
                },
            );
        },
    )
    .await;
    let project = project(
        "thinker",
        "anthropic",
        "claude-test",
        "{ reasoning_effort: low }",
        &["LS"],
    );
    let session = server.session_on(&project).await;
    let status = server.run(&session.id, "What is in the workspace?").await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    assert_eq!(status.response, "The workspace is empty.");

    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0]["thinking"],
        json!({ "type": "enabled", "budget_tokens": 1024 })
    );
    let assistant = &requests[1]["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(
        assistant["content"][0],
        json!({ "type": "thinking", "thinking": "The user wants the files; LS shows them.",
                "signature": MessageBuilder::SIGNATURE })
    );
    assert_eq!(
        assistant["content"][1],
        json!({ "type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix" })
    );
    assert_eq!(assistant["content"][2]["type"], "text");
    assert_eq!(assistant["content"][3]["type"], "tool_use");
    assert_eq!(assistant["content"][3]["id"], "toolu_ls");
    let results = &requests[1]["messages"][2];
    assert_eq!(results["role"], "user");
    assert_eq!(results["content"][0]["tool_use_id"], "toolu_ls");
    assert_eq!(results["content"][0]["is_error"], false);

    // The thinking itself was shown as it streamed; the signature never is.
    let events = server.events(&session.id, 0, status.last_sequence).await;
    assert!(
        events.iter().any(|e| payload_kind(e) == "reasoning_delta"),
        "reasoning streamed"
    );
    let shown = format!("{events:?}");
    assert!(!shown.contains(MessageBuilder::SIGNATURE), "{shown}");
}
