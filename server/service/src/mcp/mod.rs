//! odysseyd as an MCP server: every installed agent is a tool, served over streamable
//! HTTP at `/mcp` on the HTTP gateway, behind the gateway's token and Host checks.
//!
//! A call runs one turn of the agent (in a new session, or in the one its `session_id`
//! names) and answers with the turn's final text. Sessions are resources
//! (`odyssey://sessions/{id}/events`). Like `crate::grpc` and `crate::a2a`, an
//! adapter only: listing and running go through the runtime core.

mod agents;
mod handler;
mod resources;

use std::sync::Arc;

use odyssey_runtime::OdysseyRuntime;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

pub use handler::Agents;

/// Where the service is mounted on the gateway.
pub const PATH: &str = "/mcp";

/// The streamable-HTTP MCP service over `runtime`; its sessions end when `shutdown` fires.
///
/// The gateway's own middleware checks the token and the Host header (which also allows
/// the operator's host names), so rmcp's loopback-only Host list is turned off here.
pub fn service(
    runtime: OdysseyRuntime,
    shutdown: CancellationToken,
) -> StreamableHttpService<Agents, LocalSessionManager> {
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .with_cancellation_token(shutdown.child_token());
    StreamableHttpService::new(
        move || Ok(Agents::new(runtime.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}
