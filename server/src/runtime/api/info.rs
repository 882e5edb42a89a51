//! What the server can tell about itself: version, limits, sandbox capabilities and the
//! sessions it had to quarantine.

use std::time::SystemTime;

use super::OdysseyRuntime;
use crate::runtime::session::QuarantinedSession;

#[derive(Clone, Debug)]
pub struct ServerInfo {
    pub version: &'static str,
    pub started_at: SystemTime,
    pub worker_count: usize,
    pub queue_capacity: usize,
    pub max_turn_steps: u32,
    pub max_turn_duration_ms: u64,
    pub max_archive_bytes: u64,
    pub queued: usize,
    pub running: usize,
    pub sandbox: SandboxCapabilities,
    pub quarantined: Vec<QuarantinedSession>,
    pub providers: Vec<String>,
}

/// Detected by the sandbox module, which knows what its mechanisms need.
pub use crate::runtime::sandbox::SandboxCapabilities;

impl OdysseyRuntime {
    pub fn server_info(&self) -> ServerInfo {
        let config = &self.inner.config;
        let (_, running) = self.inner.executions.counts();
        let queued = self.inner.queue.queued();
        ServerInfo {
            version: env!("CARGO_PKG_VERSION"),
            started_at: self.inner.started_at,
            worker_count: config.worker_count,
            queue_capacity: config.queue_capacity,
            max_turn_steps: config.max_turn_steps,
            max_turn_duration_ms: config.max_turn_duration.as_millis() as u64,
            max_archive_bytes: config.archive_limits.max_total_bytes,
            queued,
            running,
            sandbox: self.inner.capabilities.clone(),
            quarantined: self.inner.sessions.quarantined(),
            providers: self.inner.providers.known_providers(),
        }
    }
}
