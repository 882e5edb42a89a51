//! Tools of MCP servers: agents call the tools of the servers their bundle declares
//! (`spec.mcp_servers`) or the operator offers (`[mcp.servers.NAME]`), through the
//! official SDK (`rmcp`).

mod connection;
pub mod names;
mod result;
mod servers;
mod settings;
mod tool;

pub use servers::McpServers;
pub use settings::{McpLaunch, McpSettings, OperatorMcpServer, ResolvedMcpServer};
pub use tool::McpTool;

use crate::error::{Result, RuntimeError};

/// Refuses what this server cannot run yet: remote (streamable HTTP) servers.
pub fn check_supported(servers: &[ResolvedMcpServer]) -> Result<()> {
    match servers
        .iter()
        .find(|s| matches!(s.launch, McpLaunch::Http { .. }))
    {
        Some(_) => Err(RuntimeError::Unimplemented(
            "remote MCP servers (`url`) are not supported by this server yet; use a stdio \
             server (`command`)",
        )),
        None => Ok(()),
    }
}
