//! Tools the model can call. A turn gets a [`ToolSet`]: the tools its bundle declares,
//! filtered by the agent's rules. A call to a tool outside the set goes back to the
//! model as an error result and the turn goes on.

pub mod a2a;
pub mod bash;
pub mod builtin;
mod host;
pub mod images;
pub mod mcp;
pub mod person;

pub use host::HostTools;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use uuid::Uuid;

use tokio_util::sync::CancellationToken;

use crate::bundle::{InstalledBundle, ToolEntry};
use crate::policy::SandboxMode;
use crate::provider::ToolSpec;
use crate::sandbox::{CellPaths, DomainPolicy, ProcessView, Sandbox, SandboxUser};
use crate::session::EventSink;
use crate::skills::SkillCatalog;

/// What a tool call can see of its turn.
#[derive(Clone, Debug)]
pub struct ToolContext {
    pub session_id: Uuid,
    pub turn_id: Uuid,
    pub call_id: String,
    /// The session's ancestors when it is a sub-agent's, nearest first: a request for a
    /// person raised during a call (an MCP server's request for input) names them, as the
    /// gate's calls for approval do.
    pub parent_session_ids: Vec<Uuid>,
    /// The installed bundle (its files, manifest and skills).
    pub bundle: Arc<InstalledBundle>,
    /// The session's sandbox cell on the host; `cell.data` is the workspace.
    pub cell: CellPaths,
    /// Where the cell appears to the session's processes (`/workspace`, ...): the paths
    /// the model sees and gives.
    pub view: ProcessView,
    /// The turn's working directory as the session's processes see it: absolute, inside
    /// the workspace.
    pub cwd: PathBuf,
    pub mode: SandboxMode,
    /// Who file work on the session's behalf runs as.
    pub sandbox_user: SandboxUser,
    /// Host folders the bundle may read, and write, besides the cell (already checked
    /// against the operator's allowlist).
    pub mounts_read: Vec<PathBuf>,
    pub mounts_write: Vec<PathBuf>,
    /// The hosts processes may reach through the session's egress proxy (the bundle's
    /// list narrowed by the operator's); `None`: no network.
    pub network: Option<DomainPolicy>,
    /// Environment of sandboxed processes, mapped from the server's by the manifest.
    pub env: BTreeMap<String, String>,
    pub memory_mb: Option<u64>,
    /// The turn's events (plan updates, command output).
    pub events: EventSink,
    /// Fires when the turn is cancelled; long tools stop early.
    pub cancel: CancellationToken,
    /// Tells the turn while the call waits for a person (one per call).
    pub person: person::PersonWaits,
    /// The skills `Skill` lists and loads: the bundle's, then the server's.
    pub skills: Arc<SkillCatalog>,
}

/// What a tool answered. Errors are answers too: the model sees them and may retry.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolOutput {
    pub content: String,
    pub is_error: bool,
    /// Images for the model to look at, checked by [`images::check`]; `content`
    /// describes each of them.
    pub images: Vec<crate::chat::ChatImage>,
}

impl ToolOutput {
    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
            images: Vec::new(),
        }
    }

    pub fn error(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: true,
            images: Vec::new(),
        }
    }
}

/// A tool implementation.
pub trait Tool: Send + Sync + 'static {
    fn spec(&self) -> ToolSpec;

    /// Runs one call with arguments already parsed as JSON.
    fn call(
        &self,
        ctx: ToolContext,
        arguments: serde_json::Value,
    ) -> BoxFuture<'static, ToolOutput>;

    /// Whether the tool only looks: under the default policy such tools run without
    /// asking. Defaults to `false`, so a tool that forgets to say asks.
    fn read_only(&self) -> bool {
        false
    }

    /// Whether a call mostly waits on something outside this server (a remote agent, a
    /// human it asks): the turn gives its worker slot back meanwhile, as it does while it
    /// waits for an approval. Defaults to `false`.
    fn releases_worker(&self) -> bool {
        false
    }

    /// What permission rules of the form `Tool(pattern)` are matched against for this
    /// call (a path, a command, a pattern), or `None` when the arguments do not name one
    /// (only bare `Tool` rules apply then).
    fn permission_subject(
        &self,
        _ctx: &ToolContext,
        _arguments: &serde_json::Value,
    ) -> Option<String> {
        None
    }

    /// The arguments as they may be recorded in events: file bodies and secrets replaced
    /// by their size and digest. Defaults to the arguments unchanged.
    fn sanitize(&self, arguments: &serde_json::Value) -> serde_json::Value {
        arguments.clone()
    }
}

