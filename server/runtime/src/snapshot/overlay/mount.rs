//! Mounting and unmounting one overlay: the new mount API (`fsopen`, `fsconfig` with one
//! `lowerdir+` per layer, so the stack is not bounded by the one-page option string of
//! `mount(2)`), `nosuid` and `nodev` on the mount.
//!
//! Mounts are `volatile`: the overlay never syncs its upper file system (without it, every
//! unmount at a turn's end would sync the whole file system the home is on, whatever else
//! wrote to it); the layer of a turn is synced file by file instead. A volatile mount
//! marks its work folder, so each mount gets a fresh one.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rustix::fs::CWD;
use rustix::mount::{
    FsMountFlags, FsOpenFlags, MountAttrFlags, MoveMountFlags, UnmountFlags, fsconfig_create,
    fsconfig_set_flag, fsconfig_set_string, fsmount, fsopen, move_mount, unmount,
};

use crate::snapshot::SnapshotError;

/// The most lower layers one mount should stack (the kernel refuses more than 500;
/// lookups slow down long before). [`super::OverlayStore::squash`] keeps stacks far
/// below it; a turn's end that finds a stack this deep squashes it first.
pub const MAX_LOWER_LAYERS: usize = 128;

/// What one overlay mount is made of.
#[derive(Clone, Debug)]
pub struct OverlaySpec<'a> {
    /// Read-only layers, topmost first; at least one.
    pub lowers: &'a [PathBuf],
    /// Takes the writes; on the same file system as `work`.
    pub upper: &'a Path,
    /// The kernel's scratch folder for the mount.
    pub work: &'a Path,
}

/// Mounts the overlay `spec` on `target` (an existing folder).
pub fn mount_overlay(spec: &OverlaySpec<'_>, target: &Path) -> Result<(), SnapshotError> {
    let fail = |context: &'static str, e: rustix::io::Errno| {
        SnapshotError::io(context, target, std::io::Error::from(e))
    };
    if spec.lowers.is_empty() {
        return Err(SnapshotError::io(
            "mounting a workspace without layers on",
            target,
            std::io::Error::from(std::io::ErrorKind::InvalidInput),
        ));
    }
    let fs = fsopen("overlay", FsOpenFlags::FSOPEN_CLOEXEC)
        .map_err(|e| fail("opening an overlay file system for", e))?;
    for lower in spec.lowers {
        fsconfig_set_string(&fs, "lowerdir+", lower.as_path())
            .map_err(|e| SnapshotError::io("adding the layer", lower, e.into()))?;
    }
    fsconfig_set_string(&fs, "upperdir", spec.upper)
        .map_err(|e| SnapshotError::io("setting the upper folder", spec.upper, e.into()))?;
    fsconfig_set_string(&fs, "workdir", spec.work)
        .map_err(|e| SnapshotError::io("setting the work folder", spec.work, e.into()))?;
    fsconfig_set_flag(&fs, "volatile").map_err(|e| fail("making volatile the overlay of", e))?;
    // Nothing in a layer redirects a lookup elsewhere or stands for another file's data,
    // whatever the kernel's defaults are.
    for (key, value) in [
        ("redirect_dir", "off"),
        ("metacopy", "off"),
        ("index", "off"),
    ] {
        fsconfig_set_string(&fs, key, value).map_err(|e| fail("configuring the overlay of", e))?;
    }
    fsconfig_create(&fs).map_err(|e| fail("creating the overlay of", e))?;
    let mount = fsmount(
        &fs,
        FsMountFlags::FSMOUNT_CLOEXEC,
        MountAttrFlags::MOUNT_ATTR_NOSUID | MountAttrFlags::MOUNT_ATTR_NODEV,
    )
    .map_err(|e| fail("mounting the overlay of", e))?;
    move_mount(
        &mount,
        "",
        CWD,
        target,
        MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
    )
    .map_err(|e| fail("attaching the overlay on", e))
}

