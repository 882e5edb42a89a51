//! Putting the parts together, in the order documented on the module.

use std::path::Path;
use std::time::SystemTime;

use super::limits::PromptLimits;
use super::{bootstrap, header, requested, skill_list};
use crate::runtime::policy::SandboxMode;
use crate::runtime::skills::SkillCatalog;

/// Everything a turn's system prompt is made of.
#[derive(Clone, Copy, Debug)]
pub struct PromptParts<'a> {
    /// The agent's own prompt, from its agent file.
    pub agent_prompt: &'a str,
    /// The session workspace (the cell's `data/`), searched first for bootstrap files.
    pub workspace: &'a Path,
    /// The turn's working directory, as the model's tools see it.
    pub cwd: &'a Path,
    /// The installed bundle's folder, searched for bootstrap files the workspace lacks.
    pub bundle_root: &'a Path,
    pub sandbox_mode: SandboxMode,
    /// Long-term memory recalled for this session, one record each; shown when not empty.
    pub memory: &'a [String],
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
        bootstrap::section(parts.workspace, parts.bundle_root, limits),
        memory_section(parts.memory),
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

/// `# Memory`: one list item per record, continuation lines indented under it.
fn memory_section(memory: &[String]) -> Option<String> {
    let items: Vec<String> = memory
        .iter()
        .map(|record| record.trim())
        .filter(|record| !record.is_empty())
        .map(|record| format!("- {}", record.replace('\n', "\n  ")))
        .collect();
    if items.is_empty() {
        return None;
    }
    Some(format!(
        "# Memory\n\nNotes kept from earlier sessions with this agent:\n\n{}",
        items.join("\n")
    ))
}
