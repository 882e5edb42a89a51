//! A read-only view of a stack of layers that is mounted nowhere: the overlay is created
//! with `fsmount` and never attached, so its root descriptor is the only way in. No other
//! process can see or reach it, nothing is left mounted if the server dies, and closing
//! the descriptor undoes it. Reading a stack this way costs one mount, after which each
//! lookup is one system call answered from the kernel's caches, where looking a path up
//! layer by layer would cost one call per layer.

use std::os::fd::OwnedFd;
use std::path::PathBuf;

use rustix::mount::{
    FsMountFlags, FsOpenFlags, MountAttrFlags, fsconfig_create, fsconfig_set_string, fsmount,
    fsopen,
};

use crate::snapshot::SnapshotError;

/// The merged view of `lowers` (topmost first; at least two, as an overlay without an
/// upper folder needs), read-only, without set-user-ID, devices or execution.
pub(super) fn detached_view(lowers: &[PathBuf]) -> Result<OwnedFd, SnapshotError> {
    let first = lowers.first().cloned().unwrap_or_default();
    let fail = |context: &'static str, e: rustix::io::Errno| {
        SnapshotError::io(context, first.clone(), std::io::Error::from(e))
    };
    if lowers.len() < 2 {
        return Err(SnapshotError::io(
            "viewing fewer than two layers from",
            first,
            std::io::Error::from(std::io::ErrorKind::InvalidInput),
        ));
    }
    let fs = fsopen("overlay", FsOpenFlags::FSOPEN_CLOEXEC)
        .map_err(|e| fail("opening an overlay file system for", e))?;
    for lower in lowers {
        fsconfig_set_string(&fs, "lowerdir+", lower.as_path())
            .map_err(|e| SnapshotError::io("adding the layer", lower, e.into()))?;
    }
    for (key, value) in [
        ("redirect_dir", "off"),
        ("metacopy", "off"),
        ("index", "off"),
    ] {
        fsconfig_set_string(&fs, key, value).map_err(|e| fail("configuring the view of", e))?;
    }
    fsconfig_create(&fs).map_err(|e| fail("creating the view of", e))?;
    fsmount(
        &fs,
        FsMountFlags::FSMOUNT_CLOEXEC,
        MountAttrFlags::MOUNT_ATTR_RDONLY
            | MountAttrFlags::MOUNT_ATTR_NOSUID
            | MountAttrFlags::MOUNT_ATTR_NODEV
            | MountAttrFlags::MOUNT_ATTR_NOEXEC,
    )
    .map_err(|e| fail("mounting the view of", e))
}
