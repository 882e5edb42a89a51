//! Tools of MCP servers: agents call the tools of the servers their bundle declares
//! (`spec.mcp_servers`) or the operator offers (`[mcp.servers.NAME]`), through the
//! official SDK (`rmcp`).

mod settings;

pub use settings::{McpLaunch, McpSettings, OperatorMcpServer, ResolvedMcpServer};

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
