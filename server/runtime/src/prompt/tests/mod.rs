//! Prompt assembly on real folders: order, caps and notes, mentions, budgets.

mod bootstrap;
mod mentions;
mod order;
mod requested;

use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use tempfile::TempDir;

use crate::bundle::InstalledBundle;
use crate::policy::SandboxMode;
use crate::prompt::{PromptLimits, PromptParts, WorkspaceFiles, assemble};
use crate::sandbox::beneath::BeneathDir;
use crate::skills::SkillCatalog;
use crate::skills::tests::{bundle, skill_md, write};

/// 2023-11-14T22:13:20Z.
const NOW_SECS: u64 = 1_700_000_000;

/// A workspace and a bundle, on disk.
struct Setup {
    workspace: TempDir,
    _project: TempDir,
    bundle: InstalledBundle,
    catalog: SkillCatalog,
}

impl Setup {
    /// A bundle with `skills` (`(name, description, body)`) and `files` at its root.
    fn new(skills: &[(&str, &str, &str)], files: &[(&str, &str)]) -> Self {
        let project = tempfile::tempdir().unwrap();
        let texts: Vec<(String, String)> = skills
            .iter()
            .map(|(name, description, body)| {
                ((*name).to_owned(), skill_md(name, description, body))
            })
            .collect();
        let refs: Vec<(&str, &str)> = texts
            .iter()
            .map(|(n, t)| (n.as_str(), t.as_str()))
            .collect();
        let bundle = bundle(project.path(), &refs);
        for (name, text) in files {
            write(project.path(), name, text);
        }
        let catalog = SkillCatalog::new(&bundle, &[]);
        Self {
            workspace: tempfile::tempdir().unwrap(),
            _project: project,
            bundle,
            catalog,
        }
    }

    fn ws(&self) -> &Path {
        self.workspace.path()
    }

    fn put(&self, name: &str, text: &str) {
        write(self.ws(), name, text);
    }

    fn files(&self, limits: &PromptLimits) -> WorkspaceFiles {
        WorkspaceFiles::read(&BeneathDir::open(self.ws()).unwrap(), limits)
    }

    fn parts<'a>(
        &'a self,
        files: &'a WorkspaceFiles,
        input: &'a str,
        memory: Option<&'a str>,
    ) -> PromptParts<'a> {
        PromptParts {
            agent_prompt: "You help.",
            workspace: self.ws(),
            workspace_files: files,
            cwd: self.ws(),
            bundle_root: &self.bundle.root,
            sandbox_mode: SandboxMode::WorkspaceWrite,
            memory,
            skills: &self.catalog,
            skill_tool: true,
            input,
            now: UNIX_EPOCH + Duration::from_secs(NOW_SECS),
        }
    }

    fn prompt(&self, input: &str, limits: &PromptLimits) -> String {
        let files = self.files(limits);
        assemble(&self.parts(&files, input, None), limits)
    }
}

/// The text of the section whose heading is `heading`, up to the next `# ` heading.
fn section<'a>(prompt: &'a str, heading: &str) -> &'a str {
    let start = prompt
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("no {heading} in:\n{prompt}"))
        + 1;
    let rest = &prompt[start..];
    let end = rest[1..].find("\n# ").map_or(rest.len(), |i| i + 1);
    &rest[..end]
}
