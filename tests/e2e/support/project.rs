//! Bundle projects written to real temporary folders, packed as tar + gzip.

use std::path::Path;

/// A bundle project on disk.
pub struct Project {
    pub dir: tempfile::TempDir,
}

impl Project {
    /// A project with one `replay` agent answering from the given cassette lines.
    pub fn replay(name: &str, cassette: &[&str]) -> Self {
        let project = Self::empty();
        project.write(
            "odyssey.bundle.yaml",
            &format!(
                "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: {name}\n  version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      default: true\n  sandbox:\n    mode: workspace_write\n"
            ),
        );
        project.write(
            "agents/main/agent.yaml",
            "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\n  version: 0.1.0\n  description: test agent\nspec:\n  kind: prompt\n  prompt: You are a test agent.\n  model:\n    provider: replay\n    name: main\n",
        );
        project.write(
            "cassettes/main.jsonl",
            &format!("{}\n", cassette.join("\n")),
        );
        project
    }

    /// A replay project whose bundle declares builtin `tools` and whose agent has the
    /// given `allow` / `ask` / `deny` rules (YAML flow lists, e.g. `[Read, "Bash(ls:*)"]`).
    pub fn with_tools(
        name: &str,
        cassette: &[&str],
        tools: &[&str],
        allow: &str,
        ask: &str,
        deny: &str,
    ) -> Self {
        let project = Self::replay(name, cassette);
        let tools: String = tools
            .iter()
            .map(|t| format!("    - {{ name: {t}, source: builtin }}\n"))
            .collect();
        project.write(
            "odyssey.bundle.yaml",
            &format!(
                "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: {name}\n  version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      default: true\n  tools:\n{tools}  sandbox:\n    mode: workspace_write\n"
            ),
        );
        project.write(
            "agents/main/agent.yaml",
            &format!("apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\n  version: 0.1.0\nspec:\n  kind: prompt\n  prompt: You are a test agent.\n  model:\n    provider: replay\n    name: main\n  tools:\n    allow: {allow}\n    ask: {ask}\n    deny: {deny}\n"),
        );
        project
    }

    /// A project whose agent talks to the `openai` provider.
    pub fn openai(name: &str) -> Self {
        let project = Self::replay(name, &[]);
        project.write(
            "agents/main/agent.yaml",
            "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\n  version: 0.1.0\n  description: test agent\nspec:\n  kind: prompt\n  prompt: You are a test agent.\n  model:\n    provider: openai\n    name: gpt-test\n",
        );
        project
    }

    pub fn empty() -> Self {
        Self {
            dir: tempfile::tempdir().expect("project dir"),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn write(&self, relative: &str, contents: &str) {
        let path = self.dir.path().join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(path, contents).expect("write project file");
    }

    /// The project as tar + gzip, files in sorted order.
    pub fn archive(&self) -> Vec<u8> {
        pack(self.dir.path())
    }
}

pub fn pack(dir: &Path) -> Vec<u8> {
    let encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut builder = tar::Builder::new(encoder);
    let mut files = Vec::new();
    collect(dir, dir, &mut files);
    files.sort();
    for relative in files {
        builder
            .append_path_with_name(dir.join(&relative), &relative)
            .expect("append file");
    }
    builder
        .into_inner()
        .and_then(|gz| gz.finish())
        .expect("finish archive")
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            collect(root, &path, out);
        } else {
            let relative = path.strip_prefix(root).expect("inside root");
            out.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
}
