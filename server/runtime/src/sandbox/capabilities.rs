//! What the host offers for sandboxing, probed with the kernel's own interfaces: the
//! Landlock ABI version query, the seccomp action query, the user-namespace limit.
//!
//! `/sys/kernel/security/lsm` is not used: securityfs is often not mounted (containers),
//! while the `landlock_create_ruleset` version query always answers.

use std::path::Path;

use super::cgroup::{CgroupVersion, Controller, SessionCgroups};
use super::settings::SandboxSettings;
use crate::policy::SandboxMode;

/// What the host offers for sandboxing, detected at startup.
#[derive(Clone, Debug, Default)]
pub struct SandboxCapabilities {
    pub bubblewrap: bool,
    pub landlock: bool,
    /// The kernel's Landlock ABI version; 0 when Landlock is unavailable.
    pub landlock_abi: u32,
    pub seccomp: bool,
    pub forced_mode: Option<SandboxMode>,
    pub danger_full_access_allowed: bool,
    /// How one session's memory and processes are limited here.
    pub session_limits: SessionLimitsInfo,
    pub notes: Vec<String>,
}

/// How one session's memory and processes are held to their limits on this host.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionLimitsInfo {
    /// The cgroup version limiting each session's memory as a whole; `None`: memory is
    /// limited per process only (`RLIMIT_AS`).
    pub memory_cgroup: Option<CgroupVersion>,
    /// The cgroup version limiting each session's processes as a whole; `None`: they are
    /// limited per command (`RLIMIT_NPROC`), with at most `max_concurrent_commands`.
    pub pids_cgroup: Option<CgroupVersion>,
    /// The memory of a session whose bundle sets none, in MiB; `None`: unlimited.
    pub default_memory_mb: Option<u64>,
    /// The processes (and threads) of one session.
    pub max_processes: u64,
    /// Without a pids cgroup, the commands one session may run at once (`None` with one).
    pub max_concurrent_commands: Option<u64>,
    /// Without a pids cgroup, whether the kernel counts `RLIMIT_NPROC` per user namespace
    /// (Linux 5.14 and later), so per restricted command; before that, per sandbox user,
    /// across all sessions.
    pub processes_counted_per_command: bool,
}

impl SessionLimitsInfo {
    fn probe(settings: &SandboxSettings, cgroups: &SessionCgroups) -> Self {
        let pids_cgroup = cgroups.version_of(Controller::Pids);
        Self {
            memory_cgroup: cgroups.version_of(Controller::Memory),
            pids_cgroup,
            default_memory_mb: settings
                .limits
                .session_memory_bytes
                .map(|bytes| bytes / (1024 * 1024)),
            max_processes: settings.limits.processes,
            max_concurrent_commands: pids_cgroup
                .is_none()
                .then_some(settings.limits.commands_per_session),
            processes_counted_per_command: nproc_per_user_namespace(),
        }
    }

    /// What is and is not enforced, in words, for the notes.
    fn notes(&self, settings: &SandboxSettings) -> Vec<String> {
        let mut notes = Vec::new();
        if self.memory_cgroup.is_none() {
            notes.push(
                "no memory cgroup per session: resources.memory_mb limits each process's \
                 address space (RLIMIT_AS), not the session's processes together"
                    .to_owned(),
            );
        }
        if self.pids_cgroup.is_none() {
            let per_command = settings.limits.processes_per_command();
            let mut note = format!(
                "no pids cgroup per session: a session may run {} commands at once, each \
                 with {per_command} processes (RLIMIT_NPROC)",
                settings.limits.commands_per_session
            );
            if !self.processes_counted_per_command {
                note.push_str(
                    ", but this kernel (before 5.14) counts RLIMIT_NPROC for the sandbox \
                     user across all sessions",
                );
            }
            notes.push(note);
        }
        notes
    }
}

