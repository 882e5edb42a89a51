//! Resource limits of a session's processes: the operator's defaults, what one request
//! narrows them to, and how they are enforced on this host.
//!
//! Where a cgroup per session is available ([`super::cgroup`]), memory and processes are
//! limited for the whole session. Otherwise they fall back to rlimits: memory per process
//! (`RLIMIT_AS`), and processes per command (`RLIMIT_NPROC`, which Linux 5.14 and later
//! counts per user namespace, and every restricted command has its own), with a cap on the
//! commands a session may run at once, so that a session's processes stay within
//! `processes` all the same.

use super::cgroup::GroupLimits;
use super::types::ExecRequest;

/// One MiB, the unit of `resources.memory_mb`.
const MIB: u64 = 1024 * 1024;

/// The operator's limits of sessions' processes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceLimits {
    /// `RLIMIT_NOFILE`: open file descriptors per process.
    pub open_files: u64,
    /// Processes (and threads) of one session: its cgroup's `pids.max`; without a pids
    /// cgroup, split among the `commands_per_session` commands it may run at once, each
    /// held by `RLIMIT_NPROC` (which does not bind uid 0: a root server runs sandboxes as an
    /// unprivileged uid).
    pub processes: u64,
    /// Without a pids cgroup: how many commands one session may run at once.
    pub commands_per_session: u64,
    /// The memory of one session whose bundle sets no `resources.memory_mb`, for all its
    /// processes together (its cgroup's limit); `None`: unlimited. Without a memory
    /// cgroup it is not enforced (`address_space_bytes` bounds each process instead).
    pub session_memory_bytes: Option<u64>,
    /// `RLIMIT_CPU` in seconds, unless the request sets its own.
    pub cpu_seconds: Option<u64>,
    /// `RLIMIT_AS` in bytes of each process. Generous by default: language runtimes (V8,
    /// Go, the JVM) reserve large virtual ranges they never touch. Without a memory cgroup
    /// a request's `memory_mb` replaces it, as the only memory limit there is.
    pub address_space_bytes: Option<u64>,
}

impl Default for ResourceLimits {
    fn default() -> Self {
        Self {
            open_files: 1024,
            processes: 512,
            commands_per_session: 4,
            session_memory_bytes: Some(4 * 1024 * MIB),
            cpu_seconds: Some(600),
            address_space_bytes: Some(16 * 1024 * MIB),
        }
    }
}

pub use odyssey_sandbox::RlimitValues;

/// Which of a session's limits a cgroup enforces on this host.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Enforcement {
    pub memory_cgroup: bool,
    pub pids_cgroup: bool,
}

impl ResourceLimits {
    /// The rlimits of one process of `request`: its CPU seconds replace the default; its
    /// memory is the session's cgroup's business when there is one, else each process's
    /// address space; processes are the cgroup's, else a share of the session's.
    pub(crate) fn for_request(&self, request: &ExecRequest, by: Enforcement) -> RlimitValues {
        let address_space = if by.memory_cgroup {
            self.address_space_bytes
        } else {
            request
                .memory_mb
                .map(|mb| mb.saturating_mul(MIB))
                .or(self.address_space_bytes)
        };
        RlimitValues {
            open_files: Some(self.open_files),
            processes: (!by.pids_cgroup).then(|| self.processes_per_command()),
            cpu_seconds: request.cpu_seconds.or(self.cpu_seconds),
            address_space_bytes: address_space,
        }
    }

    /// Without a pids cgroup: each command's share of the session's processes.
    pub(crate) fn processes_per_command(&self) -> u64 {
        (self.processes / self.commands_per_session.max(1)).max(1)
    }

    /// What the session's cgroup is held to while `request` runs.
    pub(crate) fn group(&self, request: &ExecRequest) -> GroupLimits {
        GroupLimits {
            memory_bytes: request
                .memory_mb
                .map(|mb| mb.saturating_mul(MIB))
                .or(self.session_memory_bytes),
            processes: self.processes,
        }
    }
}
