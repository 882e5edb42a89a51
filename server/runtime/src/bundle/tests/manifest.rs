//! Loading and validating projects: the happy path, the compatibility fields, and one test
//! per validation rule asserting the message names the file and the field.

use std::path::Path;

use super::fixtures::{AGENT, MANIFEST, load, load_err, project, project_with, write};
use crate::bundle::BundleError;
use crate::error::ErrorKind;
use crate::policy::SandboxMode;

#[test]
fn happy_path_loads_every_section() {
    let dir = project();
    let loaded = load(dir.path()).unwrap();
    let m = &loaded.manifest;
    assert_eq!(m.name, "hello");
    assert_eq!(m.version, semver::Version::new(0, 1, 0));
    assert_eq!(m.readme.as_deref(), Some("README.md"));
    assert_eq!(m.description, "A bundle that says hello.");
    assert_eq!(m.agents.len(), 1);
    let agent = m.default_agent();
    assert_eq!(agent.id, "hello");
    assert_eq!(agent.name, "Hello agent");
    assert_eq!(agent.version, "0.2.0");
    assert_eq!(agent.description, "Says hello.");
    assert_eq!(agent.prompt, "You are a helpful agent.");
    assert_eq!(agent.model.provider, "openai");
    assert_eq!(agent.model.name, "gpt-4.1-mini");
    assert_eq!(
        agent.model.config_value("temperature"),
        Some(&serde_json::json!(0.2))
    );
    assert_eq!(
        agent.model.config_value("stop"),
        Some(&serde_json::json!(["\n\n"]))
    );
    assert_eq!(agent.tools.allow, ["Read", "Bash(git status:*)"]);
    assert_eq!(agent.tools.ask, ["Write"]);
    assert!(agent.tools.deny.is_empty());
    assert!(m.agent("hello").is_some() && m.agent("nope").is_none());
    assert_eq!(m.skills.len(), 1);
    assert_eq!(m.skills[0].name, "greet");
    assert_eq!(m.skills[0].path, "skills/greet/SKILL.md");
    assert_eq!(m.skills[0].description, "Greets people.");
    assert_eq!(m.skills[0].error, None);
    let tools: Vec<_> = m
        .tools
        .iter()
        .map(|t| (t.name.as_str(), t.source.as_str()))
        .collect();
    assert_eq!(tools, [("Read", "builtin"), ("Bash", "builtin")]);
    let sb = &m.sandbox;
    assert_eq!(sb.mode, SandboxMode::ReadOnly);
    assert_eq!(sb.env.get("FOO").map(String::as_str), Some("BAR"));
    assert_eq!(sb.exec, ["git"]);
    assert_eq!(sb.mounts_read, ["/usr/share/dict"]);
    assert!(sb.mounts_write.is_empty() && sb.network.is_empty());
    assert_eq!((sb.cpu, sb.memory_mb), (Some(2), Some(512)));
    assert_eq!(loaded.file_count, 4);
    assert!(loaded.digest.starts_with("sha256:") && loaded.digest.len() == 71);
}

#[test]
fn optional_sections_take_defaults() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "odyssey.bundle.yaml",
        "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata: { name: min, version: 1.0.0 }\n\
         spec:\n  agents:\n    - { id: solo, spec: agent.yaml }\n",
    );
    write(dir.path(), "agent.yaml", AGENT);
    let m = load(dir.path()).unwrap().manifest;
    assert!(
        m.default_agent().is_default,
        "a single agent is the default without the flag"
    );
    assert_eq!(m.default_agent().id, "solo");
    assert!(m.skills.is_empty() && m.tools.is_empty() && m.readme.is_none());
    assert_eq!(m.description, "");
    assert_eq!(m.sandbox.mode, SandboxMode::WorkspaceWrite);
}

