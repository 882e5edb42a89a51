//! Model overrides end to end: a session created without a model runs on the operator's
//! model for its bundle and agent (the most specific override wins); a client that names
//! a model keeps it; other bundles keep their own.

use odyssey_api::v1 as pb;
use odyssey_server::testing::openai_wire::{OpenAiWireServer, Reply, Script};

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
