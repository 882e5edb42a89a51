//! A valid project to start each test from, and small helpers to bend it.

use std::fs;
use std::io::Write;
use std::path::Path;

use flate2::Compression;
use flate2::write::GzEncoder;
use tempfile::TempDir;

use crate::bundle::{ArchiveLimits, BundleError, LoadedBundle, load_project};

pub const MANIFEST: &str = r#"apiVersion: odyssey.ai/bundle.v1
kind: AgentBundle
metadata:
  name: hello
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
    - name: Read
      source: builtin
    - name: Bash
  sandbox:
    mode: read_only
    env:
      FOO: BAR
    permissions:
      filesystem:
        exec: [git]
        mounts:
          read: [/usr/share/dict]
          write: []
      network: []
    resources:
      cpu: 2
      memory_mb: 512
"#;

pub const AGENT: &str = r#"apiVersion: odyssey.ai/v1
kind: Agent
metadata:
  name: Hello agent
  version: 0.2.0
  description: Says hello.
spec:
  kind: prompt
  prompt: "You are a helpful agent."
  model:
    provider: openai
    name: gpt-4.1-mini
    config: { temperature: 0.2, stop: ["\n\n"] }
  tools:
    allow: [Read, "Bash(git status:*)"]
    ask: [Write]
    deny: []
"#;

pub const SKILL: &str =
    "---\nname: greet\ndescription: Greets people.\n---\n\n# Greet\n\nSay hi.\n";

pub const README: &str = "# Hello\n\nA bundle that says\nhello.\n\nMore text.\n";

/// Writes `text` at `rel` under `dir`, creating folders.
pub fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// A fresh, valid project directory.
pub fn project() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "odyssey.bundle.yaml", MANIFEST);
    write(dir.path(), "agents/hello/agent.yaml", AGENT);
    write(dir.path(), "skills/greet/SKILL.md", SKILL);
    write(dir.path(), "README.md", README);
    dir
}

/// A valid project whose manifest text went through `edit`.
pub fn project_with(edit: impl FnOnce(&str) -> String) -> TempDir {
    let dir = project();
    write(dir.path(), "odyssey.bundle.yaml", &edit(MANIFEST));
    dir
}

pub fn load(dir: &Path) -> Result<LoadedBundle, BundleError> {
    load_project(dir, &ArchiveLimits::default())
}

/// Loads `dir`, which must fail; returns the error.
pub fn load_err(dir: &Path) -> BundleError {
    match load(dir) {
        Ok(loaded) => panic!("expected an error, loaded {:?}", loaded.manifest.name),
        Err(e) => e,
    }
}

/// One raw tar entry for hand-made (possibly hostile) archives.
pub struct RawEntry<'a> {
    pub name: &'a [u8],
    pub kind: tar::EntryType,
    pub data: &'a [u8],
    pub link: &'a [u8],
}

impl<'a> RawEntry<'a> {
    pub fn file(name: &'a str, data: &'a [u8]) -> Self {
        Self {
            name: name.as_bytes(),
            kind: tar::EntryType::Regular,
            data,
            link: b"",
        }
    }
}

/// A tar stream written header by header, bypassing the tar crate's path checks.
pub fn raw_tar(entries: &[RawEntry<'_>]) -> Vec<u8> {
    let mut out = Vec::new();
    for entry in entries {
        let mut header = tar::Header::new_gnu();
        header.as_old_mut().name[..entry.name.len()].copy_from_slice(entry.name);
        header.as_old_mut().linkname[..entry.link.len()].copy_from_slice(entry.link);
        header.set_entry_type(entry.kind);
        header.set_size(entry.data.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(entry.data);
        out.resize(out.len().next_multiple_of(512), 0);
    }
    out.resize(out.len() + 1024, 0);
    out
}

pub fn gzip(bytes: &[u8], level: u32) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::new(level));
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// A gzip'd tar of every file under `dir`, in the given path order, with arbitrary metadata.
pub fn tar_dir(dir: &Path, paths: &[&str], level: u32) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for rel in paths {
        let data = fs::read(dir.join(rel)).unwrap();
        let mut header = tar::Header::new_ustar();
        header.set_size(data.len() as u64);
        header.set_mode(0o600);
        header.set_mtime(1_700_000_000);
        header.set_uid(1000);
        builder
            .append_data(&mut header, rel, data.as_slice())
            .unwrap();
    }
    gzip(&builder.into_inner().unwrap(), level)
}

/// The paths of the fixture project.
pub const PROJECT_FILES: [&str; 4] = [
    "odyssey.bundle.yaml",
    "agents/hello/agent.yaml",
    "skills/greet/SKILL.md",
    "README.md",
];
