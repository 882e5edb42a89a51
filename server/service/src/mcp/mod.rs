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
use std::time::Duration;

use odyssey_runtime::OdysseyRuntime;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

pub use handler::Agents;

/// Where the service is mounted on the gateway.
pub const PATH: &str = "/mcp";

/// An MCP session with no message either way for this long is closed. rmcp's default (5
/// minutes) would close the session of a call whose turn waits on an approval (10 minutes
/// by default) without sending progress.
pub const SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(3600);

/// The streamable-HTTP MCP service over `runtime`; its sessions end when `shutdown` fires
/// (their calls' turns then go on, as the runtime's shutdown decides).
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
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(SESSION_IDLE_TIMEOUT);
    StreamableHttpService::new(
        move || Ok(Agents::new(runtime.clone(), shutdown.clone())),
        Arc::new(sessions),
        config,
    )
}