/// Unmounts what is mounted on `target`; nothing when nothing is. A mount still busy (a
/// process of the session that escaped the kill) is detached: the processes keep their
/// view, the folder is free at once.
pub fn unmount_overlay(target: &Path) -> Result<(), SnapshotError> {
    if !is_mount_point(target) {
        return Ok(());
    }
    match unmount(target, UnmountFlags::NOFOLLOW) {
        Ok(()) => Ok(()),
        Err(rustix::io::Errno::BUSY) => {
            tracing::warn!(path = %target.display(), "a workspace is still in use; detaching it");
            unmount(target, UnmountFlags::NOFOLLOW | UnmountFlags::DETACH)
                .map_err(|e| SnapshotError::io("detaching the workspace", target, e.into()))
        }
        Err(e) => Err(SnapshotError::io(
            "unmounting the workspace",
            target,
            e.into(),
        )),
    }
}

/// Unmounts what is mounted on `target`, refusing while it stays busy: a turn's end must
/// not move an upper folder a surviving process could still write through a detached
/// mount into a layer. A mount held only a moment (a process of the cell still exiting, a
/// child forked elsewhere in the server holding a copy of a descriptor) is tried again a
/// few times, about 150 ms in all, before the refusal.
pub fn unmount_overlay_strict(target: &Path) -> Result<(), SnapshotError> {
    const BUSY_RETRIES: u32 = 5;
    if !is_mount_point(target) {
        return Ok(());
    }
    let mut tries = 0;
    loop {
        match unmount(target, UnmountFlags::NOFOLLOW) {
            Err(rustix::io::Errno::BUSY) if tries < BUSY_RETRIES => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(10 * u64::from(tries)));
            }
            done => {
                return done
                    .map_err(|e| SnapshotError::io("unmounting the workspace", target, e.into()));
            }
        }
    }
}

/// Whether something is mounted on `path`: its device differs from its parent's.
pub fn is_mount_point(path: &Path) -> bool {
    let Some(parent) = path.parent() else {
        return false;
    };
    match (
        std::fs::symlink_metadata(path),
        std::fs::symlink_metadata(parent),
    ) {
        (Ok(here), Ok(above)) => here.is_dir() && here.dev() != above.dev(),
        _ => false,
    }
}

/// Whether overlays can be mounted under `dir` by this process: a tiny one is mounted in
/// a temporary folder there, written through, and removed.
pub fn probe(dir: &Path) -> Result<(), SnapshotError> {
    std::fs::create_dir_all(dir).map_err(|e| SnapshotError::io("creating", dir, e))?;
    let scratch = tempfile::Builder::new()
        .prefix(".probe-")
        .tempdir_in(dir)
        .map_err(|e| SnapshotError::io("creating a folder in", dir, e))?;
    let root = scratch.path();
    let [lower, upper, work, merged] = ["lower", "upper", "work", "merged"].map(|n| root.join(n));
    for d in [&lower, &upper, &work, &merged] {
        std::fs::create_dir(d).map_err(|e| SnapshotError::io("creating", d, e))?;
    }
    std::fs::write(lower.join("probe"), b"lower")
        .map_err(|e| SnapshotError::io("writing in", &lower, e))?;
    let lowers = [lower.clone()];
    mount_overlay(
        &OverlaySpec {
            lowers: &lowers,
            upper: &upper,
            work: &work,
        },
        &merged,
    )?;
    let written = std::fs::write(merged.join("probe"), b"upper")
        .map_err(|e| SnapshotError::io("writing in", &merged, e));
    let unmounted = unmount_overlay(&merged);
    written?;
    unmounted?;
    let below = std::fs::read(lower.join("probe"))
        .map_err(|e| SnapshotError::io("reading in", &lower, e))?;
    let above = std::fs::read(upper.join("probe"))
        .map_err(|e| SnapshotError::io("reading in", &upper, e))?;
    if below != b"lower" || above != b"upper" {
        return Err(SnapshotError::io(
            "checking the probe overlay in",
            root,
            std::io::Error::other("a write through the overlay did not land in its upper folder"),
        ));
    }
    Ok(())
}
