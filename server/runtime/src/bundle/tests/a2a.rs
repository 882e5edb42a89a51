//! `spec.a2a_agents` of the manifest and of agent files: what loads, and one refusal per
//! rule naming the file and the field.

use super::fixtures::{AGENT, load, project_with, write};
use super::manifest::assert_invalid;
use crate::bundle::A2aAgentSpec;

const AGENTS: &str = "  a2a_agents:
    - name: helper
      url: https://agents.example.com/helper
    - name: research
";

fn with_agents(agents: &str) -> tempfile::TempDir {
    project_with(|m| m.replace("  sandbox:\n", &format!("{agents}  sandbox:\n")))
}

fn agent_using(dir: &std::path::Path, names: &str) {
    write(
        dir,
        "agents/hello/agent.yaml",
        &format!("{AGENT}  a2a_agents: {names}\n"),
    );
}

#[test]
fn remote_and_operator_agents_load_and_agents_list_them() {
    let dir = with_agents(AGENTS);
    agent_using(dir.path(), "[research, helper]");
    let m = load(dir.path()).unwrap().manifest;
    assert_eq!(
        m.a2a_agents,
        [
            A2aAgentSpec {
                name: "helper".into(),
                url: Some("https://agents.example.com/helper".into()),
            },
            A2aAgentSpec {
                name: "research".into(),
                url: None,
            },
        ]
    );
    assert_eq!(m.default_agent().a2a_agents, ["research", "helper"]);

    let bare = load(project_with(|m| m.to_owned()).path())
        .unwrap()
        .manifest;
    assert!(bare.a2a_agents.is_empty());
    assert!(bare.default_agent().a2a_agents.is_empty());
}

#[test]
fn malformed_agent_entries_are_refused_naming_the_field() {
    for (agents, location, part) in [
        (
            "  a2a_agents:\n    - url: https://a.example/\n",
            "odyssey.bundle.yaml:spec.a2a_agents[0].name",
            "missing",
        ),
        (
            "  a2a_agents:\n    - { name: a__b }\n",
            "odyssey.bundle.yaml:spec.a2a_agents[0].name",
            "nor hold `__`",
        ),
        (
            "  a2a_agents:\n    - { name: \"a/b\" }\n",
            "odyssey.bundle.yaml:spec.a2a_agents[0].name",
            "only ASCII letters",
        ),
        (
            "  a2a_agents:\n    - { name: a }\n    - { name: a }\n",
            "odyssey.bundle.yaml:spec.a2a_agents[1].name",
            "duplicate",
        ),
        (
            "  a2a_agents:\n    - { name: a, url: \"ftp://a.example/\" }\n",
            "odyssey.bundle.yaml:spec.a2a_agents[0].url",
            "http or https",
        ),
        (
            "  a2a_agents:\n    - { name: a, url: \"https://a.example/?token=abc\" }\n",
            "odyssey.bundle.yaml:spec.a2a_agents[0].url",
            "carries credentials",
        ),
        (
            "  a2a_agents:\n    - { name: a, url: \"https://user:pw@a.example/\" }\n",
            "odyssey.bundle.yaml:spec.a2a_agents[0].url",
            "carries credentials",
        ),
    ] {
        let dir = with_agents(agents);
        assert_invalid(dir.path(), location, &[part]);
    }
}

#[test]
fn an_agent_may_list_only_remote_agents_the_manifest_declares() {
    let dir = with_agents(AGENTS);
    agent_using(dir.path(), "[helper, nope]");
    assert_invalid(
        dir.path(),
        "agents/hello/agent.yaml:spec.a2a_agents[1]",
        &["`nope` is not declared", "declared: helper, research"],
    );
    agent_using(dir.path(), "[helper, helper]");
    assert_invalid(
        dir.path(),
        "agents/hello/agent.yaml:spec.a2a_agents[1]",
        &["listed twice"],
    );
    let bare = project_with(|m| m.to_owned());
    agent_using(bare.path(), "[helper]");
    assert_invalid(
        bare.path(),
        "agents/hello/agent.yaml:spec.a2a_agents[0]",
        &["has no spec.a2a_agents"],
    );
}
