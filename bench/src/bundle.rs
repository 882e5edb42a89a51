//! The benchmark bundle: one agent on the `openai` provider (the loopback model server),
//! sandboxed `workspace_write`, with or without the `Bash` tool (allowed without asking),
//! and with or without the network.

use odyssey_client::{OdysseyClient, SessionOptions, pack_files, proto as pb};

use crate::error::{ClientContext, Result};

/// The model name the agent asks for; the loopback server answers any name.
pub const MODEL: &str = "gpt-loopback";

/// Which tools the agent has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tools {
    None,
    Bash,
}

/// Builds and installs the bundle; returns its reference.
pub async fn install(client: &OdysseyClient, tools: Tools) -> Result<String> {
    let name = match tools {
        Tools::None => "bench",
        Tools::Bash => "bench-bash",
    };
    install_as(client, name, tools, &[]).await
}

/// The bundle with Bash, asking for the network to `hosts` (host patterns).
pub async fn install_networked(client: &OdysseyClient, hosts: &[&str]) -> Result<String> {
    install_as(client, "bench-bash-net", Tools::Bash, hosts).await
}

async fn install_as(
    client: &OdysseyClient,
    name: &str,
    tools: Tools,
    hosts: &[&str],
) -> Result<String> {
    let (declared, rules) = match tools {
        Tools::None => ("", ""),
        Tools::Bash => (
            "  tools:\n    - { name: Bash, source: builtin }\n",
            "  tools:\n    allow: [Bash]\n",
        ),
    };
    let network = if hosts.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = hosts.iter().map(|h| format!("\"{h}\"")).collect();
        format!("    permissions:\n      network: [{}]\n", list.join(", "))
    };
    let manifest = format!(
        "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: {name}\n  \
         version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      \
         default: true\n{declared}  sandbox:\n    mode: workspace_write\n{network}"
    );
    let agent = format!(
        "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\n  version: 0.1.0\n  \
         description: benchmark agent\nspec:\n  kind: prompt\n  prompt: You are a benchmark \
         agent. Answer briefly.\n  model:\n    provider: openai\n    name: {MODEL}\n{rules}"
    );
    let archive = pack_files(&[
        ("odyssey.bundle.yaml", manifest.as_bytes()),
        ("agents/main/agent.yaml", agent.as_bytes()),
    ])
    .context("pack the benchmark bundle")?;
    client
        .build_bundle(archive, "", false)
        .await
        .context("install the benchmark bundle")?;
    Ok(name.to_owned())
}

/// A new session on the bundle, sandboxed `workspace_write`.
pub async fn session(client: &OdysseyClient, bundle: &str) -> Result<String> {
    let options = SessionOptions {
        sandbox_mode: Some(pb::SandboxMode::WorkspaceWrite),
        ..SessionOptions::default()
    };
    let session = client
        .create_session(bundle, options)
        .await
        .context("create a session")?;
    Ok(session.id)
}
