//! rlimits: hard and soft, so the command cannot raise them back.
//!
//! [`set`] makes only raw system calls and never allocates: the server also calls it
//! between `fork` and `exec` (for `danger_full_access`), where allocating is unsafe.

use std::io;

use super::HelperError;
use crate::RlimitValues;

#[cfg(target_env = "gnu")]
type Resource = libc::__rlimit_resource_t;
#[cfg(not(target_env = "gnu"))]
type Resource = libc::c_int;

/// Applies the helper's rlimits.
pub(super) fn apply(values: &RlimitValues) -> Result<(), HelperError> {
    set(values).map_err(|(limit, source)| HelperError::Rlimit { limit, source })
}

/// Sets every limit that has a value. On failure answers the limit's name and the error.
pub fn set(values: &RlimitValues) -> Result<(), (&'static str, io::Error)> {
    let limits: [(&'static str, Resource, Option<u64>, u64); 4] = [
        ("RLIMIT_NOFILE", libc::RLIMIT_NOFILE, values.open_files, 0),
        ("RLIMIT_NPROC", libc::RLIMIT_NPROC, values.processes, 0),
        // One second of slack: SIGXCPU at the soft limit lets a program report it before
        // SIGKILL at the hard one.
        ("RLIMIT_CPU", libc::RLIMIT_CPU, values.cpu_seconds, 1),
        ("RLIMIT_AS", libc::RLIMIT_AS, values.address_space_bytes, 0),
    ];
    for (name, resource, value, slack) in limits {
        if let Some(value) = value {
            set_one(resource, value, slack).map_err(|e| (name, e))?;
        }
    }
    Ok(())
}

fn set_one(resource: Resource, value: u64, slack: u64) -> io::Result<()> {
    let mut current = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `current` is a valid, writable rlimit.
    if unsafe { libc::getrlimit(resource, &mut current) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // Never ask for more than the inherited hard limit: lowering is always allowed,
    // raising is not.
    let hard = value.saturating_add(slack).min(current.rlim_max);
    let soft = value.min(hard);
    let wanted = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: `wanted` is a valid rlimit that lives across the call.
    if unsafe { libc::setrlimit(resource, &wanted) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
