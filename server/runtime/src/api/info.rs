//! What the server can tell about itself: version, limits, sandbox capabilities and the
//! sessions it had to quarantine.

use std::sync::atomic::Ordering;
use std::time::SystemTime;

use super::OdysseyRuntime;
use crate::session::QuarantinedSession;

#[derive(Clone, Debug)]
pub struct ServerInfo {
    pub version: &'static str,
    pub started_at: SystemTime,
    pub worker_count: usize,
    pub queue_capacity: usize,
    pub max_turn_steps: u32,
    pub max_turn_duration_ms: u64,
    pub max_archive_bytes: u64,
    pub max_subagent_depth: u32,
    pub max_concurrent_subagents: u32,
    pub queued: usize,
    pub running: usize,
    pub sandbox: SandboxCapabilities,
    pub quarantined: Vec<QuarantinedSession>,
    pub providers: Vec<String>,
    pub activity: Activity,
    /// How workspaces are snapshotted at turn ends, and the bounds.
    pub snapshots: crate::snapshot::SnapshotSettings,
    /// The mechanism new sessions' workspaces get (chosen at start).
    pub snapshot_mechanism: crate::snapshot::SnapshotMechanism,
    /// Where sessions, events and bundles are kept: `files` (this server's home) or
    /// `postgres` (a database several replicas share).
    pub store: &'static str,
    /// This server's replica id, when its store is shared.
    pub replica_id: Option<String>,
}

/// What the runtime holds right now. Each figure returns to its idle level once the work
/// that raised it is over; one that keeps growing is a leak.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Activity {
    /// Tasks alive on the async runtime the server runs on (0 outside of one).
    pub tasks: usize,
    /// Sessions held open in memory.
    pub open_sessions: usize,
    /// Live event subscriptions.
    pub subscriptions: usize,
}

/// Detected by the sandbox module, which knows what its mechanisms need.
pub use crate::sandbox::SandboxCapabilities;

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
            max_subagent_depth: config.max_subagent_depth,
            max_concurrent_subagents: config.max_concurrent_subagents,
            queued,
            running,
            sandbox: self.inner.capabilities.clone(),
            quarantined: self.inner.records.quarantined(),
            providers: self.inner.providers.known_providers(),
            activity: self.activity(),
            snapshots: config.snapshots.clone(),
            snapshot_mechanism: self.inner.workspaces.mechanism(),
            store: self.inner.store_kind,
            replica_id: self.inner.replicas.as_ref().map(|r| r.replica_id()),
        }
    }

    /// The replicas sharing this server's store, as the store last saw them (empty for a
    /// store only this server uses).
    pub async fn replicas(&self) -> crate::Result<Vec<crate::store::ReplicaSeen>> {
        match &self.inner.replicas {
            Some(replicas) => Ok(replicas.replicas().await?),
            None => Ok(Vec::new()),
        }
    }

    /// What the runtime holds right now (see [`Activity`]).
    pub fn activity(&self) -> Activity {
        Activity {
            tasks: tokio::runtime::Handle::try_current()
                .map_or(0, |runtime| runtime.metrics().num_alive_tasks()),
            open_sessions: self.inner.sessions.open_count(),
            subscriptions: self.inner.subscriptions.load(Ordering::Relaxed),
        }
    }
}
