//! Tools of MCP servers: agents call the tools of the servers their bundle declares
//! (`spec.mcp_servers`) or the operator offers (`[mcp.servers.NAME]`), through the
//! official SDK (`rmcp`): stdio servers run in the session's sandbox cell, remote ones
//! are reached over streamable HTTP.

mod connection;
mod elicit;
pub mod names;
mod result;
mod servers;
mod settings;
mod tool;
mod turn_tools;

pub use servers::{McpServers, ServerListing};
pub use settings::{McpLaunch, McpSettings, OperatorMcpServer, ResolvedMcpServer};
pub use tool::McpTool;
pub use turn_tools::TurnMcpTools;
