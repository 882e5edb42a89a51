//! What the server can tell about itself: version, limits, sandbox capabilities and the
//! sessions it had to quarantine.

use std::time::SystemTime;

use super::OdysseyRuntime;
use crate::runtime::policy::SandboxMode;
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
    pub providers: Vec<&'static str>,
}

/// What the host offers for sandboxing, detected at startup.
#[derive(Clone, Debug, Default)]
pub struct SandboxCapabilities {
    pub bubblewrap: bool,
    pub landlock: bool,
    pub seccomp: bool,
    pub forced_mode: Option<SandboxMode>,
    pub danger_full_access_allowed: bool,
    pub notes: Vec<String>,
}

impl SandboxCapabilities {
    /// Probes the host: bubblewrap on PATH, Landlock among the active LSMs, seccomp
    /// filtering in the kernel.
    pub fn detect(forced_mode: Option<SandboxMode>, danger_full_access_allowed: bool) -> Self {
        let bubblewrap = std::env::var_os("PATH").is_some_and(|paths| {
            std::env::split_paths(&paths).any(|dir| dir.join("bwrap").is_file())
        });
        let landlock = std::fs::read_to_string("/sys/kernel/security/lsm")
            .is_ok_and(|lsms| lsms.split(',').any(|l| l.trim() == "landlock"));
        let seccomp = std::fs::read_to_string("/proc/self/status")
            .is_ok_and(|status| status.lines().any(|l| l.starts_with("Seccomp:")));
        let mut notes = Vec::new();
        if !bubblewrap {
            notes.push("bubblewrap (bwrap) not found: install the `bubblewrap` package".into());
        }
        if !landlock {
            notes.push("Landlock is not among the kernel's active security modules".into());
        }
        Self {
            bubblewrap,
            landlock,
            seccomp,
            forced_mode,
            danger_full_access_allowed,
            notes,
        }
    }
}

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
            sandbox: SandboxCapabilities::detect(
                config.sandbox_mode_override,
                config.allow_danger_full_access,
            ),
            quarantined: self.inner.sessions.quarantined(),
            providers: self.inner.providers.known_providers(),
        }
    }
}
