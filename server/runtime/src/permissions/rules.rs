//! An agent's permission rules: the `tools.allow` / `tools.ask` / `tools.deny` entries of
//! its agent file, parsed once when the agent is loaded so a malformed entry is reported to
//! the bundle author by name instead of silently never matching.
//!
//! An entry is `Tool` (every call of the tool) or `Tool(pattern)`. For `Bash` the pattern
//! lists the words of one command: `Bash(git status)` is exactly that command, and
//! `Bash(git status:*)` is any command starting with those words. For other tools it is a
//! glob over the call's permission subject (a path relative to the workspace): `*` within a
//! segment, `**` across segments.

use crate::bundle::ToolRules;

use super::error::RuleError;
use super::patterns::{CommandPattern, PathPattern};

/// The tool whose rule patterns are command patterns.
pub const BASH_TOOL: &str = "Bash";

/// Which list a rule comes from. Ordered from loosest to strictest, so that at equal
/// specificity the greater one wins (deny > ask > allow).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RuleAction {
    Allow,
    Ask,
    Deny,
}

impl RuleAction {
    /// The agent field the rule came from.
    pub fn field(self) -> &'static str {
        match self {
            Self::Allow => "tools.allow",
            Self::Ask => "tools.ask",
            Self::Deny => "tools.deny",
        }
    }
}

/// What a rule's pattern matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RulePattern {
    /// `Bash(...)`: the words of a simple command.
    Command(CommandPattern),
    /// Any other tool: its permission subject.
    Path(PathPattern),
}

/// One parsed entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub action: RuleAction,
    pub tool: String,
    /// None for a bare `Tool` entry.
    pub pattern: Option<RulePattern>,
    /// The entry as written, quoted in decisions' reasons.
    pub entry: String,
}

impl Rule {
    /// Parses one entry; `field` names it in errors (`tools.deny[2]`).
    pub fn parse(action: RuleAction, entry: &str, field: &str) -> Result<Self, RuleError> {
        let err = |message: &str| RuleError::malformed(field, entry, message);
        let text = entry.trim();
        let (tool, pattern) = match text.find('(') {
            None => (text, None),
            Some(open) => {
                let inner = text[open + 1..]
                    .strip_suffix(')')
                    .ok_or_else(|| err("a pattern must end with `)`: write `Tool(pattern)`"))?;
                (&text[..open], Some(inner.trim()))
            }
        };
        if tool.is_empty() {
            return Err(err("the entry names no tool"));
        }
        // `mcp__<server>__*`: every tool of one MCP server; `a2a__*`: every remote A2A
        // agent. The only wildcards a name takes.
        let name = match tool.strip_suffix('*') {
            Some(prefix) if is_mcp_server_prefix(prefix) || prefix == A2A_PREFIX => prefix,
            Some(_) => {
                return Err(err(
                    "tool names take no wildcards, except `mcp__<server>__*` (every tool of \
                     one MCP server) and `a2a__*` (every remote A2A agent); put patterns in \
                     parentheses",
                ));
            }
            None => tool,
        };
        if let Some(c) = name
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || "_-.".contains(*c)))
        {
            return Err(err(&format!(
                "`{c}` is not allowed in a tool name (tool names take no wildcards; put \
                 patterns in parentheses)"
            )));
        }
        let pattern = match pattern {
            None => None,
            Some("") => {
                return Err(err(&format!(
                    "the pattern is empty; write `{tool}` to match every call"
                )));
            }
            Some(p) if tool == BASH_TOOL => Some(RulePattern::Command(
                CommandPattern::parse(p).map_err(|m| err(&m))?,
            )),
            Some(p) => Some(RulePattern::Path(
                PathPattern::parse(p).map_err(|m| err(&m))?,
            )),
        };
        Ok(Self {
            action,
            tool: tool.to_owned(),
            pattern,
            entry: text.to_owned(),
        })
    }

    /// Whether the rule is about `tool`: its name, or, for `mcp__<server>__*`, any tool of
    /// that server.
    pub fn applies_to(&self, tool: &str) -> bool {
        match self.tool.strip_suffix('*') {
            Some(prefix) => tool.starts_with(prefix) && tool.len() > prefix.len(),
            None => self.tool == tool,
        }
    }

    /// How specific the rule is: any pattern beats a bare tool name, which beats a
    /// server's `mcp__<server>__*`; between patterns, the longer literal part wins.
    pub fn specificity(&self) -> (bool, usize) {
        match &self.pattern {
            None if self.tool.ends_with('*') => (false, 0),
            None => (false, 1),
            Some(RulePattern::Command(p)) => (true, p.literal_len()),
            Some(RulePattern::Path(p)) => (true, p.literal_len()),
        }
    }

    /// Orders rules for picking a winner: specificity first, then deny > ask > allow.
    pub(crate) fn rank(&self) -> ((bool, usize), RuleAction) {
        (self.specificity(), self.action)
    }
}

/// The parsed rules of one agent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PermissionRules {
    rules: Vec<Rule>,
}

impl PermissionRules {
    /// Parses the three lists; the first malformed entry is the error.
    pub fn parse(allow: &[String], ask: &[String], deny: &[String]) -> Result<Self, RuleError> {
        let mut rules = Vec::with_capacity(allow.len() + ask.len() + deny.len());
        for (action, entries) in [
            (RuleAction::Allow, allow),
            (RuleAction::Ask, ask),
            (RuleAction::Deny, deny),
        ] {
            for (i, entry) in entries.iter().enumerate() {
                let field = format!("{}[{i}]", action.field());
                rules.push(Rule::parse(action, entry, &field)?);
            }
        }
        Ok(Self { rules })
    }

    /// The rules of an agent as its bundle declares them.
    pub fn from_tool_rules(rules: &ToolRules) -> Result<Self, RuleError> {
        Self::parse(&rules.allow, &rules.ask, &rules.deny)
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The rules about one tool.
    pub(crate) fn for_tool<'a>(&'a self, tool: &'a str) -> impl Iterator<Item = &'a Rule> + 'a {
        self.rules.iter().filter(move |r| r.applies_to(tool))
    }
}

/// The prefix of remote A2A agents' tools, which `a2a__*` matches.
const A2A_PREFIX: &str = crate::tools::a2a::TOOL_PREFIX;

/// `mcp__<server>__` with a well-formed server name.
fn is_mcp_server_prefix(prefix: &str) -> bool {
    prefix
        .strip_prefix("mcp__")
        .and_then(|rest| rest.strip_suffix("__"))
        .is_some_and(|server| crate::bundle::mcp_server_name_problem(server).is_none())
}
