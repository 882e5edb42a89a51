//! Putting the parts together, in the order documented on the module.

use std::path::Path;
use std::time::SystemTime;

use super::bootstrap::WorkspaceFiles;
use super::limits::PromptLimits;
use super::{bootstrap, header, requested, skill_list};
use crate::policy::SandboxMode;
use crate::skills::SkillCatalog;

/// Everything a turn's system prompt is made of.
#[derive(Clone, Copy, Debug)]
pub struct PromptParts<'a> {
    /// The agent's own prompt, from its agent file.
    pub agent_prompt: &'a str,
    /// The workspace as the model's tools see it (`/workspace`).
    pub workspace: &'a Path,
    /// The bootstrap files found in the workspace, which replace the bundle's.
    pub workspace_files: &'a WorkspaceFiles,
    /// The turn's working directory, as the model's tools see it.
    pub cwd: &'a Path,
    /// The installed bundle's folder, searched for bootstrap files the workspace lacks.
    pub bundle_root: &'a Path,
    pub sandbox_mode: SandboxMode,
    /// The memory section recalled for this session (`# Memory`, rendered by
    /// `runtime::memory`), when there is one.
    pub memory: Option<&'a str>,
    pub skills: &'a SkillCatalog,
    /// Whether the model can call the `Skill` tool this turn.
    pub skill_tool: bool,
    /// The user's input, searched for `$skill-name` mentions.
    pub input: &'a str,
    pub now: SystemTime,
}

/// The system prompt. Reads bootstrap files and requested skills from disk: call it from
/// a blocking thread.
pub fn assemble(parts: &PromptParts<'_>, limits: &PromptLimits) -> String {
    let agent = parts.agent_prompt.trim();
    let sections = [
        (!agent.is_empty()).then(|| agent.to_owned()),
        bootstrap::section(parts.workspace_files, parts.bundle_root, limits),
        parts
            .memory
            .map(str::trim)
            .filter(|section| !section.is_empty())
            .map(str::to_owned),
        skill_list::section(parts.skills, parts.skill_tool, limits),
        Some(header::section(
            parts.now,
            parts.workspace,
            parts.cwd,
            parts.sandbox_mode,
        )),
        requested::section(parts.skills, parts.input, parts.skill_tool, limits),
    ];
    sections
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("\n\n")
}