#[test]
fn compatibility_fields_load_unchanged() {
    let dir = project_with(|m| {
        m.replace("spec:\n  agents:", "spec:\n  abiVersion: v1\n  agents:")
            .replace("      default: true\n", "      default: true\n      module: agents/hello/agent.wasm\n")
            .replace(
                "    mode: read_only\n",
                "    mode: read_only\n    system_tools_mode: standard\n    system_tools: [git, rg]\n",
            )
            .replace("      network: []", "      network: [\"*\"]")
    });
    write(
        dir.path(),
        "agents/hello/agent.yaml",
        &AGENT.replace("spec:\n  kind", "spec:\n  abiVersion: v1\n  kind"),
    );
    let m = load(dir.path()).unwrap().manifest;
    assert_eq!(m.sandbox.system_tools_mode.as_deref(), Some("standard"));
    assert_eq!(m.sandbox.system_tools, ["git", "rg"]);
    assert_eq!(m.sandbox.network, ["*"]);
    assert_eq!(m.readme.as_deref(), Some("README.md"));
    assert_eq!(m.default_agent().model.provider, "openai");
}

/// Asserts loading fails as an invalid manifest whose message contains every `parts`.
pub(super) fn assert_invalid(dir: &Path, location: &str, parts: &[&str]) {
    let err = load_err(dir);
    let message = err.to_string();
    assert!(
        matches!(err, BundleError::InvalidManifest { .. }),
        "{message}"
    );
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert_eq!(err.reason(), "INVALID_MANIFEST");
    assert_eq!(err.field(), Some(location), "{message}");
    for part in parts {
        assert!(message.contains(part), "`{message}` lacks `{part}`");
    }
}

#[test]
fn unknown_fields_are_refused_with_line_and_column() {
    let dir = project_with(|m| {
        m.replace(
            "  readme: README.md\n",
            "  readme: README.md\n  colour: blue\n",
        )
    });
    assert_invalid(
        dir.path(),
        "odyssey.bundle.yaml",
        &["odyssey.bundle.yaml: ", "unknown field `colour`", "line 7"],
    );

    let dir = project();
    write(
        dir.path(),
        "agents/hello/agent.yaml",
        &AGENT.replace("  prompt:", "  temperature: 1\n  prompt:"),
    );
    assert_invalid(
        dir.path(),
        "agents/hello/agent.yaml",
        &["agents/hello/agent.yaml: ", "unknown field `temperature`"],
    );
}

#[test]
fn header_and_metadata_errors_name_the_field() {
    let cases: [(&str, &str, &str, &str); 8] = [
        (
            "apiVersion: odyssey.ai/bundle.v1",
            "apiVersion: odyssey.ai/bundle.v2",
            "apiVersion",
            "bundle.v2",
        ),
        ("kind: AgentBundle", "kind: Bundle", "kind", "`AgentBundle`"),
        ("  name: hello\n", "", "metadata.name", "missing"),
        (
            "  name: hello",
            "  name: Hello",
            "metadata.name",
            "[a-z0-9]",
        ),
        (
            "  name: hello",
            "  name: hello/world",
            "metadata.name",
            "[a-z0-9]",
        ),
        ("  version: 0.1.0\n", "", "metadata.version", "missing"),
        (
            "  version: 0.1.0",
            "  version: \"1.0\"",
            "metadata.version",
            "semantic version",
        ),
        (
            "  readme: README.md",
            "  readme: MISSING.md",
            "metadata.readme",
            "does not exist",
        ),
    ];
    for (from, to, field, part) in cases {
        let dir = project_with(|m| m.replace(from, to));
        assert_invalid(
            dir.path(),
            &format!("odyssey.bundle.yaml:{field}"),
            &[&format!("odyssey.bundle.yaml: {field}: "), part],
        );
    }
    let long = "n".repeat(65);
    let dir = project_with(|m| m.replace("  name: hello", &format!("  name: {long}")));
    assert_invalid(
        dir.path(),
        "odyssey.bundle.yaml:metadata.name",
        &["at most 64"],
    );
}

