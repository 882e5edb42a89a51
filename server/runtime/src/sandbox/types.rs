//! What the sandbox runs and what it answers, shared by the Bash tool and operator
//! commands.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use super::egress::NetworkGrant;
use crate::policy::SandboxMode;

/// The folders of one session's sandbox cell (`<home>/sandbox/<session>/`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CellPaths {
    pub root: PathBuf,
    /// The installed bundle, staged read-only.
    pub app: PathBuf,
    /// The workspace: the default working directory; writable unless `read_only`.
    pub data: PathBuf,
    pub cache: PathBuf,
    pub tmp: PathBuf,
    /// Per-execution scratch folders, `runs/<exec_id>/`.
    pub runs: PathBuf,
}

impl CellPaths {
    pub fn under(root: PathBuf) -> Self {
        Self {
            app: root.join("app"),
            data: root.join("data"),
            cache: root.join("cache"),
            tmp: root.join("tmp"),
            runs: root.join("runs"),
            root,
        }
    }

    /// The scratch folder of one execution, `runs/<exec_id>/`.
    pub fn run_dir(&self, exec_id: &str) -> PathBuf {
        self.runs.join(exec_id)
    }
}

/// One process to run in a session's cell.
#[derive(Clone, Debug)]
pub struct ExecRequest {
    /// Names the run's folder and its process record: letters, digits, `-`, `_`, `.`.
    pub exec_id: String,
    pub argv: Vec<String>,
    /// Absolute, inside the cell's visible folders (app, data, cache, tmp, this run's
    /// folder) or a mount.
    pub cwd: PathBuf,
    pub mode: SandboxMode,
    /// The environment inside the sandbox (resolved values), besides HOME/TMPDIR/XDG_*.
    pub env: BTreeMap<String, String>,
    /// `Some`: the process may reach the hosts of the grant, through the session's
    /// egress proxy. `None`: no network at all.
    pub network: Option<NetworkGrant>,
    pub mounts_read: Vec<PathBuf>,
    pub mounts_write: Vec<PathBuf>,
    /// The wall clock; zero takes the operator's default.
    pub timeout: Duration,
    /// Sets `RLIMIT_AS`; `None` keeps the operator's default.
    pub memory_mb: Option<u64>,
    pub cpu_seconds: Option<u64>,
}

/// How a process ended.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExecOutcome {
    /// The exit code, or 128 + signal number when killed by a signal.
    pub exit_code: i32,
    pub stdout: String,
    pub stderr: String,
    /// Output beyond the cap was dropped.
    pub truncated: bool,
    pub timed_out: bool,
    /// Killed because the caller cancelled (or the session was deleted).
    pub cancelled: bool,
    pub duration: Duration,
}
