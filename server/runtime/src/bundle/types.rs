//! The validated, in-memory view of a bundle that the rest of the runtime works with.
//! These types hold no YAML details: the `manifest` and `agent` modules parse the files and
//! the `project` module builds these from them after every check has passed.

use std::collections::BTreeMap;
use std::fmt;

use crate::model::ModelSpec;
use crate::policy::SandboxMode;

/// The identity of an installed (or built) bundle. `digest` (`sha256:<64 hex>`) names the
/// exact content; `namespace/name@version` is what people type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BundleId {
    pub namespace: String,
    pub name: String,
    pub version: semver::Version,
    pub digest: String,
}

impl fmt::Display for BundleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}@{}", self.namespace, self.name, self.version)
    }
}

/// One agent of a bundle, ready to run.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentDefinition {
    pub id: String,
    /// `metadata.name` of the agent file, or the id when the file has none.
    pub name: String,
    /// `metadata.version` of the agent file, or the bundle's version when it has none.
    pub version: String,
    pub description: String,
    pub prompt: String,
    pub model: ModelSpec,
    pub tools: ToolRules,
    pub memory: AgentMemory,
    /// The bundle's MCP servers this agent uses (`spec.mcp_servers` of its agent.yaml),
    /// each declared in the manifest.
    pub mcp_servers: Vec<String>,
    /// The bundle's remote A2A agents this agent delegates to (`spec.a2a_agents` of its
    /// agent.yaml), each declared in the manifest; each is a tool `a2a__<name>`.
    pub a2a_agents: Vec<String>,
    /// The agents of the same bundle this agent may start as sub-agents with the `Agent`
    /// tool (`spec.delegates` of its agent.yaml), each checked at build to be another
    /// agent of the bundle.
    pub delegates: Vec<String>,
    pub is_default: bool,
}

/// An agent's memory settings (`spec.memory` in its agent.yaml).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentMemory {
    /// Whether long-term memory records this agent's turns and recalls them into its new
    /// sessions (`enabled: false` switches it off; the operator can switch it off for all).
    pub enabled: bool,
}

impl Default for AgentMemory {
    fn default() -> Self {
        Self { enabled: true }
    }
}

/// Permission rules of an agent: tool names or patterns such as `Bash(git status:*)`.
/// Interpreting them is the policy module's job; here they are kept exactly as written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolRules {
    pub allow: Vec<String>,
    pub ask: Vec<String>,
    pub deny: Vec<String>,
}

/// A skill as listed to the model and to clients. A skill whose SKILL.md cannot be parsed is
/// still listed, with `error` set, so the author sees the problem instead of a missing skill.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillSummary {
    pub name: String,
    pub description: String,
    /// Path of the SKILL.md file, relative to the bundle root, with forward slashes.
    pub path: String,
    pub error: Option<String>,
}

/// A tool the bundle makes available: `source` is [`ToolEntry::BUILTIN`] (one of the
/// runtime's own tools) or [`ToolEntry::HOST`] (registered by the program embedding the
/// runtime, checked when a session is created).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolEntry {
    pub name: String,
    pub source: String,
}

impl ToolEntry {
    pub const BUILTIN: &'static str = "builtin";
    pub const HOST: &'static str = "host";

    pub fn is_builtin(&self) -> bool {
        self.source == Self::BUILTIN
    }

    pub fn is_host(&self) -> bool {
        self.source == Self::HOST
    }
}

/// An MCP server a bundle declares. What it asks for is a request: the operator's
/// configuration decides at session creation whether it is allowed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpServerSpec {
    /// Letters, digits, `-` and single `_`s: it becomes part of tool names
    /// (`mcp__<name>__<tool>`).
    pub name: String,
    pub source: McpServerSource,
}

