//! What the operator configures about the sandbox, and where its two programs (bubblewrap
//! and the `odyssey-sandbox` helper) are found.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::egress::EgressSettings;
use super::limits::ResourceLimits;

/// The environment variable naming the helper binary when the configuration does not.
pub const HELPER_ENV: &str = "ODYSSEY_SANDBOX_HELPER";
/// The helper's file name, looked for beside the running executable.
pub const HELPER_NAME: &str = "odyssey-sandbox";
const BWRAP_NAME: &str = "bwrap";
/// The conventional user and group `nobody`/`nogroup`.
const NOBODY: u32 = 65534;

/// Operator settings of the sandbox.
#[derive(Clone, Debug)]
pub struct SandboxSettings {
    /// The bubblewrap binary; `None` looks for `bwrap` on `PATH`.
    pub bwrap: Option<PathBuf>,
    /// The helper binary; `None` tries `$ODYSSEY_SANDBOX_HELPER`, then beside the running
    /// executable, then its parent folder (tests run from `target/debug/deps`).
    pub helper: Option<PathBuf>,
    /// The user and group sandboxed processes run as when the server runs as root
    /// (`RLIMIT_NPROC` does not bind uid 0). Ignored otherwise: an unprivileged server
    /// cannot change its uid, and its own uid is already unprivileged.
    pub sandbox_uid: u32,
    pub sandbox_gid: u32,
    /// The wall clock of a request that sets none.
    pub default_timeout: Duration,
    /// Bytes kept (and streamed) per output stream; the rest is drained and dropped.
    pub max_output_bytes: usize,
    pub limits: ResourceLimits,
    /// Refuse to run restricted commands when the kernel cannot enforce Landlock. Turning it
    /// off is the documented weaker fallback: bubblewrap and seccomp still apply.
    pub require_landlock: bool,
    /// The address rules of networked sandboxes' egress proxies.
    pub egress: EgressSettings,
    /// Limit each session's memory and processes with a cgroup of its own when the host
    /// delegates one to the server (see `cgroup`); off, or where none is available, the
    /// rlimit fallback of [`ResourceLimits`] applies.
    pub cgroups: bool,
    /// The server's home. Command mounts may not reach into it (nor into the folder the
    /// cells lie in, whose parent is the home unless the cells live in a workspace root
    /// apart); the records of this server's running process groups and its sessions'
    /// cgroups are kept under its `sandbox/` folder, this server's own, even when the
    /// cells lie in a workspace root other servers share. `None`: the cells' folder's
    /// parent is taken as the home.
    pub server_home: Option<PathBuf>,
}

impl Default for SandboxSettings {
    fn default() -> Self {
        Self {
            bwrap: None,
            helper: None,
            sandbox_uid: NOBODY,
            sandbox_gid: NOBODY,
            default_timeout: Duration::from_secs(120),
            max_output_bytes: 1024 * 1024,
            limits: ResourceLimits::default(),
            require_landlock: true,
            egress: EgressSettings::default(),
            cgroups: true,
            server_home: None,
        }
    }
}

impl SandboxSettings {
    /// The bubblewrap binary to run: the configured one if it exists, else `bwrap` on `PATH`.
    pub(crate) fn resolve_bwrap(&self) -> Result<PathBuf, String> {
        if let Some(path) = &self.bwrap {
            return if path.is_file() {
                Ok(path.clone())
            } else {
                Err(path.display().to_string())
            };
        }
        find_on_path(BWRAP_NAME).ok_or_else(|| format!("`{BWRAP_NAME}` on PATH"))
    }

    /// The helper binary, in the documented order of places.
    pub(crate) fn resolve_helper(&self) -> Result<PathBuf, String> {
        let mut candidates = Vec::new();
        if let Some(path) = &self.helper {
            candidates.push(path.clone());
        } else {
            if let Some(path) = std::env::var_os(HELPER_ENV) {
                candidates.push(PathBuf::from(path));
            }
            if let Ok(exe) = std::env::current_exe()
                && let Some(dir) = exe.parent()
            {
                candidates.push(dir.join(HELPER_NAME));
                if let Some(parent) = dir.parent() {
                    candidates.push(parent.join(HELPER_NAME));
                }
            }
        }
        candidates
            .iter()
            .find(|path| path.is_file())
            .cloned()
            .ok_or_else(|| {
                candidates
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            })
    }

    /// The uid and gid processes are started as, when the server has to drop root for them.
    pub fn sandbox_owner(&self) -> Option<(u32, u32)> {
        let root = rustix::process::geteuid().is_root();
        (root && self.sandbox_uid != 0).then_some((self.sandbox_uid, self.sandbox_gid))
    }
}

/// The first `name` on `PATH` that is a file.
pub(crate) fn find_on_path(name: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(name))
        .find(|candidate| is_file(candidate))
}

fn is_file(path: &Path) -> bool {
    path.metadata().is_ok_and(|m| m.is_file())
}