impl SandboxCapabilities {
    /// Probes the host with the default settings (bubblewrap on `PATH`, the helper beside the
    /// running executable).
    pub fn detect(forced_mode: Option<SandboxMode>, danger_full_access_allowed: bool) -> Self {
        let settings = SandboxSettings::default();
        Self {
            forced_mode,
            danger_full_access_allowed,
            ..Self::probe(&settings, &SessionCgroups::new(settings.cgroups))
        }
    }

    /// Probes the host for the programs `settings` names and the cgroups `cgroups` uses.
    pub(crate) fn probe(settings: &SandboxSettings, cgroups: &SessionCgroups) -> Self {
        let mut notes = Vec::new();
        let bubblewrap = match settings.resolve_bwrap() {
            Ok(path) => {
                if !user_namespaces_allowed() {
                    notes.push(format!(
                        "bubblewrap found at {} but user namespaces are disabled \
                         (user.max_user_namespaces = 0); restricted modes will fail",
                        path.display()
                    ));
                }
                true
            }
            Err(looked_for) => {
                notes.push(format!(
                    "bubblewrap not found ({looked_for}): install the `bubblewrap` package \
                     (apt-get install bubblewrap); restricted modes are unavailable"
                ));
                false
            }
        };
        if let Err(looked_for) = settings.resolve_helper() {
            notes.push(format!(
                "sandbox helper odyssey-sandbox not found ({looked_for}); restricted modes are \
                 unavailable"
            ));
        }
        let landlock_abi = landlock_abi();
        if landlock_abi == 0 {
            notes.push(if settings.require_landlock {
                "Landlock is not available in this kernel; restricted modes are refused \
                 (require_landlock)"
                    .to_owned()
            } else {
                "Landlock is not available in this kernel; restricted modes rely on \
                 bubblewrap and seccomp only"
                    .to_owned()
            });
        }
        let seccomp = seccomp_filters_available();
        if !seccomp {
            notes.push("seccomp filtering is not available in this kernel".to_owned());
        }
        let session_limits = SessionLimitsInfo::probe(settings, cgroups);
        notes.extend(cgroups.notes().iter().cloned());
        notes.extend(session_limits.notes(settings));
        Self {
            bubblewrap,
            landlock: landlock_abi > 0,
            landlock_abi,
            seccomp,
            forced_mode: None,
            danger_full_access_allowed: false,
            session_limits,
            notes,
        }
    }
}

pub use odyssey_sandbox::host::{landlock_abi, seccomp_filters_available};

/// Whether the kernel counts `RLIMIT_NPROC` per user namespace (Linux 5.14 and later).
fn nproc_per_user_namespace() -> bool {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    kernel_at_least(&release, (5, 14))
}

/// Whether a kernel release (`6.1.0-18-amd64`) is at least `major.minor`.
fn kernel_at_least(release: &str, wanted: (u32, u32)) -> bool {
    let mut parts = release
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .map(|part| part.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) >= wanted,
        _ => false,
    }
}

/// False only when the kernel says user namespaces are switched off.
fn user_namespaces_allowed() -> bool {
    let limit = Path::new("/proc/sys/user/max_user_namespaces");
    std::fs::read_to_string(limit)
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok())
        .is_none_or(|max| max > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_answer_without_panicking() {
        let caps = SandboxCapabilities::detect(Some(SandboxMode::ReadOnly), true);
        assert_eq!(caps.forced_mode, Some(SandboxMode::ReadOnly));
        assert!(caps.danger_full_access_allowed);
        assert_eq!(caps.landlock, caps.landlock_abi > 0);
    }

    #[test]
    fn kernel_releases_compare_by_major_and_minor() {
        assert!(kernel_at_least("6.1.0-18-amd64\n", (5, 14)));
        assert!(kernel_at_least("5.14.0", (5, 14)));
        assert!(!kernel_at_least("5.10.209-1", (5, 14)));
        assert!(!kernel_at_least("4.19", (5, 14)));
        assert!(!kernel_at_least("", (5, 14)));
    }
}
