//! The `init` template: a small, working `hello` project. It runs on the `replay` provider
//! (no API key, no network), so a new user sees a whole turn before configuring a model.

use std::fs;
use std::io::ErrorKind;
use std::path::Path;

use super::archive::ArchiveWriter;
use super::error::BundleError;
use super::names::check_name;

/// The one model answer the replay cassette holds.
const CASSETTE: &str = r#"{"text": "Hello! I am the hello agent. Edit agents/hello/agent.yaml to give me a real model."}
"#;

const AGENT: &str = r#"apiVersion: odyssey.ai/v1
kind: Agent
metadata:
  name: hello
  version: 0.1.0
  description: A friendly starter agent.
spec:
  kind: prompt
  prompt: |
    You are hello, a friendly and concise assistant.
    Greet the user, answer their questions, and use the tools you have when they help.
    When the user asks for a greeting, use the `greet` skill.
  # `replay` answers from cassettes/hello.jsonl; change this to a real provider and model,
  # e.g. { provider: openai, name: gpt-4.1-mini }.
  model:
    provider: replay
    name: hello
  tools:
    allow: [Read, LS, Glob, Grep, Skill, UpdatePlan]
    ask: [Write, Edit, Bash]
    deny: []
"#;

const SKILL: &str = r#"---
name: greet
description: Greet the user warmly and say what this agent can do.
---

# Greet

Say hello by name when you know it, in one or two sentences, then offer help.
"#;

/// The project's files, sorted by path, with the bundle `name` filled in.
fn files(name: &str) -> Vec<(&'static str, String)> {
    let manifest = format!(
        r#"apiVersion: odyssey.ai/bundle.v1
kind: AgentBundle
metadata:
  name: "{name}"
  version: 0.1.0
  readme: README.md
spec:
  agents:
    - id: hello
      spec: agents/hello/agent.yaml
      default: true
  skills:
    - name: greet
      path: skills/greet
  tools:
    - {{ name: Read, source: builtin }}
    - {{ name: LS, source: builtin }}
    - {{ name: Glob, source: builtin }}
    - {{ name: Grep, source: builtin }}
    - {{ name: Write, source: builtin }}
    - {{ name: Edit, source: builtin }}
    - {{ name: Bash, source: builtin }}
    - {{ name: Skill, source: builtin }}
    - {{ name: UpdatePlan, source: builtin }}
  sandbox:
    mode: workspace_write
    permissions:
      network: []
"#
    );
    let readme = format!(
        "# {name}\n\nA hello-world Odyssey agent bundle, made by `odyssey init`.\n\n\
         - `odyssey.bundle.yaml`: the manifest (agents, skills, tools, sandbox).\n\
         - `agents/hello/agent.yaml`: the agent's prompt, model and tool permissions.\n\
         - `skills/greet/SKILL.md`: a skill the agent can load.\n\
         - `cassettes/hello.jsonl`: the scripted answers of the `replay` model.\n"
    );
    vec![
        ("README.md", readme),
        ("agents/hello/agent.yaml", AGENT.to_owned()),
        ("cassettes/hello.jsonl", CASSETTE.to_owned()),
        ("odyssey.bundle.yaml", manifest),
        ("skills/greet/SKILL.md", SKILL.to_owned()),
    ]
}

/// The hello project as a tar+gzip project archive (InitBundle).
pub fn scaffold_archive(name: &str) -> Result<Vec<u8>, BundleError> {
    check_name("bundle name", name)?;
    let mut writer = ArchiveWriter::new(Vec::new());
    for (path, text) in files(name) {
        writer.add(path, text.len() as u64, false, text.as_bytes())?;
    }
    writer.finish()
}

/// Writes the hello project into `dir`, which must be new or empty.
pub fn write_scaffold(dir: &Path, name: &str) -> Result<(), BundleError> {
    check_name("bundle name", name)?;
    let ctx = |e| BundleError::io(format!("writing the project into {}", dir.display()), e);
    match fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(BundleError::DirectoryNotEmpty {
                    path: dir.to_path_buf(),
                });
            }
        }
        Err(e) if e.kind() == ErrorKind::NotFound => fs::create_dir_all(dir).map_err(ctx)?,
        Err(e) => return Err(ctx(e)),
    }
    for (path, text) in files(name) {
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent).map_err(ctx)?;
        }
        fs::write(&target, text).map_err(ctx)?;
    }
    Ok(())
}
