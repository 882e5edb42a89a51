//! Copying a manifest back out into a folder: a fork's workspace, or a rewound one. The
//! folder is a new one nobody else sees until it is renamed into place, and every file
//! is a copy of its object (never a link to it), so what runs in the workspace later can
//! change nothing stored.

use std::fs::{self, File, FileTimes};
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::error::SnapshotError;
use super::manifest::{Manifest, Node, StatKey};
use super::objects::ObjectStore;

/// Builds `target` (which must not exist) from `manifest`, owned by `owner` when given
/// (the sandbox user, when the server runs as root). Answers the manifest with the stat of
/// each new file, the base the next snapshot compares against.
pub fn materialize(
    manifest: &Manifest,
    objects: &ObjectStore,
    target: &Path,
    owner: Option<(u32, u32)>,
) -> Result<Manifest, SnapshotError> {
    fs::DirBuilder::new()
        .mode(0o700)
        .create(target)
        .map_err(|e| SnapshotError::io("creating", target, e))?;
    chown(target, owner)?;
    let mut head = manifest.clone();
    let mut dirs = Vec::new();
    for (path, node) in &manifest.entries {
        let dest = target.join(path);
        match node {
            Node::Dir { mode } => {
                fs::DirBuilder::new()
                    .mode(0o700)
                    .create(&dest)
                    .map_err(|e| SnapshotError::io("creating", &dest, e))?;
                chown(&dest, owner)?;
                dirs.push((dest, *mode));
            }
            Node::Symlink { target: link } => {
                std::os::unix::fs::symlink(link, &dest)
                    .map_err(|e| SnapshotError::io("creating the link", &dest, e))?;
                if let Some((uid, gid)) = owner {
                    std::os::unix::fs::lchown(&dest, Some(uid), Some(gid))
                        .map_err(|e| SnapshotError::io("handing over", &dest, e))?;
                }
            }
            Node::File {
                mode,
                size,
                mtime,
                object,
                ..
            } => {
                let key =
                    copy_out(objects, object, *size, *mode, *mtime, &dest).map_err(|e| match e
                        .kind()
                    {
                        io::ErrorKind::InvalidData | io::ErrorKind::NotFound => {
                            SnapshotError::Damaged {
                                turn: manifest.turn,
                                path: path.clone(),
                                message: e.to_string(),
                            }
                        }
                        _ => SnapshotError::io("restoring", &dest, e),
                    })?;
                chown(&dest, owner)?;
                if let Some(Node::File { stat, .. }) = head.entries.get_mut(path) {
                    *stat = key;
                }
            }
        }
    }
    // Folder modes last and deepest first, so a read-only folder did not stop its
    // entries from being made.
    for (dir, mode) in dirs.into_iter().rev() {
        fs::set_permissions(&dir, fs::Permissions::from_mode(mode & 0o777))
            .map_err(|e| SnapshotError::io("setting the mode of", &dir, e))?;
    }
    // Handing a file to another user changes its ctime: read the stats at the very end.
    for (path, node) in head.entries.iter_mut() {
        if let Node::File { stat, .. } = node
            && let Ok(meta) = rustix::fs::lstat(target.join(path))
        {
            *stat = StatKey::of(&meta);
        }
    }
    Ok(head)
}

fn copy_out(
    objects: &ObjectStore,
    object: &str,
    size: u64,
    mode: u32,
    mtime: (i64, i64),
    dest: &Path,
) -> io::Result<StatKey> {
    let mut from = objects.open(object, size)?;
    let mut to = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(dest)?;
    io::copy(&mut from, &mut to)?;
    to.set_permissions(fs::Permissions::from_mode(mode & 0o777))?;
    to.set_times(FileTimes::new().set_modified(system_time(mtime)))?;
    let meta = rustix::fs::fstat(&to)?;
    drop::<File>(to);
    Ok(StatKey::of(&meta))
}

fn system_time((secs, nanos): (i64, i64)) -> SystemTime {
    let nanos = u32::try_from(nanos.clamp(0, 999_999_999)).unwrap_or(0);
    match u64::try_from(secs) {
        Ok(secs) => UNIX_EPOCH + Duration::new(secs, nanos),
        Err(_) => UNIX_EPOCH,
    }
}

fn chown(path: &Path, owner: Option<(u32, u32)>) -> Result<(), SnapshotError> {
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::lchown(path, Some(uid), Some(gid))
            .map_err(|e| SnapshotError::io("handing over", path, e))?;
    }
    Ok(())
}
