//! `spec.mcp_servers` of the manifest and of agent files: what loads, and one refusal per
//! rule naming the file and the field.

use super::fixtures::{AGENT, load, project_with, write};
use super::manifest::assert_invalid;
use crate::bundle::McpServerSource;

const SERVERS: &str = "  mcp_servers:
    - name: everything
      command: [node, /opt/mcp/everything/dist/index.js, stdio]
      env: { GREETING: HELLO_FROM_HOST }
    - name: remote-docs
      url: https://mcp.example.com/mcp
    - name: github
";

fn with_servers(servers: &str) -> tempfile::TempDir {
    project_with(|m| m.replace("  sandbox:\n", &format!("{servers}  sandbox:\n")))
}

fn agent_using(dir: &std::path::Path, names: &str) {
    write(
        dir,
        "agents/hello/agent.yaml",
        &format!("{AGENT}  mcp_servers: {names}\n"),
    );
}

#[test]
fn stdio_remote_and_operator_servers_load_and_agents_list_them() {
    let dir = with_servers(SERVERS);
    agent_using(dir.path(), "[everything, github]");
    let m = load(dir.path()).unwrap().manifest;
    let names: Vec<&str> = m.mcp_servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["everything", "remote-docs", "github"]);
    match &m.mcp_server("everything").unwrap().source {
        McpServerSource::Stdio { command, env } => {
            assert_eq!(command[0], "node");
            assert_eq!(
                env.get("GREETING").map(String::as_str),
                Some("HELLO_FROM_HOST")
            );
        }
        other => panic!("not stdio: {other:?}"),
    }
    assert_eq!(
        m.mcp_server("remote-docs").unwrap().source,
        McpServerSource::Url("https://mcp.example.com/mcp".into())
    );
    assert_eq!(
        m.mcp_server("github").unwrap().source,
        McpServerSource::Operator
    );
    assert_eq!(m.default_agent().mcp_servers, ["everything", "github"]);
}

#[test]
fn a_bundle_without_servers_has_none_and_its_agents_use_none() {
    let m = load(project_with(|m| m.to_owned()).path())
        .unwrap()
        .manifest;
    assert!(m.mcp_servers.is_empty());
    assert!(m.default_agent().mcp_servers.is_empty());
}

#[test]
fn malformed_server_entries_are_refused_naming_the_field() {
    for (servers, location, part) in [
        (
            "  mcp_servers:\n    - command: [node]\n",
            "odyssey.bundle.yaml:spec.mcp_servers[0].name",
            "missing",
        ),
        (
            "  mcp_servers:\n    - { name: a__b, command: [node] }\n",
            "odyssey.bundle.yaml:spec.mcp_servers[0].name",
            "`__`",
        ),
        (
            "  mcp_servers:\n    - { name: \"fs/x\", command: [node] }\n",
            "odyssey.bundle.yaml:spec.mcp_servers[0].name",
            "ASCII letters",
        ),
        (
            "  mcp_servers:\n    - { name: fs, command: [node] }\n    - { name: fs, command: [node] }\n",
            "odyssey.bundle.yaml:spec.mcp_servers[1].name",
            "duplicate MCP server name `fs`",
        ),
        (
            "  mcp_servers:\n    - { name: fs, command: [] }\n",
            "odyssey.bundle.yaml:spec.mcp_servers[0].command",
            "must not be empty",
        ),
        (
            "  mcp_servers:\n    - { name: fs, command: [\" \"] }\n",
            "odyssey.bundle.yaml:spec.mcp_servers[0].command[0]",
            "names no program",
        ),
        (
            "  mcp_servers:\n    - { name: fs, command: [node], url: \"https://a.example/mcp\" }\n",
            "odyssey.bundle.yaml:spec.mcp_servers[0]",
            "both `command` and `url`",
        ),
        (
            "  mcp_servers:\n    - { name: fs, command: [node], env: { \"A-B\": HOME } }\n",
            "odyssey.bundle.yaml:spec.mcp_servers[0].env.A-B",
            "not a valid environment variable name",
        ),
        (
            "  mcp_servers:\n    - { name: fs, url: \"ftp://a.example/mcp\" }\n",
            "odyssey.bundle.yaml:spec.mcp_servers[0].url",
            "http or https",
        ),
        (
            "  mcp_servers:\n    - { name: fs, url: \"https://a.example/mcp?token=abc\" }\n",
            "odyssey.bundle.yaml:spec.mcp_servers[0].url",
            "credentials",
        ),
        (
            "  mcp_servers:\n    - { name: fs, env: { A: HOME } }\n",
            "odyssey.bundle.yaml:spec.mcp_servers[0].env",
            "only a stdio server",
        ),
    ] {
        let dir = with_servers(servers);
        assert_invalid(dir.path(), location, &[part]);
    }
}

#[test]
fn an_agent_may_list_only_servers_the_manifest_declares() {
    let dir = with_servers(SERVERS);
    agent_using(dir.path(), "[everything, nope]");
    assert_invalid(
        dir.path(),
        "agents/hello/agent.yaml:spec.mcp_servers[1]",
        &[
            "`nope` is not declared",
            "declared: everything, remote-docs, github",
        ],
    );
    agent_using(dir.path(), "[github, github]");
    assert_invalid(
        dir.path(),
        "agents/hello/agent.yaml:spec.mcp_servers[1]",
        &["listed twice"],
    );
    let bare = project_with(|m| m.to_owned());
    agent_using(bare.path(), "[github]");
    assert_invalid(
        bare.path(),
        "agents/hello/agent.yaml:spec.mcp_servers[0]",
        &["has no spec.mcp_servers"],
    );
}