/// Where an MCP server comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum McpServerSource {
    /// A program speaking MCP on its stdin and stdout, run in the session's sandbox cell.
    /// `env` maps variables inside the sandbox to host variables, exactly as
    /// `spec.sandbox.env` does (and within the same operator allowlist).
    Stdio {
        command: Vec<String>,
        env: BTreeMap<String, String>,
    },
    /// A remote server speaking streamable HTTP; the operator must allow the URL.
    Url(String),
    /// The operator's server of the same name (`[mcp.servers.NAME]`).
    Operator,
}

/// What the bundle asks of the sandbox. These are requests: the operator's configuration
/// can only narrow them (see DESIGN.md, "Safe by default").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SandboxSpec {
    pub mode: SandboxMode,
    /// Variable inside the sandbox -> name of the host variable its value comes from.
    pub env: BTreeMap<String, String>,
    /// The hosts processes may reach through the egress proxy, as written (checked host
    /// patterns: `api.github.com`, `*.pypi.org`, `*`); `[]` = no network.
    pub network: Vec<String>,
    pub mounts_read: Vec<String>,
    pub mounts_write: Vec<String>,
    pub exec: Vec<String>,
    pub cpu: Option<u32>,
    pub memory_mb: Option<u64>,
    pub system_tools_mode: Option<String>,
    pub system_tools: Vec<String>,
}

impl Default for SandboxSpec {
    fn default() -> Self {
        Self {
            mode: SandboxMode::WorkspaceWrite,
            env: BTreeMap::new(),
            network: Vec::new(),
            mounts_read: Vec::new(),
            mounts_write: Vec::new(),
            exec: Vec::new(),
            cpu: None,
            memory_mb: None,
            system_tools_mode: None,
            system_tools: Vec::new(),
        }
    }
}

/// A validated bundle manifest with its agents loaded. Invariant (checked at load): at least
/// one agent, and exactly one of them has `is_default`.
#[derive(Clone, Debug, PartialEq)]
pub struct BundleManifest {
    pub name: String,
    pub version: semver::Version,
    /// Path of the readme inside the bundle, when the manifest names one.
    pub readme: Option<String>,
    /// The readme's first paragraph, or empty.
    pub description: String,
    pub agents: Vec<AgentDefinition>,
    pub skills: Vec<SkillSummary>,
    pub tools: Vec<ToolEntry>,
    pub sandbox: SandboxSpec,
    /// The MCP servers the agents may use (`spec.mcp_servers`).
    pub mcp_servers: Vec<McpServerSpec>,
    /// The remote A2A agents the agents may delegate to (`spec.a2a_agents`).
    pub a2a_agents: Vec<A2aAgentSpec>,
}

/// A remote A2A agent a bundle declares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct A2aAgentSpec {
    /// Letters, digits, `-` and single `_`s: it becomes a tool name (`a2a__<name>`).
    pub name: String,
    /// Where the agent is (its card is read from there); the operator must allow it
    /// (`a2a.allowed_urls`). `None`: the operator's agent of this name
    /// (`[a2a.agents.NAME]`), which alone may carry credentials.
    pub url: Option<String>,
}

impl BundleManifest {
    /// The agent a session uses when none is named.
    ///
    /// # Panics
    /// If `agents` is empty, which no loaded manifest is (loading refuses it).
    pub fn default_agent(&self) -> &AgentDefinition {
        // Validation guarantees one default; the fallback keeps this total without panicking.
        self.agents
            .iter()
            .find(|a| a.is_default)
            .unwrap_or_else(|| &self.agents[0])
    }

    pub fn agent(&self, id: &str) -> Option<&AgentDefinition> {
        self.agents.iter().find(|a| a.id == id)
    }

    pub fn mcp_server(&self, name: &str) -> Option<&McpServerSpec> {
        self.mcp_servers.iter().find(|s| s.name == name)
    }

    pub fn a2a_agent(&self, name: &str) -> Option<&A2aAgentSpec> {
        self.a2a_agents.iter().find(|a| a.name == name)
    }

    pub fn skill(&self, name: &str) -> Option<&SkillSummary> {
        self.skills.iter().find(|s| s.name == name)
    }
}
