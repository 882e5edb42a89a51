//! Resource limits of a sandboxed process: the operator's defaults, and what one request
//! narrows them to.

use super::types::ExecRequest;

/// One MiB, the unit of `resources.memory_mb`.
const MIB: u64 = 1024 * 1024;

/// Operator defaults for the rlimits set on every sandboxed process.
///
/// These are ceilings per process tree, not a memory or CPU controller: `RLIMIT_NPROC` is
/// what stops a fork bomb, `RLIMIT_AS` what stops a runaway allocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceLimits {
    /// `RLIMIT_NOFILE`: open file descriptors per process.
    pub open_files: u64,
    /// `RLIMIT_NPROC`: processes (and threads) of the sandbox user. It does not bind uid 0,
    /// which is why a root server runs sandboxes as an unprivileged uid.
    pub processes: u64,
    /// `RLIMIT_CPU` in seconds, unless the request sets its own.
    pub cpu_seconds: Option<u64>,
    /// `RLIMIT_AS` in bytes, unless the request sets `memory_mb`. Generous by default:
    /// language runtimes (V8, Go, the JVM) reserve large virtual ranges they never touch.
    pub address_space_bytes: Option<u64>,
}

impl Default for ResourceLimits {
    fn default() -> Self {
        Self {
            open_files: 1024,
            processes: 512,
            cpu_seconds: Some(600),
            address_space_bytes: Some(16 * 1024 * MIB),
        }
    }
}

/// The rlimits applied to one process: `None` leaves a limit as inherited.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RlimitValues {
    pub open_files: Option<u64>,
    pub processes: Option<u64>,
    pub cpu_seconds: Option<u64>,
    pub address_space_bytes: Option<u64>,
}

impl ResourceLimits {
    /// The limits for `request`: its CPU seconds and memory replace the defaults.
    pub(crate) fn for_request(&self, request: &ExecRequest) -> RlimitValues {
        RlimitValues {
            open_files: Some(self.open_files),
            processes: Some(self.processes),
            cpu_seconds: request.cpu_seconds.or(self.cpu_seconds),
            address_space_bytes: request
                .memory_mb
                .map(|mb| mb.saturating_mul(MIB))
                .or(self.address_space_bytes),
        }
    }
}
