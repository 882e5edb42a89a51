//! The MCP tools of one turn: what the agent's servers offered when the turn was prepared,
//! listed again before a later model call of the turn once a server said its tools changed
//! (`notifications/tools/list_changed`).

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use super::servers::McpServers;
use super::settings::ResolvedMcpServer;
use super::tool::McpTool;
use crate::provider::ToolSpec;
use crate::tools::{Tool, ToolContext};

/// The tools of a turn's MCP servers, by the name the model calls them.
#[derive(Debug)]
pub struct TurnMcpTools {
    servers: Arc<McpServers>,
    resolved: Vec<ResolvedMcpServer>,
    tools: RwLock<BTreeMap<String, Arc<McpTool>>>,
}

impl TurnMcpTools {
    /// Lists the tools of `resolved` that `offered` accepts, starting the servers that are
    /// not running. A server that cannot be started offers no tools (logged).
    pub async fn list(
        servers: &Arc<McpServers>,
        ctx: &ToolContext,
        resolved: Vec<ResolvedMcpServer>,
        offered: impl Fn(&str) -> bool,
    ) -> Self {
        let mut tools = BTreeMap::new();
        for listing in servers.listings(ctx, &resolved, offered).await {
            match listing.tools {
                Ok(listed) => tools.extend(listed.into_iter().map(|t| (t.spec().name, t))),
                Err(message) => {
                    tracing::warn!(session = %ctx.session_id, server = %listing.server, "MCP server offers no tools this turn: {message}");
                }
            }
        }
        Self {
            servers: servers.clone(),
            resolved,
            tools: RwLock::new(tools),
        }
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        let tools = crate::sync::read(&self.tools);
        tools.get(name).map(|t| t.clone() as Arc<dyn Tool>)
    }

    /// The tools, sorted by name.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let tools = crate::sync::read(&self.tools);
        tools.values().map(|t| t.clone() as Arc<dyn Tool>).collect()
    }

    /// Lists again the tools of the servers that said theirs changed since they were
    /// listed; whether any did. A server that fails to list them offers none until it
    /// lists them again.
    pub async fn refresh(&self, ctx: &ToolContext, offered: impl Fn(&str) -> bool) -> bool {
        let changed = self
            .servers
            .changed_servers(ctx.session_id, &self.resolved)
            .await;
        if changed.is_empty() {
            return false;
        }
        let listings = self.servers.listings(ctx, &changed, offered).await;
        let mut tools = crate::sync::write(&self.tools);
        for listing in listings {
            tools.retain(|_, tool| tool.server_name() != listing.server);
            match listing.tools {
                Ok(listed) => {
                    tracing::debug!(session = %ctx.session_id, server = %listing.server, tools = listed.len(), "MCP server's tools listed again within the turn");
                    tools.extend(listed.into_iter().map(|t| (t.spec().name, t)));
                }
                Err(message) => {
                    tracing::warn!(session = %ctx.session_id, server = %listing.server, "MCP server offers no tools after its list changed: {message}");
                }
            }
        }
        true
    }

    /// What the model is told of the tools.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools().iter().map(|t| t.spec()).collect()
    }
}