#[test]
fn agent_list_errors() {
    let second = "    - id: other\n      spec: agents/hello/agent.yaml\n";
    let cases: Vec<(String, &str, &str)> = vec![
        (MANIFEST.replace("  agents:\n    - id: hello\n      spec: agents/hello/agent.yaml\n      default: true\n", "  agents: []\n"), "spec.agents", "at least one agent"),
        (MANIFEST.replace("  skills:", &format!("{}  skills:", second.replace("other", "hello"))), "spec.agents[1].id", "duplicate agent id \"hello\""),
        (MANIFEST.replace("      default: true\n", &format!("      default: false\n{second}")), "spec.agents", "no default agent"),
        (MANIFEST.replace("  skills:", &format!("{second}      default: true\n  skills:")), "spec.agents[1].default", "several agents"),
        (MANIFEST.replace("- id: hello", "- id: Bad_Id"), "spec.agents[0].id", "[a-z0-9]"),
        (MANIFEST.replace("- id: hello\n      spec", "- spec"), "spec.agents[0].id", "missing"),
    ];
    for (manifest, field, part) in cases {
        let dir = project_with(|_| manifest.clone());
        assert_invalid(
            dir.path(),
            &format!("odyssey.bundle.yaml:{field}"),
            &[&format!("odyssey.bundle.yaml: {field}: "), part],
        );
    }
}

#[test]
fn paths_must_stay_inside_the_bundle() {
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "agent.yaml", AGENT);
    let outside_file = outside.path().join("agent.yaml");
    let cases: Vec<(String, &str)> = vec![
        (outside_file.display().to_string(), "relative path"),
        ("../agent.yaml".to_owned(), "`..`"),
        ("agents/../../agent.yaml".to_owned(), "`..`"),
        ("agents/missing.yaml".to_owned(), "does not exist"),
        (".hidden/agent.yaml".to_owned(), "excluded"),
        ("agents/escape.yaml".to_owned(), "resolves outside"),
        // Found by the `bundle_manifest` fuzz target: these were internal errors.
        ("agents/hello/agent.yaml/x".to_owned(), "does not exist"),
        (format!("agents/{}.yaml", "n".repeat(300)), "does not exist"),
        ("agents/\\0.yaml".to_owned(), "NUL character"),
    ];
    for (path, part) in cases {
        let dir = project_with(|m| {
            m.replace(
                "spec: agents/hello/agent.yaml",
                &format!("spec: \"{path}\""),
            )
        });
        std::os::unix::fs::symlink(&outside_file, dir.path().join("agents/escape.yaml")).unwrap();
        // Checked on the manifest alone, before the symlink rule of the file walk applies.
        let err = crate::bundle::project::read_manifest(dir.path()).unwrap_err();
        let message = err.to_string();
        assert_eq!(
            err.field(),
            Some("odyssey.bundle.yaml:spec.agents[0].spec"),
            "{message}"
        );
        assert!(message.contains(part), "`{message}` lacks `{part}`");
    }
    let dir = project_with(|m| m.replace("path: skills/greet", "path: skills/nothing"));
    assert_invalid(
        dir.path(),
        "odyssey.bundle.yaml:spec.skills[0].path",
        &["does not exist"],
    );
    let dir = project_with(|m| m.replace("readme: README.md", "readme: /etc/passwd"));
    assert_invalid(
        dir.path(),
        "odyssey.bundle.yaml:metadata.readme",
        &["relative path"],
    );
}

