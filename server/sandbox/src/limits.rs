//! The rlimits both sides agree on: the server decides them, the helper (or, for
//! `danger_full_access`, the server's child before `exec`) applies them.

/// The rlimits applied to one process: `None` leaves a limit as inherited.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RlimitValues {
    pub open_files: Option<u64>,
    pub processes: Option<u64>,
    pub cpu_seconds: Option<u64>,
    pub address_space_bytes: Option<u64>,
}
