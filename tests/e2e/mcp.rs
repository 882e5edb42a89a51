//! MCP servers of bundles: what CreateSession refuses, naming the operator's setting.

use odyssey_api::v1 as pb;
use tonic::Code;

use crate::support::{Project, TestServer, error_reason};

/// A replay project declaring `servers` (YAML lines under `spec.mcp_servers`) and an
/// agent using `uses`.
fn with_servers(name: &str, servers: &str, uses: &str) -> Project {
    let project = Project::replay(name, &[]);
    project.write(
        "odyssey.bundle.yaml",
        &format!(
            "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: {name}\n  version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      default: true\n  mcp_servers:\n{servers}  sandbox:\n    mode: workspace_write\n"
        ),
    );
    project.write(
        "agents/main/agent.yaml",
        &format!("apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\n  version: 0.1.0\nspec:\n  kind: prompt\n  prompt: You are a test agent.\n  model:\n    provider: replay\n    name: main\n  mcp_servers: {uses}\n"),
    );
    project
}

async fn refusal(server: &TestServer, bundle: &str) -> tonic::Status {
    server
        .sessions()
        .create_session(pb::CreateSessionRequest {
            bundle_reference: bundle.into(),
            ..Default::default()
        })
        .await
        .expect_err("refused")
}

#[tokio::test]
async fn servers_and_urls_the_operator_has_not_allowed_are_refused_at_create_session() {
    let server = TestServer::start().await;
    let cases = [
        ("named", "    - name: github\n", "mcp.servers.github"),
        (
            "remote",
            "    - { name: docs, url: \"https://mcp.example.com/mcp\" }\n",
            "mcp.allowed_urls",
        ),
        (
            "hostenv",
            "    - { name: fs, command: [node, server.js], env: { TOKEN: ODYSSEY_MCP_TEST_SECRET } }\n",
            "sandbox.env_allow",
        ),
    ];
    for (name, servers, setting) in cases {
        server
            .install(&with_servers(
                name,
                servers,
                &format!("[{}]", servers_names(servers)),
            ))
            .await;
        let status = refusal(&server, name).await;
        assert_eq!(status.code(), Code::PermissionDenied, "{name}: {status:?}");
        assert!(
            status.message().contains(setting),
            "{name}: names {setting}: {}",
            status.message()
        );
        assert_eq!(
            error_reason(&status).as_deref(),
            Some("PERMISSION_DENIED"),
            "{name}"
        );
    }
    // An agent without servers is not concerned by its bundle's.
    server
        .install(&with_servers("unused", "    - name: github\n", "[]"))
        .await;
    server.create_session("unused").await;
}

fn servers_names(servers: &str) -> String {
    servers
        .lines()
        .filter_map(|line| {
            let rest = line.split("name: ").nth(1)?;
            Some(rest.split([',', ' ', '}']).next()?.to_owned())
        })
        .collect::<Vec<_>>()
        .join(", ")
}
