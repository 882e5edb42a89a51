//! What the host offers for sandboxing, probed with the kernel's own interfaces: the
//! Landlock ABI version query, the seccomp action query, the user-namespace limit.
//!
//! `/sys/kernel/security/lsm` is not used: securityfs is often not mounted (containers),
//! while the `landlock_create_ruleset` version query always answers.

use std::path::Path;

use super::settings::SandboxSettings;
use crate::runtime::policy::SandboxMode;

/// `LANDLOCK_CREATE_RULESET_VERSION`: ask for the ABI version instead of creating a ruleset.
const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
/// `SECCOMP_GET_ACTION_AVAIL` and `SECCOMP_RET_ERRNO` from `<linux/seccomp.h>`.
const SECCOMP_GET_ACTION_AVAIL: libc::c_uint = 2;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;

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
    pub notes: Vec<String>,
}

impl SandboxCapabilities {
    /// Probes the host with the default settings (bubblewrap on `PATH`, the helper beside the
    /// running executable).
    pub fn detect(forced_mode: Option<SandboxMode>, danger_full_access_allowed: bool) -> Self {
        Self {
            forced_mode,
            danger_full_access_allowed,
            ..Self::probe(&SandboxSettings::default())
        }
    }

    /// Probes the host for the programs `settings` names.
    pub(crate) fn probe(settings: &SandboxSettings) -> Self {
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
        Self {
            bubblewrap,
            landlock: landlock_abi > 0,
            landlock_abi,
            seccomp,
            forced_mode: None,
            danger_full_access_allowed: false,
            notes,
        }
    }
}

/// The Landlock ABI version the kernel implements, 0 when it has none or it is disabled.
pub fn landlock_abi() -> u32 {
    // SAFETY: with a null attribute pointer, size 0 and the VERSION flag the kernel only
    // returns a number; nothing is read or written through the pointer.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(version).unwrap_or(0)
}

/// Whether seccomp filters returning an errno can be installed.
pub fn seccomp_filters_available() -> bool {
    let action = SECCOMP_RET_ERRNO;
    // SAFETY: the kernel reads one u32 through the pointer, which points at a live local.
    let result = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            SECCOMP_GET_ACTION_AVAIL,
            0 as libc::c_uint,
            &action as *const u32,
        )
    };
    result == 0
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
}
