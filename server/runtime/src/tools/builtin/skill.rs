//! `Skill`: the agent's skills (its bundle's, then the server's), listed or loaded one at a
//! time, so the system prompt only carries their summaries and the model pulls in the
//! instructions it needs.

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::args::parse;
use super::{blocking, spec_of};
use crate::provider::ToolSpec;
use crate::skills::SkillCatalog;
use crate::tools::{Tool, ToolContext, ToolOutput};

pub(crate) const NAME: &str = "Skill";

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SkillArgs {
    /// The skill to load. Leave it out to list the skills.
    name: Option<String>,
}

/// Lists and loads the bundle's skills.
pub struct SkillTool;

impl Tool for SkillTool {
    fn spec(&self) -> ToolSpec {
        spec_of::<SkillArgs>(
            NAME,
            "Without `name`, list this agent's skills (name: what it is for). With `name`, \
             return that skill's instructions (its SKILL.md); follow them for the task at \
             hand.",
        )
    }

    fn read_only(&self) -> bool {
        true
    }

    fn permission_subject(&self, _ctx: &ToolContext, arguments: &Value) -> Option<String> {
        arguments
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    fn call(&self, ctx: ToolContext, arguments: Value) -> BoxFuture<'static, ToolOutput> {
        blocking(move || {
            let args: SkillArgs = parse(NAME, arguments)?;
            match args.name {
                None => Ok(ToolOutput::ok(listing(&ctx.skills))),
                Some(name) => load(&ctx.skills, &name),
            }
        })
    }
}

fn listing(skills: &SkillCatalog) -> String {
    let skills = skills.skills();
    if skills.is_empty() {
        return "this agent has no skills".to_owned();
    }
    let mut out = String::from("Skills (load one with Skill and its name):\n");
    for skill in skills {
        let line = match (&skill.error, skill.description.is_empty()) {
            (Some(error), _) => format!("- {} (its SKILL.md has a problem: {error})", skill.name),
            (None, true) => format!("- {}", skill.name),
            (None, false) => format!("- {}: {}", skill.name, skill.description),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

fn load(skills: &SkillCatalog, name: &str) -> Result<ToolOutput, ToolOutput> {
    if skills.get(name).is_none() {
        let names: Vec<&str> = skills.skills().iter().map(|s| s.name.as_str()).collect();
        return Err(ToolOutput::error(if names.is_empty() {
            format!("unknown skill `{name}`: this agent has no skills")
        } else {
            format!("unknown skill `{name}`; skills: {}", names.join(", "))
        }));
    }
    match skills.load(name) {
        Ok(body) if body.trim().is_empty() => Ok(ToolOutput::ok(format!(
            "skill `{name}` has no instructions"
        ))),
        Ok(body) => Ok(ToolOutput::ok(body)),
        Err(e) => {
            tracing::warn!(skill = name, error = %e, "reading a skill failed");
            Err(ToolOutput::error(format!(
                "cannot load skill `{name}`: {e}"
            )))
        }
    }
}
