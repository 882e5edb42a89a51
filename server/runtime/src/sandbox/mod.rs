//! The OS sandbox: session cells, and processes run under bubblewrap with Landlock and
//! seccomp applied inside by the `odyssey-sandbox` helper.
//!
//! One [`Sandbox`] serves the whole server. It prepares cells ([`Sandbox::prepare_cell`]),
//! runs processes in them ([`Sandbox::run`]) and removes them with their processes
//! ([`Sandbox::remove_cell`]); at startup [`Sandbox::kill_leftovers`] ends what a previous
//! server left running.
//!
//! Restricted modes (`read_only`, `workspace_write`) layer three mechanisms, each of which
//! would stop an escape on its own: bubblewrap (namespaces, an empty root with read-only
//! system folders, a network namespace of its own), Landlock (path rules inside that
//! view), seccomp (kernel interfaces). A networked process reaches the outside only
//! through its session's egress proxy ([`egress`]). `danger_full_access` runs on the
//! host with only the process group, the wall clock, the output cap, the rlimits and the
//! session's cgroup.
//!
//! Every mode's processes enter their session's cgroup where the host offers one
//! ([`cgroup`]), which limits memory and processes for the session as a whole; elsewhere
//! the rlimit fallback of [`limits`] applies.

pub mod beneath;
mod bwrap;
mod capabilities;
mod cell;
mod cgroup;
pub mod egress;
mod env;
mod error;
/// The helper binary's side, and the protocol both sides share.
pub use odyssey_sandbox as helper;
mod identity;
mod leftovers;
mod lifeline;
pub(crate) mod limits;
mod output;
pub mod paths;
mod process;
mod runner;
mod running;
mod service;
mod settings;
mod types;
mod view;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

pub use bwrap::{
    Bind, BwrapPlan, ETC_ENTRIES, HELPER_MOUNT, SYSTEM_DIRS, SystemEntry, SystemLayout,
};
pub use capabilities::{
    SandboxCapabilities, SessionLimitsInfo, landlock_abi, seccomp_filters_available,
};
pub(crate) use cell::remove_tree;
pub use cell::{APP_DIGEST_FILE, AppSource};
pub use cgroup::CgroupVersion;
pub use egress::{
    ConnectionReporter, DomainList, DomainPattern, DomainPolicy, EgressSettings, NetworkGrant,
};
pub use env::SANDBOX_PATH;
pub use error::{BUBBLEWRAP_INSTALL_HINT, SandboxError};
pub use identity::{Handoff, IdentityError, SandboxUser};
pub use leftovers::{LeftoverReport, RUNNING_DIR};
pub use limits::{ResourceLimits, RlimitValues};
pub use service::{ServiceLog, ServiceProcess};
pub use settings::{HELPER_ENV, HELPER_NAME, SandboxSettings};
pub use types::{CellPaths, ExecOutcome, ExecRequest};
pub use view::{APP, CACHE, ProcessView, RUN, TMP, WORKSPACE};

use cgroup::{Controller, SessionCgroups};
use egress::EgressProxies;
use limits::Enforcement;
use running::RunningSet;

use crate::metrics::SandboxMetrics;

/// How long `remove_cell` waits for the cell's killed processes to be reaped.
const CELL_STOP_WAIT: Duration = Duration::from_secs(5);

/// Runs processes in session cells.
#[derive(Debug)]
pub struct Sandbox {
    settings: SandboxSettings,
    /// The bubblewrap binary, or where it was looked for.
    bwrap: Result<std::path::PathBuf, String>,
    /// The helper binary, or where it was looked for.
    helper: Result<std::path::PathBuf, String>,
    layout: SystemLayout,
    running: Arc<RunningSet>,
    /// The sessions' cgroups, where the host offers them.
    cgroups: SessionCgroups,
    /// Counts every process run, by mode and outcome.
    metrics: Arc<SandboxMetrics>,
    /// Ends every sandbox when the server ends; `None` if the pipe could not be made.
    lifeline: Option<lifeline::Lifeline>,
    /// The egress proxies of sessions with networked processes.
    egress: EgressProxies,
}

impl Sandbox {
    /// Locates bubblewrap and the helper and reads the host's system layout. Missing
    /// programs are not an error here: restricted runs report them, `danger_full_access`
    /// does not need them.
    pub fn new(settings: SandboxSettings) -> Self {
        Self {
            bwrap: settings.resolve_bwrap(),
            helper: settings.resolve_helper(),
            layout: SystemLayout::detect(),
            running: Arc::new(RunningSet::default()),
            cgroups: SessionCgroups::new(settings.cgroups),
            metrics: Arc::default(),
            lifeline: lifeline::Lifeline::new()
                .inspect_err(|e| {
                    tracing::warn!(error = %e, "no lifeline pipe: a sandboxed command may outlive a killed server");
                })
                .ok(),
            egress: EgressProxies::new(&settings.egress),
            settings,
        }
    }

    /// Records runs in `metrics` (the runtime's) instead of counters of its own.
    pub fn with_metrics(mut self, metrics: Arc<SandboxMetrics>) -> Self {
        self.metrics = metrics;
        self
    }

    pub fn settings(&self) -> &SandboxSettings {
        &self.settings
    }

    /// What this host offers, for the startup log and `GetServerInfo` (the operator's
    /// forced mode and danger setting are the caller's to fill in).
    pub fn capabilities(&self) -> SandboxCapabilities {
        SandboxCapabilities::probe(&self.settings, &self.cgroups)
    }

