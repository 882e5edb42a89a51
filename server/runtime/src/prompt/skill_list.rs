//! The skills list: each usable skill's name and description, never its body.

use super::limits::PromptLimits;
use crate::bundle::truncate;
use crate::skills::SkillCatalog;

/// Longest description shown, in characters; the `Skill` tool lists them whole.
const MAX_DESCRIPTION_CHARS: usize = 300;

/// The `# Skills` section, or `None` when the agent has no usable skill.
pub(super) fn section(
    skills: &SkillCatalog,
    skill_tool: bool,
    limits: &PromptLimits,
) -> Option<String> {
    let all = skills.skills();
    if all.is_empty() {
        return None;
    }
    let intro = if skill_tool {
        "Skills hold instructions for particular tasks. When a task matches one, load its \
         instructions with the `Skill` tool (by name) before you start. The user can also \
         ask for one by writing `$name`."
    } else {
        "Skills hold instructions for particular tasks. The user asks for one by writing \
         `$name`; its instructions are then added below."
    };
    let mut out = format!("# Skills\n\n{intro}\n");
    let mut used = 0;
    for (listed, skill) in all.iter().enumerate() {
        let description = truncate(
            skill
                .description
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
            MAX_DESCRIPTION_CHARS,
        );
        let line = if description.is_empty() {
            format!("\n- {}", skill.name)
        } else {
            format!("\n- {}: {description}", skill.name)
        };
        if used + line.len() > limits.skill_list_bytes {
            let more = all.len() - listed;
            out.push_str(&format!(
                "\n- [{more} more not listed: the list is capped at {} bytes{}]",
                limits.skill_list_bytes,
                if skill_tool {
                    "; call `Skill` without a name to list every skill"
                } else {
                    ""
                }
            ));
            break;
        }
        used += line.len();
        out.push_str(&line);
    }
    Some(out)
}
