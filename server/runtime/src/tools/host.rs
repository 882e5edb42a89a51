//! Tools the program embedding the runtime supplies. A bundle declares one with
//! `source: host`; the agent's permission rules, the session's approval policy and the
//! operator's hooks apply to it exactly as to a builtin tool, by its name.
//!
//! A host tool runs in the embedding process, not in the sandbox: it is the host's own
//! code, trusted as the host is. What it may touch is the host's decision; the
//! [`ToolContext`](super::ToolContext) it gets names the session's cell and workspace.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::Tool;
use super::builtin::{AGENT_TOOL_NAME, BUILTIN_NAMES};
use crate::bundle::ToolEntry;
use crate::error::{Result, RuntimeError};

/// The builtin that is not in [`BUILTIN_NAMES`] because it needs the sandbox to be built.
const BASH: &str = "Bash";

/// Host tools by name.
#[derive(Clone, Default)]
pub struct HostTools {
    by_name: BTreeMap<String, Arc<dyn Tool>>,
}

impl HostTools {
    /// Adds `tool` under the name its spec gives. Builtin names are refused: permission
    /// rules such as `Bash(git:*)` or `Write(src/*)` mean something particular for those
    /// tools, and a rule must not change meaning with the tool behind it.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<()> {
        let name = tool.spec().name;
        let refuse = |message: &str| RuntimeError::invalid(format!("tool `{name}`"), message);
        if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(refuse(
                "a tool name must be non-empty, without whitespace or control characters",
            ));
        }
        if name == BASH || name == AGENT_TOOL_NAME || BUILTIN_NAMES.contains(&name.as_str()) {
            return Err(refuse(
                "this is a builtin tool's name; register yours under another one",
            ));
        }
        if self.by_name.contains_key(&name) {
            return Err(refuse("a tool is already registered under this name"));
        }
        self.by_name.insert(name, tool);
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.by_name.get(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }

    /// Refuses a bundle that declares a host tool this runtime was not given: its agents
    /// were written expecting it, and quietly running without it would change what they do.
    pub fn check_declared(&self, bundle: &str, declared: &[ToolEntry]) -> Result<()> {
        let missing: Vec<&str> = declared
            .iter()
            .filter(|entry| entry.is_host() && self.get(&entry.name).is_none())
            .map(|entry| entry.name.as_str())
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let registered: Vec<&str> = self.names().collect();
        let registered = if registered.is_empty() {
            "none".to_owned()
        } else {
            registered.join(", ")
        };
        Err(RuntimeError::FailedPrecondition(format!(
            "bundle {bundle} declares host tool(s) {} that this runtime does not provide; \
             host tools registered here: {registered}",
            missing
                .iter()
                .map(|name| format!("`{name}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )))
    }
}