    /// Which session limits a cgroup enforces here.
    fn enforcement(&self) -> Enforcement {
        Enforcement {
            memory_cgroup: self.cgroups.version_of(Controller::Memory).is_some(),
            pids_cgroup: self.cgroups.version_of(Controller::Pids).is_some(),
        }
    }

    /// The uid/gid sandboxed processes run as when the server is root (`None` otherwise).
    /// Files the server writes into a workspace on a process's behalf should belong to it.
    pub fn sandbox_owner(&self) -> Option<(u32, u32)> {
        self.settings.sandbox_owner()
    }

    /// Who file work on a session's behalf runs as (see [`SandboxUser`]).
    pub fn user(&self) -> SandboxUser {
        SandboxUser::new(self.sandbox_owner())
    }

    /// Creates or reuses the cell of `session_id` under `sandbox_root`
    /// (`<home>/sandbox`), staging `app` when its digest changed.
    pub fn prepare_cell(
        &self,
        sandbox_root: &Path,
        session_id: Uuid,
        app: AppSource<'_>,
    ) -> Result<CellPaths, SandboxError> {
        cell::prepare(sandbox_root, session_id, app, self.sandbox_owner())
    }

    /// The cgroup folders of the cell's session that exist now (one per hierarchy; none
    /// before it ran a process, or where no cgroup is used).
    pub fn session_cgroups(&self, cell: &CellPaths) -> Vec<std::path::PathBuf> {
        match self.session_of(cell) {
            Some((sandbox_root, session)) => self.cgroups.dirs(&sandbox_root, &session),
            None => Vec::new(),
        }
    }

    /// Kills the cell's running processes, waits for them, stops its egress proxy and
    /// removes the cell and its session's cgroup.
    pub async fn remove_cell(&self, cell: &CellPaths) -> Result<(), SandboxError> {
        self.kill_cell_processes(cell).await;
        let root = cell
            .root
            .canonicalize()
            .unwrap_or_else(|_| cell.root.clone());
        self.egress.close(&root).await;
        if let Some((sandbox_root, session)) = self.session_of(cell) {
            self.cgroups.remove(&sandbox_root, &session).await?;
        }
        cell::remove(cell)
    }

    /// Stops every session's egress proxy (the server is shutting down).
    pub async fn shutdown(&self) {
        self.egress.close_all().await;
    }

    /// How many egress proxies run, and how many tasks they keep alive in all.
    pub fn egress_activity(&self) -> (usize, usize) {
        self.egress.activity()
    }

    /// Kills every process running in `cell` and waits (a few seconds at most) until they
    /// are reaped. Answers how many were killed.
    pub async fn kill_cell_processes(&self, cell: &CellPaths) -> usize {
        let root = cell
            .root
            .canonicalize()
            .unwrap_or_else(|_| cell.root.clone());
        let killed = self.running.cancel_cell(&root);
        if killed > 0 && !self.running.wait_cell_idle(&root, CELL_STOP_WAIT).await {
            tracing::warn!(cell = %root.display(), "sandboxed processes still running after kill");
        }
        killed
    }

    /// Kills the commands running in `cell` (the session's long-lived services, its MCP
    /// servers, are left running) and waits (a few seconds at most) until they are reaped:
    /// a turn's end, before its workspace is recorded. Answers how many were killed.
    pub async fn kill_cell_commands(&self, cell: &CellPaths) -> usize {
        let root = cell
            .root
            .canonicalize()
            .unwrap_or_else(|_| cell.root.clone());
        let killed = self.running.cancel_commands(&root);
        if killed > 0 && !self.running.wait_commands_idle(&root, CELL_STOP_WAIT).await {
            tracing::warn!(cell = %root.display(), "sandboxed commands still running after kill");
        }
        killed
    }

    /// Kills and reaps the process groups a previous server left running under
    /// `sandbox_root`, and clears their records. Call once at startup.
    pub async fn kill_leftovers(sandbox_root: &Path) -> Result<LeftoverReport, SandboxError> {
        leftovers::kill_leftovers(sandbox_root).await
    }

    /// Removes the session cgroups a previous server with this `sandbox_root` left, killing
    /// what still runs in them. Call once at startup, after [`Sandbox::kill_leftovers`].
    /// Answers how many there were.
    pub async fn remove_stale_cgroups(&self, sandbox_root: &Path) -> Result<usize, SandboxError> {
        let root = sandbox_root
            .canonicalize()
            .unwrap_or_else(|_| sandbox_root.to_path_buf());
        self.cgroups.remove_stale(&root).await
    }
}

impl Sandbox {
    /// The folder a cell's cgroup is keyed by and its session (the cell's folder name), as
    /// [`Sandbox::run`] names its cgroup.
    fn session_of(&self, cell: &CellPaths) -> Option<(std::path::PathBuf, String)> {
        let root = cell
            .root
            .canonicalize()
            .unwrap_or_else(|_| cell.root.clone());
        let session = root.file_name()?.to_str()?.to_owned();
        Some((self.records_root(root.parent()?), session))
    }

    /// Where this server records its running process groups and keys its sessions'
    /// cgroups, for cells lying in `sandbox_root`: its own home's `sandbox/` when the
    /// home is known (see [`SandboxSettings::server_home`]), else `sandbox_root`.
    pub(crate) fn records_root(&self, sandbox_root: &Path) -> std::path::PathBuf {
        match &self.settings.server_home {
            Some(home) => {
                let own = home.join("sandbox");
                own.canonicalize().unwrap_or(own)
            }
            None => sandbox_root.to_path_buf(),
        }
    }
}