#[test]
fn skill_and_tool_list_errors() {
    let cases: Vec<(String, &str, &str)> = vec![
        (
            MANIFEST.replace(
                "      path: skills/greet\n",
                "      path: skills/greet\n    - name: greet\n      path: skills/greet/SKILL.md\n",
            ),
            "spec.skills[1].name",
            "duplicate skill name \"greet\"",
        ),
        (
            MANIFEST.replace("    - name: Bash\n", "    - name: Read\n"),
            "spec.tools[1].name",
            "duplicate tool name \"Read\"",
        ),
        (
            MANIFEST.replace("      source: builtin", "      source: mcp"),
            "spec.tools[0].source",
            "unknown tool source `mcp`; use `builtin`",
        ),
        (
            MANIFEST.replace("mode: read_only", "mode: yolo"),
            "spec.sandbox.mode",
            "unknown sandbox mode `yolo`",
        ),
        (
            MANIFEST.replace("FOO: BAR", "FOO: \"BAR=1\""),
            "spec.sandbox.env.FOO",
            "host variable",
        ),
        // Issue 11 item 3: network lists are host patterns, checked at build.
        (
            MANIFEST.replace(
                "      network: []",
                "      network: [\"api.github.com\", \"files.*.org\"]",
            ),
            "spec.sandbox.permissions.network[1]",
            "`files.*.org` is not a host pattern",
        ),
        (
            MANIFEST.replace("      network: []", "      network: [\"https://pypi.org\"]"),
            "spec.sandbox.permissions.network[0]",
            "is not a host pattern",
        ),
    ];
    for (manifest, field, part) in cases {
        let dir = project_with(|_| manifest.clone());
        assert_invalid(
            dir.path(),
            &format!("odyssey.bundle.yaml:{field}"),
            &[&format!("odyssey.bundle.yaml: {field}: "), part],
        );
    }
}

#[test]
fn agent_file_errors_name_the_agent_file() {
    let cases: [(&str, &str, &str, &str); 6] = [
        (
            "    provider: openai\n",
            "",
            "spec.model.provider",
            "missing",
        ),
        ("    name: gpt-4.1-mini\n", "", "spec.model.name", "missing"),
        (
            "  prompt: \"You are a helpful agent.\"\n",
            "",
            "spec.prompt",
            "missing",
        ),
        (
            "apiVersion: odyssey.ai/v1",
            "apiVersion: odyssey.ai/v2",
            "apiVersion",
            "odyssey.ai/v2",
        ),
        ("kind: Agent\n", "kind: Robot\n", "kind", "`Agent`"),
        (
            "  version: 0.2.0",
            "  version: two",
            "metadata.version",
            "semantic version",
        ),
    ];
    for (from, to, field, part) in cases {
        let dir = project();
        write(
            dir.path(),
            "agents/hello/agent.yaml",
            &AGENT.replace(from, to),
        );
        let location = format!("agents/hello/agent.yaml:{field}");
        assert_invalid(
            dir.path(),
            &location,
            &[&format!("agents/hello/agent.yaml: {field}: "), part],
        );
    }
}

/// Issue 12 item 2 and issue 21: a bundle never carries a credential in its model config,
/// at any depth, as a header or inside a URL; the refusal names the file and field, says
/// where keys go, and never quotes the value.
#[test]
fn credentials_in_the_model_config_are_refused_naming_the_field() {
    let cases = [
        (
            "{ temperature: 0.2, api_key: sk-bundle-1 }",
            "spec.model.config.api_key",
        ),
        ("{ API-Key: sk-bundle-1 }", "spec.model.config.API-Key"),
        (
            "{ extra_body: { auth: { token: sk-bundle-1 } } }",
            "spec.model.config.extra_body.auth.token",
        ),
        (
            "{ headers: { X-Team: sk-bundle-1 } }",
            "spec.model.config.headers.X-Team",
        ),
        (
            "{ base_url: \"https://u:sk-bundle-1@llm.example.com/v1\" }",
            "spec.model.config.base_url",
        ),
    ];
    for (config, field) in cases {
        let dir = project();
        write(
            dir.path(),
            "agents/hello/agent.yaml",
            &AGENT.replace("{ temperature: 0.2, stop: [\"\\n\\n\"] }", config),
        );
        let location = format!("agents/hello/agent.yaml:{field}");
        assert_invalid(
            dir.path(),
            &location,
            &["never carries credentials", "providers.<name>.api_key"],
        );
        let message = load_err(dir.path()).to_string();
        assert!(!message.contains("sk-bundle-1"), "{message}");
    }
    // An empty value, a credential's name, and similar names that are not keys load.
    let dir = project();
    write(
        dir.path(),
        "agents/hello/agent.yaml",
        &AGENT.replace(
            "{ temperature: 0.2, stop: [\"\\n\\n\"] }",
            "{ api_key: \"\", credential: team, max_tokens: 9, prompt_cache_key: x }",
        ),
    );
    load(dir.path()).expect("loads");
}

