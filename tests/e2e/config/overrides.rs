//! Model overrides end to end: a session created without a model runs on the operator's
//! model for its bundle and agent (the most specific override wins); a client that names
//! a model keeps it; other bundles keep their own.

use odyssey_api::v1 as pb;
use odyssey_testing::openai_wire::{OpenAiWireServer, Reply, Script};

use super::{configured, create, model, model_of};
use crate::support::{Project, bundle_name};

const KEY: &str = "sk-override-e2e-0123456789";

/// A replay project with two agents: `main` (the default) and `helper`.
fn two_agents(name: &str) -> Project {
    let project = Project::replay(name, &[r#"{"text": "from the bundle's own model"}"#]);
    project.write(
        "odyssey.bundle.yaml",
        &format!(
            "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: {name}\n  version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      default: true\n    - id: helper\n      spec: agents/helper/agent.yaml\n  sandbox:\n    mode: workspace_write\n"
        ),
    );
    project.write(
        "agents/helper/agent.yaml",
        "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: helper\n  version: 0.1.0\n  description: second agent\nspec:\n  kind: prompt\n  prompt: You help.\n  model:\n    provider: replay\n    name: main\n",
    );
    project
}

#[tokio::test]
async fn sessions_without_a_model_run_on_the_operators_override() {
    let model_server = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(Reply::text("from the override"))
            .reply(Reply::text("from the agent override")),
    )
    .await
    .expect("model server");
    let (server, _dir) = configured(&format!(
        r#"
[providers.openai]
base_url = "{base}"
api_key = "{KEY}"

[[models.override]]
bundle = "overridden"
model = "openai/gpt-bundle"
config = {{ temperature = 0.25 }}

[[models.override]]
bundle = "overridden"
agent = "main"
model = "openai/gpt-main"
"#,
        base = model_server.base_url(),
    ))
    .await;
    let overridden = bundle_name(&server.install(&two_agents("overridden")).await);
    let untouched = bundle_name(&server.install(&two_agents("untouched")).await);
    let request =
        |bundle: &str, agent: &str, model: Option<pb::ModelSpec>| pb::CreateSessionRequest {
            bundle_reference: bundle.to_owned(),
            agent_id: agent.to_owned(),
            model,
            ..Default::default()
        };

    let helper = create(&server, request(&overridden, "helper", None))
        .await
        .expect("helper session");
    assert_eq!(model_of(&helper), "openai/gpt-bundle");
    let status = server.run(&helper.id, "hello").await;
    assert_eq!(status.response, "from the override", "{status:?}");
    let body = &model_server.requests()[0];
    assert_eq!(body["model"], "gpt-bundle");
    assert_eq!(body["temperature"], 0.25, "the override's config is sent");

    // The agent-specific override beats the bundle-wide one.
    let main = create(&server, request(&overridden, "", None))
        .await
        .expect("main session");
    assert_eq!(model_of(&main), "openai/gpt-main");
    let status = server.run(&main.id, "hello").await;
    assert_eq!(status.response, "from the agent override", "{status:?}");
    assert_eq!(model_server.requests()[1]["model"], "gpt-main");

    // A client's explicit model still wins, and other bundles keep their own model.
    let explicit = create(
        &server,
        request(&overridden, "helper", Some(model("replay", "main", &[]))),
    )
    .await
    .expect("explicit model");
    assert_eq!(model_of(&explicit), "replay/main");
    let status = server.run(&explicit.id, "hello").await;
    assert_eq!(status.response, "from the bundle's own model");
    let other = create(&server, request(&untouched, "helper", None))
        .await
        .expect("other bundle");
    assert_eq!(model_of(&other), "replay/main");
    assert_eq!(
        model_server.requests().len(),
        2,
        "only the overridden sessions called it"
    );
}

/// `provider/name` of a model, or "" when absent.
fn named(model: Option<&pb::ModelSpec>) -> String {
    model
        .map(|m| format!("{}/{}", m.provider, m.name))
        .unwrap_or_default()
}

/// Issue 12 item 5: ListAgents, ListModels and InspectBundle answer with the model sessions
/// run on (the override), and the bundle's own where they differ; `odyssey agents` and
/// `odyssey models` show both. Issue 12 item 6: the override's integers stay integers in
/// the CLI's JSON.
#[tokio::test]
async fn agents_and_models_show_the_model_sessions_run_on() {
    let (server, _dir) = configured(&format!(
        r#"
[providers.openai]
api_key = "{KEY}"

[[models.override]]
bundle = "listed"
agent = "main"
model = "openai/gpt-main"
config = {{ max_tokens = 512, temperature = 0.25 }}
"#
    ))
    .await;
    let bundle = bundle_name(&server.install(&two_agents("listed")).await);

    let agents = server
        .bundles()
        .list_agents(pb::ListAgentsRequest {
            bundle_reference: bundle.clone(),
        })
        .await
        .expect("ListAgents")
        .into_inner()
        .agents;
    let shown: Vec<(String, String, String)> = agents
        .iter()
        .map(|a| {
            (
                a.id.clone(),
                named(a.model.as_ref()),
                named(a.bundle_model.as_ref()),
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            (
                "main".into(),
                "openai/gpt-main".into(),
                "replay/main".into()
            ),
            ("helper".into(), "replay/main".into(), String::new()),
        ]
    );
    let inspected = server
        .bundles()
        .inspect_bundle(pb::InspectBundleRequest {
            reference: bundle.clone(),
        })
        .await
        .expect("InspectBundle")
        .into_inner();
    assert_eq!(inspected.agents, agents, "InspectBundle agrees");
    let models = server
        .bundles()
        .list_models(pb::ListModelsRequest {
            bundle_reference: bundle.clone(),
        })
        .await
        .expect("ListModels")
        .into_inner()
        .models;
    assert_eq!(named(models[0].model.as_ref()), "openai/gpt-main");
    assert_eq!(named(models[0].bundle_model.as_ref()), "replay/main");
    assert!(models[0].available, "{:?}", models[0]);
    assert_eq!(named(models[1].model.as_ref()), "replay/main");
    assert!(models[1].bundle_model.is_none());

    let url = server.handle.url();
    let (code, out, err) = cli(&["--server", &url, "agents", &bundle]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("openai/gpt-main (bundle: replay/main)"),
        "{out}"
    );
    let (code, out, err) = cli(&["--server", &url, "--json", "models", &bundle]).await;
    assert_eq!(code, 0, "{err}");
    let first: serde_json::Value =
        serde_json::from_str(out.lines().next().unwrap_or_default()).expect("JSON line");
    assert_eq!(first["model"]["name"], "gpt-main");
    assert_eq!(first["bundleModel"]["name"], "main");
    let config = &first["model"]["config"];
    assert!(config["max_tokens"].is_u64(), "{config}");
    assert_eq!(
        config.to_string(),
        r#"{"max_tokens":512,"temperature":0.25}"#
    );
}

/// Runs the CLI in-process; returns (exit code, stdout, stderr).
async fn cli(args: &[&str]) -> (i32, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let args = args.iter().map(|a| a.to_string()).collect();
    let code = odyssey_cli::run_cli(args, &mut out, &mut err).await;
    (
        code,
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    )
}
