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

/// Tools of one server offered at most: a server lists what it likes, and every tool
/// offered is sent to the model on every call of every turn.
pub const MAX_TOOLS_PER_SERVER: usize = 128;
/// A tool's description, in characters, as the model sees it (the rest is cut, marked).
pub const MAX_DESCRIPTION_CHARS: usize = 2048;
/// A tool's input schema, serialized; a larger one keeps its tool from being offered.
pub const MAX_SCHEMA_BYTES: usize = 32 * 1024;

/// The listed tools a server may offer: the first [`MAX_TOOLS_PER_SERVER`] whose schema
/// fits [`MAX_SCHEMA_BYTES`]. What is left out is logged, once per listing.
pub(super) fn offerable(server: &str, listed: Vec<ListedTool>) -> Vec<ListedTool> {
    let total = listed.len();
    let mut kept = Vec::with_capacity(total.min(MAX_TOOLS_PER_SERVER));
    for tool in listed {
        if kept.len() == MAX_TOOLS_PER_SERVER {
            tracing::warn!(
                server,
                total,
                kept = MAX_TOOLS_PER_SERVER,
                "an MCP server lists more tools than are offered; the rest are left out"
            );
            break;
        }
        let schema_bytes = serde_json::to_vec(&*tool.input_schema).map_or(usize::MAX, |s| s.len());
        if schema_bytes > MAX_SCHEMA_BYTES {
            tracing::warn!(server, tool = %crate::text::shorten(&tool.name, 64), schema_bytes, "an MCP tool's input schema is too large; the tool is not offered");
            continue;
        }
        kept.push(tool);
    }
    kept
}

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
                    "{} (tool `{}` of MCP server `{}`)",
                    crate::text::shorten(text, MAX_DESCRIPTION_CHARS),
                    listed.name,
                    server.name
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

impl McpTool {
    /// The server the tool belongs to.
    pub fn server_name(&self) -> &str {
        &self.server.name
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

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(name: &str, schema: serde_json::Map<String, Value>) -> ListedTool {
        ListedTool::new(name.to_owned(), "a tool", Arc::new(schema))
    }

    #[test]
    fn a_server_offers_a_bounded_number_of_tools_with_bounded_schemas() {
        let small = serde_json::Map::from_iter([("type".to_owned(), Value::from("object"))]);
        let mut huge = small.clone();
        huge.insert("padding".into(), Value::from("x".repeat(MAX_SCHEMA_BYTES)));
        let mut tools = vec![listed("huge", huge)];
        tools.extend(
            (0..MAX_TOOLS_PER_SERVER + 10).map(|i| listed(&format!("t{i}"), small.clone())),
        );
        let kept = offerable("many", tools);
        assert_eq!(kept.len(), MAX_TOOLS_PER_SERVER);
        assert_eq!(
            kept[0].name, "t0",
            "the tool with a huge schema is left out"
        );
        assert_eq!(
            kept[MAX_TOOLS_PER_SERVER - 1].name,
            format!("t{}", MAX_TOOLS_PER_SERVER - 1)
        );
    }
}