#[test]
fn wasm_agents_are_refused_naming_the_agent() {
    let dir = project();
    let wasm = "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata: { name: hello, version: 0.1.0 }\n\
                spec:\n  kind: wasm\n  module: agent.wasm\n  entrypoint: run\n";
    write(dir.path(), "agents/hello/agent.yaml", wasm);
    assert_invalid(
        dir.path(),
        "agents/hello/agent.yaml:spec.kind",
        &[
            "agent `hello` (agents/hello/agent.yaml): kind `wasm` is not supported; only `prompt` agents run on this server",
        ],
    );
}

#[test]
fn broken_yaml_keeps_the_parser_position() {
    let dir = project_with(|m| m.replace("kind: AgentBundle", "kind: [AgentBundle"));
    let err = load_err(dir.path());
    assert!(
        err.to_string().starts_with("odyssey.bundle.yaml: "),
        "{err}"
    );
    assert!(err.to_string().contains("line "), "{err}");

    let dir = tempfile::tempdir().unwrap();
    assert_invalid(dir.path(), "odyssey.bundle.yaml", &["not found"]);
}

#[test]
fn agent_memory_is_on_unless_the_agent_switches_it_off() {
    let dir = project();
    assert!(
        load(dir.path())
            .unwrap()
            .manifest
            .default_agent()
            .memory
            .enabled
    );
    for (memory, enabled) in [
        ("{ enabled: false }", false),
        ("{ enabled: true }", true),
        ("{}", true),
    ] {
        write(
            dir.path(),
            "agents/hello/agent.yaml",
            &format!("{AGENT}  memory: {memory}\n"),
        );
        let agent = load(dir.path()).unwrap().manifest.default_agent().clone();
        assert_eq!(agent.memory.enabled, enabled, "{memory}");
    }
    for (memory, part) in [
        ("{ enable: false }", "enable"),
        ("{ enabled: nope }", "boolean"),
    ] {
        write(
            dir.path(),
            "agents/hello/agent.yaml",
            &format!("{AGENT}  memory: {memory}\n"),
        );
        let err = load_err(dir.path());
        let message = err.to_string();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{message}");
        assert!(message.contains("agents/hello/agent.yaml"), "{message}");
        assert!(message.contains(part), "{message}");
    }
}

#[test]
fn a_folder_where_a_file_belongs_is_the_bundles_mistake() {
    let dir = project();
    std::fs::remove_file(dir.path().join("odyssey.bundle.yaml")).unwrap();
    std::fs::create_dir(dir.path().join("odyssey.bundle.yaml")).unwrap();
    assert_invalid(
        dir.path(),
        "odyssey.bundle.yaml",
        &["`odyssey.bundle.yaml` is not a regular file"],
    );

    let dir = project();
    std::fs::remove_file(dir.path().join("agents/hello/agent.yaml")).unwrap();
    std::fs::create_dir(dir.path().join("agents/hello/agent.yaml")).unwrap();
    let err = load_err(dir.path());
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(err.to_string().contains("agents/hello/agent.yaml"), "{err}");
}

/// Issue 12 item 6: integers in a model config stay integers (`max_tokens: 512` is not
/// `512.0` in any JSON made from it) when the agent file is read.
#[test]
fn integers_in_a_model_config_stay_integers() {
    let dir = project();
    write(
        dir.path(),
        "agents/hello/agent.yaml",
        &AGENT.replace(
            "config: { temperature: 0.2, stop: [\"\\n\\n\"] }",
            "config: { temperature: 0.2, max_tokens: 512 }",
        ),
    );
    let loaded = load(dir.path()).unwrap();
    let model = &loaded.manifest.default_agent().model;
    let config = model.config.as_ref().expect("config");
    assert_eq!(
        serde_json::Value::Object(config.clone()).to_string(),
        r#"{"max_tokens":512,"temperature":0.2}"#
    );
}
