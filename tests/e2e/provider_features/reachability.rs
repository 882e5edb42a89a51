//! ListModels tells whether the local model servers a bundle's agents use are up: a real
//! TCP probe of a listening and of a closed loopback port.

use odyssey_api::v1 as pb;
use odyssey_runtime::provider::ProviderSettings;

use crate::support::{Project, TestServer, bundle_name};

fn two_local_agents() -> Project {
    let project = Project::empty();
    project.write(
        "odyssey.bundle.yaml",
        "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: locals\n  version: 0.1.0\nspec:\n  agents:\n    - id: up\n      spec: agents/up/agent.yaml\n      default: true\n    - id: down\n      spec: agents/down/agent.yaml\n",
    );
    for (id, provider) in [("up", "ollama"), ("down", "llama_cpp")] {
        project.write(
            &format!("agents/{id}/agent.yaml"),
            &format!("apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: {id}\n  version: 0.1.0\nspec:\n  kind: prompt\n  prompt: Local.\n  model:\n    provider: {provider}\n    name: small\n"),
        );
    }
    project
}

#[tokio::test]
async fn list_models_reports_whether_each_local_server_is_reachable() {
    let listening = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let up = format!("http://{}/v1", listening.local_addr().expect("addr"));
    // Bound but never listening: connecting is refused, and no other test can take the port
    // while this one runs (a dropped listener's port could be handed to the next bind).
    let closed = tokio::net::TcpSocket::new_v4().expect("socket");
    closed
        .bind("127.0.0.1:0".parse().expect("address"))
        .expect("bind");
    let down = format!("http://{}/v1", closed.local_addr().expect("addr"));
    let (up_url, down_url) = (up.clone(), down.clone());
    let server = TestServer::start_configured(
        |_| {},
        move |config| {
            for (name, url) in [("ollama", up_url), ("llama_cpp", down_url)] {
                config.providers.insert(
                    name.into(),
                    ProviderSettings {
                        base_url: Some(url),
                        ..ProviderSettings::default()
                    },
                );
            }
        },
    )
    .await;
    let bundle = server.install(&two_local_agents()).await;
    let models = server
        .bundles()
        .list_models(pb::ListModelsRequest {
            bundle_reference: bundle_name(&bundle),
        })
        .await
        .expect("list models")
        .into_inner()
        .models;
    let by_agent = |id: &str| {
        models
            .iter()
            .find(|m| m.agent_id == id)
            .unwrap_or_else(|| panic!("agent {id} in {models:?}"))
    };
    let up_model = by_agent("up");
    assert!(up_model.available, "{up_model:?}");
    assert!(up_model.detail.contains(&up), "{up_model:?}");
    assert!(up_model.detail.contains("reachable"), "{up_model:?}");
    let down_model = by_agent("down");
    assert!(!down_model.available, "{down_model:?}");
    assert!(down_model.detail.contains(&down), "{down_model:?}");
    assert!(
        down_model.detail.contains("not reachable"),
        "{down_model:?}"
    );
    drop(closed);
}
