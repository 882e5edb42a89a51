//! Requirements against a real server: a sandbox mode, a provider or a base URL beyond
//! them is refused with PERMISSION_DENIED naming the setting, and nothing is created.

use odyssey_api::v1 as pb;
use odyssey_testing::openai_wire::{OpenAiWireServer, Reply, Script};
use tonic::Code;

use super::{configured, create, model};
use crate::support::{Project, bundle_name, error_reason, turn};

const KEY: &str = "sk-config-e2e-0123456789";

#[tokio::test]
async fn modes_and_providers_beyond_the_requirements_are_permission_denied() {
    let (server, _dir) = configured(
        "[requirements]\nmax_sandbox_mode = \"workspace_write\"\nallowed_providers = [\"replay\"]\n",
    )
    .await;
    let bundle = server
        .install(&Project::replay("capped", &[r#"{"text": "ok"}"#]))
        .await;
    let reference = bundle_name(&bundle);
    let request = |mode: pb::SandboxMode, model: Option<pb::ModelSpec>| pb::CreateSessionRequest {
        bundle_reference: reference.clone(),
        sandbox_mode: mode as i32,
        model,
        ..Default::default()
    };

    let status = create(&server, request(pb::SandboxMode::DangerFullAccess, None))
        .await
        .expect_err("danger_full_access refused");
    assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
    assert!(
        status.message().contains("requirements.max_sandbox_mode")
            && status.message().contains("workspace_write"),
        "{}",
        status.message()
    );
    assert_eq!(error_reason(&status).as_deref(), Some("PERMISSION_DENIED"));

    let status = create(
        &server,
        request(
            pb::SandboxMode::Unspecified,
            Some(model("openai", "gpt-test", &[])),
        ),
    )
    .await
    .expect_err("provider refused");
    assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
    assert!(
        status.message().contains("requirements.allowed_providers"),
        "{}",
        status.message()
    );
    assert_eq!(
        error_reason(&status).as_deref(),
        Some("PROVIDER_NOT_ALLOWED")
    );

    let listed = server
        .sessions()
        .list_sessions(pb::ListSessionsRequest::default())
        .await
        .expect("list")
        .into_inner();
    assert!(listed.sessions.is_empty(), "refusals create nothing");

    // Within the requirements everything works, and a turn may not switch provider.
    let session = create(&server, request(pb::SandboxMode::ReadOnly, None))
        .await
        .expect("read_only is within workspace_write");
    let mut input = turn(&session.id, "hi");
    input.overrides = Some(pb::TurnOverrides {
        model: Some(model("anthropic", "claude-test", &[])),
        ..Default::default()
    });
    let status = server
        .executions()
        .submit(pb::SubmitRequest { input: Some(input) })
        .await
        .expect_err("turn model refused");
    assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
    assert!(
        status.message().contains("requirements.allowed_providers"),
        "{}",
        status.message()
    );
    let done = server.run(&session.id, "hi").await;
    assert_eq!(done.state, pb::ExecutionState::Completed as i32, "{done:?}");

    let info = server
        .server()
        .get_server_info(pb::GetServerInfoRequest::default())
        .await
        .expect("info")
        .into_inner();
    assert!(!info.sandbox.expect("sandbox").danger_full_access_allowed);
}

#[tokio::test]
async fn a_model_base_url_is_honoured_only_where_the_operator_allows_it() {
    let operator = OpenAiWireServer::start(Script::new(KEY))
        .await
        .expect("operator's model server");
    let chosen =
        OpenAiWireServer::start(Script::new(KEY).reply(Reply::text("from the chosen URL")))
            .await
            .expect("chosen model server");
    let (server, _dir) = configured(&format!(
        "[providers.openai]\nbase_url = \"{}\"\napi_key = \"{KEY}\"\nallowed_base_urls = [\"{}/*\"]\n",
        operator.base_url(),
        chosen.origin(),
    ))
    .await;
    let bundle = server.install(&Project::openai("routed")).await;
    let reference = bundle_name(&bundle);
    let with_model = |spec: pb::ModelSpec| pb::CreateSessionRequest {
        bundle_reference: reference.clone(),
        model: Some(spec),
        ..Default::default()
    };

    // Anywhere else, the server's key does not go: refused, not silently ignored.
    let elsewhere = model(
        "openai",
        "gpt-test",
        &[("base_url", "http://127.0.0.1:9/v1")],
    );
    let status = create(&server, with_model(elsewhere))
        .await
        .expect_err("unlisted URL refused");
    assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
    assert!(
        status
            .message()
            .contains("providers.openai.allowed_base_urls")
            && status.message().contains("http://127.0.0.1:9/v1"),
        "{}",
        status.message()
    );
    assert_eq!(
        error_reason(&status).as_deref(),
        Some("BASE_URL_NOT_ALLOWED")
    );

    let listed = model("openai", "gpt-test", &[("base_url", &chosen.base_url())]);
    let session = create(&server, with_model(listed))
        .await
        .expect("listed URL allowed");
    let status = server.run(&session.id, "hello").await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    assert_eq!(status.response, "from the chosen URL");
    assert_eq!(
        chosen.requests().len(),
        1,
        "the call went to the chosen URL"
    );
    assert!(operator.requests().is_empty(), "and not to the operator's");
    let auth = chosen.calls()[0].authorization.clone();
    assert_eq!(auth.as_deref(), Some(format!("Bearer {KEY}").as_str()));
}

#[tokio::test]
async fn required_base_urls_cap_providers_default_endpoints_too() {
    let model_server = OpenAiWireServer::start(Script::new(KEY).reply(Reply::text("inside")))
        .await
        .expect("model server");
    let (server, _dir) = configured(&format!(
        "[providers.openai]\nbase_url = \"{base}\"\napi_key = \"{KEY}\"\n\n[requirements]\nallowed_base_urls = [\"{origin}/*\"]\n",
        base = model_server.base_url(),
        origin = model_server.origin(),
    ))
    .await;
    let bundle = server.install(&Project::openai("required")).await;
    let request = |model: Option<pb::ModelSpec>| pb::CreateSessionRequest {
        bundle_reference: bundle_name(&bundle),
        model,
        ..Default::default()
    };
    let session = create(&server, request(None))
        .await
        .expect("the operator's URL is within the requirement");
    assert_eq!(server.run(&session.id, "hi").await.response, "inside");

    // Anthropic's public endpoint is outside the requirement, key or not.
    let status = create(
        &server,
        request(Some(model("anthropic", "claude-test", &[]))),
    )
    .await
    .expect_err("default endpoint refused");
    assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
    assert!(
        status.message().contains("requirements.allowed_base_urls")
            && status.message().contains("https://api.anthropic.com"),
        "{}",
        status.message()
    );
}