/// The tools one turn may call, by name.
#[derive(Clone, Default)]
pub struct ToolSet {
    tools: BTreeMap<String, Arc<dyn Tool>>,
    /// The tools of the agent's MCP servers, which a server may change during the turn.
    mcp: Option<Arc<mcp::TurnMcpTools>>,
}

impl ToolSet {
    /// The tools a bundle declares (`spec.tools`) that `offered` accepts: builtin ones,
    /// and `source: host` ones from `host`. Bash runs its commands through `sandbox`.
    pub fn for_bundle(
        declared: &[ToolEntry],
        sandbox: &Arc<Sandbox>,
        host: &HostTools,
        offered: impl Fn(&str) -> bool,
    ) -> Self {
        let mut set = Self::default();
        for entry in declared {
            if !offered(&entry.name) {
                continue;
            }
            let tool: Option<Arc<dyn Tool>> = match entry.name.as_str() {
                _ if entry.is_host() => host.get(&entry.name).cloned(),
                _ if !entry.is_builtin() => None,
                "Bash" => Some(Arc::new(bash::Bash::new(sandbox.clone()))),
                // Built by the turn, for agents that have delegates.
                builtin::AGENT_TOOL_NAME => continue,
                name => builtin::builtin(name),
            };
            match tool {
                Some(tool) => set.insert(tool),
                None => {
                    tracing::warn!(tool = %entry.name, source = %entry.source, "the bundle declares a tool this runtime does not have")
                }
            }
        }
        set
    }

    pub fn insert(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.spec().name, tool);
    }

    /// Adds the tools of the agent's MCP servers (kept apart: [`ToolSet::refresh_mcp`]
    /// lists them again when a server says they changed).
    pub fn set_mcp(&mut self, tools: Arc<mcp::TurnMcpTools>) {
        self.mcp = Some(tools);
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools
            .get(name)
            .cloned()
            .or_else(|| self.mcp.as_ref()?.get(name))
    }

    /// Every tool, sorted by name; the set's own first where an MCP tool has its name.
    fn all(&self) -> BTreeMap<String, Arc<dyn Tool>> {
        let mut all: BTreeMap<String, Arc<dyn Tool>> = BTreeMap::new();
        if let Some(mcp) = &self.mcp {
            all.extend(mcp.tools().into_iter().map(|t| (t.spec().name, t)));
        }
        all.extend(self.tools.iter().map(|(k, v)| (k.clone(), v.clone())));
        all
    }

    /// What the model is told it can call.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.all().values().map(|t| t.spec()).collect()
    }

    /// Lists the MCP servers' tools again when one said they changed; whether one did
    /// (the next model call is then told of the new list).
    pub async fn refresh_mcp(&self, ctx: &ToolContext, offered: impl Fn(&str) -> bool) -> bool {
        match &self.mcp {
            Some(mcp) => mcp.refresh(ctx, offered).await,
            None => false,
        }
    }

    /// Runs a call. Unknown tools and malformed arguments come back as error results.
    pub async fn call(&self, ctx: ToolContext, name: &str, arguments: &str) -> ToolOutput {
        let Some(tool) = self.get(name) else {
            let all = self.all();
            let known: Vec<&str> = all.keys().map(String::as_str).collect();
            return ToolOutput::error(if known.is_empty() {
                format!("tool `{name}` is not available: this agent has no tools")
            } else {
                format!(
                    "tool `{name}` is not available to this agent; available tools: {}",
                    known.join(", ")
                )
            });
        };
        let arguments = if arguments.trim().is_empty() {
            serde_json::Value::Object(Default::default())
        } else {
            match serde_json::from_str(arguments) {
                Ok(value) => value,
                Err(e) => {
                    return ToolOutput::error(format!(
                        "arguments of `{name}` are not valid JSON: {e}"
                    ));
                }
            }
        };
        tool.call(ctx, arguments).await
    }
}
