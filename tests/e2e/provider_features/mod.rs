//! Provider features beyond the wire formats: record mode, custom providers and tools
//! registered from Rust, reachability of local model servers, thinking kept across a tool
//! call.

mod custom;
mod reachability;
mod recording;
mod thinking;

use crate::support::Project;

/// A one-agent project on `provider`/`model` with the model config given as YAML flow
/// (`{}` for none), the listed builtin tools declared and allowed.
pub fn project(name: &str, provider: &str, model: &str, config: &str, tools: &[&str]) -> Project {
    let project = Project::empty();
    let declared: String = tools
        .iter()
        .map(|t| format!("    - {{ name: {t}, source: builtin }}\n"))
        .collect();
    let tools_section = if tools.is_empty() {
        String::new()
    } else {
        format!("  tools:\n{declared}")
    };
    project.write(
        "odyssey.bundle.yaml",
        &format!(
            "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: {name}\n  version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      default: true\n{tools_section}  sandbox:\n    mode: workspace_write\n"
        ),
    );
    project.write(
        "agents/main/agent.yaml",
        &format!(
            "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\n  version: 0.1.0\nspec:\n  kind: prompt\n  prompt: You are a test agent.\n  model:\n    provider: {provider}\n    name: {model}\n    config: {config}\n  tools:\n    allow: [{}]\n",
            tools.join(", ")
        ),
    );
    project
}
