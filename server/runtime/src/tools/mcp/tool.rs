//! One tool of an MCP server, as the model and the permission rules see it.

use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::Tool as ListedTool;
use serde_json::Value;

use super::names::tool_name;
use super::servers::McpServers;
use super::settings::ResolvedMcpServer;
use crate::provider::ToolSpec;
use crate::tools::{Tool, ToolContext, ToolOutput};

/// `mcp__<server>__<tool>`: calls go to the session's running server.
#[derive(Debug)]
pub struct McpTool {
    servers: Arc<McpServers>,
    server: ResolvedMcpServer,
    /// The tool's own name, as the server knows it.
    tool: String,
    spec: ToolSpec,
}

impl McpTool {
    pub(super) fn new(
        servers: Arc<McpServers>,
        server: ResolvedMcpServer,
        listed: &ListedTool,
    ) -> Self {
        let name = tool_name(&server.name, &listed.name);
        let description = match listed.description.as_deref() {
            Some(text) if !text.trim().is_empty() => {
                format!(
                    "{text} (tool `{}` of MCP server `{}`)",
                    listed.name, server.name
                )
            }
            _ => format!("Tool `{}` of MCP server `{}`.", listed.name, server.name),
        };
        Self {
            spec: ToolSpec {
                name,
                description,
                parameters: Value::Object((*listed.input_schema).clone()),
            },
            tool: listed.name.to_string(),
            servers,
            server,
        }
    }
}

impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn call(&self, ctx: ToolContext, arguments: Value) -> BoxFuture<'static, ToolOutput> {
        let servers = self.servers.clone();
        let server = self.server.clone();
        let tool = self.tool.clone();
        Box::pin(async move { servers.call(&ctx, &server, &tool, arguments).await })
    }
}
