//! Where a session's cell appears to its processes, and so to the model.
//!
//! In the restricted modes the cell is mounted at fixed places (`/workspace`, `/app`,
//! `/cache`, `/tmp`, and the run's own folder at `/run/odyssey`), so prompts, tool
//! arguments, results and events speak of those and the server's own layout (its home,
//! the session's id) never reaches the model. `danger_full_access` runs on the host, where
//! the cell's real paths are what processes see.

use std::path::{Path, PathBuf};

use super::types::CellPaths;
use crate::policy::SandboxMode;

/// The workspace inside the sandbox.
pub const WORKSPACE: &str = "/workspace";
/// The staged bundle inside the sandbox (read-only).
pub const APP: &str = "/app";
/// The cell's cache inside the sandbox.
pub const CACHE: &str = "/cache";
/// The cell's temporary folder inside the sandbox.
pub const TMP: &str = "/tmp";
/// The run's own folder (`XDG_RUNTIME_DIR`) inside the sandbox.
pub const RUN: &str = "/run/odyssey";

/// Places no mount may take, hold or lie in: the cell's, the run's and the kernel's.
pub const RESERVED: &[&str] = &[WORKSPACE, APP, CACHE, "/run", "/proc", "/dev"];

/// The cell's folders as the session's processes see them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessView {
    pub workspace: PathBuf,
    pub app: PathBuf,
    pub cache: PathBuf,
    pub tmp: PathBuf,
    /// The parent of each run's folder on the host (`danger_full_access`), or `None` when
    /// every run sees its own folder at [`RUN`].
    host_runs: Option<PathBuf>,
}

impl ProcessView {
    /// The view of `cell` in `mode`.
    pub fn new(mode: SandboxMode, cell: &CellPaths) -> Self {
        match mode {
            SandboxMode::DangerFullAccess => Self {
                workspace: cell.data.clone(),
                app: cell.app.clone(),
                cache: cell.cache.clone(),
                tmp: cell.tmp.clone(),
                host_runs: Some(cell.runs.clone()),
            },
            SandboxMode::ReadOnly | SandboxMode::WorkspaceWrite => Self {
                workspace: PathBuf::from(WORKSPACE),
                app: PathBuf::from(APP),
                cache: PathBuf::from(CACHE),
                tmp: PathBuf::from(TMP),
                host_runs: None,
            },
        }
    }

    /// The folder of run `exec_id` as its process sees it.
    pub fn run_dir(&self, exec_id: &str) -> PathBuf {
        match &self.host_runs {
            Some(runs) => runs.join(exec_id),
            None => PathBuf::from(RUN),
        }
    }

    /// `rel` (relative to the workspace, as turn contexts keep it) as processes see it.
    pub fn in_workspace(&self, rel: &Path) -> PathBuf {
        // `components` drops the `.` of the default working directory.
        self.workspace.join(rel).components().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restricted_modes_hide_the_host_layout() {
        let cell = CellPaths::under(PathBuf::from("/srv/home/sandbox/s1"));
        for mode in [SandboxMode::ReadOnly, SandboxMode::WorkspaceWrite] {
            let view = ProcessView::new(mode, &cell);
            assert_eq!(view.workspace, Path::new("/workspace"));
            assert_eq!(view.run_dir("e1"), Path::new("/run/odyssey"));
            assert_eq!(
                view.in_workspace(Path::new("./src")),
                Path::new("/workspace/src")
            );
        }
        let danger = ProcessView::new(SandboxMode::DangerFullAccess, &cell);
        assert_eq!(danger.workspace, cell.data);
        assert_eq!(danger.run_dir("e1"), cell.runs.join("e1"));
        assert_eq!(danger.in_workspace(Path::new(".")), cell.data);
    }
}
