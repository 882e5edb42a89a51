//! Skill instructions the user asked for with `$name`, added for the turn that asks.
//!
//! They go at the end of the system prompt, not into the conversation: the conversation
//! records the user's own words and is replayed on every later turn, so a body placed there
//! would be paid for again and again (and count against the history the session keeps),
//! while here it serves the turn that asked for it and is gone from the next. Being last
//! keeps every section above it a stable prefix that providers' prompt caches can reuse.

use super::limits::PromptLimits;
use super::mentions::mentioned_skills;
use crate::skills::SkillCatalog;

/// The `# Skills requested for this turn` section, or `None` when `input` mentions none.
pub(super) fn section(
    skills: &SkillCatalog,
    input: &str,
    skill_tool: bool,
    limits: &PromptLimits,
) -> Option<String> {
    let names = mentioned_skills(input, |name| skills.get(name).is_some());
    if names.is_empty() {
        return None;
    }
    let mut remaining = limits.skill_bodies_bytes;
    let mut out = String::from(
        "# Skills requested for this turn\n\nThe user asked for these skills by name: follow \
         their instructions in this turn.",
    );
    for name in names {
        out.push_str(&format!("\n\n## {name}\n\n"));
        match skills.load(&name) {
            Ok(body) => {
                let body = body.trim();
                if body.is_empty() {
                    out.push_str("[this skill has no instructions]");
                } else if body.len() <= remaining {
                    remaining -= body.len();
                    out.push_str(body);
                } else {
                    out.push_str(&over_budget(
                        &name,
                        body.len(),
                        remaining,
                        skill_tool,
                        limits,
                    ));
                }
            }
            Err(e) => {
                tracing::warn!(skill = %name, error = %e, "a requested skill cannot be loaded");
                out.push_str(&format!("[not included: {e}]"));
            }
        }
    }
    Some(out)
}

fn over_budget(
    name: &str,
    size: usize,
    remaining: usize,
    skill_tool: bool,
    limits: &PromptLimits,
) -> String {
    let why = format!(
        "[not included: its instructions are {size} bytes, over what is left ({remaining} \
         bytes) of the {} bytes allowed for requested skills",
        limits.skill_bodies_bytes
    );
    if skill_tool {
        format!("{why}. Load them with the `Skill` tool, name `{name}`.]")
    } else {
        format!("{why}, and this agent has no `Skill` tool to load them.]")
    }
}
