//! The Landlock domain the command runs in.
//!
//! Rules are written against ABI v6 (file system, TCP, scoping), a version whose every
//! right has been vetted here; newer kernels enforce it fully, older ones enforce what they
//! know (best effort), and a kernel without Landlock is refused unless the operator chose
//! the weaker fallback.

use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath,
    PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};

use super::{HelperArgs, HelperError, LandlockRequirement};

const ABI_VERSION: ABI = ABI::V6;

/// Creates the ruleset from `args` and restricts this process with it (which also sets
/// `no_new_privs`, required for seccomp next).
pub(super) fn apply(args: &HelperArgs) -> Result<(), HelperError> {
    let err = |e: &dyn std::fmt::Display| HelperError::Landlock(e.to_string());
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(ABI_VERSION))
        .map_err(|e| err(&e))?
        .scope(Scope::from_all(ABI_VERSION))
        .map_err(|e| err(&e))?;
    if !args.network || args.relay.is_some() {
        // Handled: every TCP bind and connect is denied but for the relay rule below.
        ruleset = ruleset
            .handle_access(AccessNet::from_all(ABI_VERSION))
            .map_err(|e| err(&e))?;
    }
    let mut created = ruleset.create().map_err(|e| err(&e))?;
    if let Some(relay) = &args.relay {
        created = created
            .add_rule(NetPort::new(relay.port, AccessNet::ConnectTcp))
            .map_err(|e| err(&e))?;
    }
    let groups: [(&[std::path::PathBuf], BitFlags<AccessFs>); 3] = [
        (&args.read_only, AccessFs::from_read(ABI_VERSION)),
        (&args.read_write, AccessFs::from_all(ABI_VERSION)),
        (&args.devices, device_access()),
    ];
    for (paths, access) in groups {
        for path in paths {
            let Some(fd) = open_beneath(path)? else {
                continue;
            };
            created = created
                .add_rule(PathBeneath::new(fd, access))
                .map_err(|e| HelperError::Landlock(format!("{}: {e}", path.display())))?;
        }
    }
    enforced(
        created.restrict_self().map_err(|e| err(&e))?.ruleset,
        args.landlock,
    )
}

/// The egress relay's domain: no file access, no TCP bind or connect (it has its
/// listening socket already, and reaches the proxy over a Unix socket).
pub(super) fn apply_relay(requirement: LandlockRequirement) -> Result<(), HelperError> {
    let err = |e: &dyn std::fmt::Display| HelperError::Landlock(e.to_string());
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(ABI_VERSION))
        .map_err(|e| err(&e))?
        .handle_access(AccessNet::from_all(ABI_VERSION))
        .map_err(|e| err(&e))?
        .scope(Scope::from_all(ABI_VERSION))
        .map_err(|e| err(&e))?
        .create()
        .map_err(|e| err(&e))?
        .restrict_self()
        .map_err(|e| err(&e))?;
    enforced(status.ruleset, requirement)
}

fn enforced(status: RulesetStatus, requirement: LandlockRequirement) -> Result<(), HelperError> {
    if status == RulesetStatus::NotEnforced && requirement == LandlockRequirement::Required {
        return Err(HelperError::Landlock(
            "the kernel cannot enforce Landlock and the server requires it".to_owned(),
        ));
    }
    Ok(())
}

/// Device files: use the existing nodes (`/dev/null`, `/dev/tty`...), never create any.
fn device_access() -> BitFlags<AccessFs> {
    AccessFs::ReadFile
        | AccessFs::WriteFile
        | AccessFs::ReadDir
        | AccessFs::Truncate
        | AccessFs::IoctlDev
}

/// An `O_PATH` descriptor of `path`, `None` when it does not exist (it then grants nothing).
fn open_beneath(path: &Path) -> Result<Option<PathFd>, HelperError> {
    if !path.exists() {
        return Ok(None);
    }
    PathFd::new(path)
        .map(Some)
        .map_err(|e| HelperError::Landlock(format!("{}: {e}", path.display())))
}
