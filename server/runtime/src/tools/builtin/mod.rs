//! The tools every runtime provides: file tools confined to the session's sandbox policy
//! (`Read`, `Write`, `Edit`, `LS`, `Glob`, `Grep`), `Skill` and `UpdatePlan`. The Bash
//! tool lives apart, with the OS sandbox it runs in.
//!
//! Each tool's arguments are one Rust struct that is both the JSON schema the model sees
//! and the validation of what it sends ([`args`]). Every file path goes through
//! [`paths`], the one place that decides what the session may reach.

pub(crate) mod args;
mod edit;
mod glob;
mod grep;
mod ls;
mod paths;
mod read;
mod redact;
mod skill;
mod text;
mod update_plan;
mod walk;
mod write;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use futures::future::{BoxFuture, FutureExt};
use schemars::JsonSchema;
use serde_json::Value;

use super::{Tool, ToolContext, ToolOutput};
use crate::provider::ToolSpec;

pub use edit::EditTool;
pub use glob::GlobTool;
pub use grep::GrepTool;
pub use ls::LsTool;
pub use paths::PathError;
pub use read::ReadTool;
pub(crate) use skill::NAME as SKILL_TOOL_NAME;
pub use skill::SkillTool;
pub use update_plan::UpdatePlanTool;
pub use write::WriteTool;

/// The names of the builtin tools this module provides, in the order they are listed.
pub const BUILTIN_NAMES: [&str; 8] = [
    read::NAME,
    write::NAME,
    edit::NAME,
    ls::NAME,
    glob::NAME,
    grep::NAME,
    skill::NAME,
    update_plan::NAME,
];

/// The builtin that starts sub-agents. It runs other agents' turns, so the turn builds it
/// (see `execution::subagent`), and only for an agent that has delegates.
pub const AGENT_TOOL_NAME: &str = "Agent";

/// Every builtin tool of this module.
pub fn builtin_tools() -> Vec<Arc<dyn Tool>> {
    BUILTIN_NAMES
        .iter()
        .filter_map(|name| builtin(name))
        .collect()
}

/// The builtin tool called `name` (names are case-sensitive, as in manifests), or `None`
/// when this module has no such tool.
pub fn builtin(name: &str) -> Option<Arc<dyn Tool>> {
    let tool: Arc<dyn Tool> = match name {
        read::NAME => Arc::new(ReadTool),
        write::NAME => Arc::new(WriteTool),
        edit::NAME => Arc::new(EditTool),
        ls::NAME => Arc::new(LsTool),
        glob::NAME => Arc::new(GlobTool),
        grep::NAME => Arc::new(GrepTool),
        skill::NAME => Arc::new(SkillTool),
        update_plan::NAME => Arc::new(UpdatePlanTool),
        _ => return None,
    };
    Some(tool)
}

/// A tool's spec with the schema derived from its argument struct.
pub(crate) fn spec_of<T: JsonSchema>(name: &str, description: &str) -> ToolSpec {
    ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        parameters: args::schema_of::<T>(),
    }
}

/// Runs file-system work on a blocking thread, so a slow disk or a large tree never holds
/// up the async workers. `Err` is an error answer, which lets tool bodies use `?`.
fn blocking<F>(work: F) -> BoxFuture<'static, ToolOutput>
where
    F: FnOnce() -> Result<ToolOutput, ToolOutput> + Send + 'static,
{
    async move {
        match tokio::task::spawn_blocking(work).await {
            Ok(Ok(output) | Err(output)) => output,
            Err(e) => {
                tracing::error!(error = %e, "a builtin tool's task failed");
                ToolOutput::error("the tool failed unexpectedly (an internal error)")
            }
        }
    }
    .boxed()
}

/// Runs a file tool's work with the session's roots open: off the async threads, and
/// with the sandbox user's rights once the roots are open (see
/// [`crate::sandbox::SandboxUser`]). `Err` is an error answer, which lets tool
/// bodies use `?`.
fn with_scope<F>(ctx: ToolContext, work: F) -> BoxFuture<'static, ToolOutput>
where
    F: FnOnce(&ToolContext, paths::Scope) -> Result<ToolOutput, ToolOutput> + Send + 'static,
{
    async move {
        let user = ctx.sandbox_user;
        let done = user
            .run(move |handoff| {
                let scope = paths::Scope::new(&ctx)?;
                if let Err(e) = handoff.assume() {
                    tracing::error!(error = %e, "taking the sandbox user's identity for a file tool");
                    return Err(ToolOutput::error(
                        "the tool failed unexpectedly (an internal error)",
                    ));
                }
                work(&ctx, scope)
            })
            .await;
        match done {
            Ok(Ok(output) | Err(output)) => output,
            Err(e) => {
                tracing::error!(error = %e, "a file tool's work failed");
                ToolOutput::error("the tool failed unexpectedly (an internal error)")
            }
        }
    }
    .boxed()
}

/// The permission subject of a tool whose `path` argument names a file or folder: see
/// [`paths::Scope::permission_subject`] (relative to the workspace root when inside it,
/// so a rule reads `Write(src/*)`, absolute otherwise). `None` when the call has no
/// string `path`, or the session's workspace is gone.
fn path_subject(ctx: &ToolContext, arguments: &Value) -> Option<String> {
    let given = arguments.get("path")?.as_str()?;
    Some(paths::Scope::new(ctx).ok()?.permission_subject(given))
}
