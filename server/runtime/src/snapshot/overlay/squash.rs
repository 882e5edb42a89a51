//! Squashing: merging the oldest layers of a session's workspace into one, so the stack
//! a mount needs stays far below [`MAX_LOWER_LAYERS`] however many turns wrote files.
//!
//! The layers to merge are mounted read-only in a view mounted nowhere
//! ([`super::view`]) and their merged tree is copied into a fresh layer: whiteouts and
//! opaque folders are applied by the kernel exactly as the workspace sees them, and as
//! the merged layers are the bottom of the stack (only the empty base is beneath), the
//! new layer needs neither. It is built in `staging/`, synced, moved into `layers/`, and
//! only then named by the stack (synced): a crash in between leaves a layer no stack
//! names, which [`OverlayStore::collect_garbage`] removes.
//!
//! Kept turns: a turn whose layers begin with the merged ones and that started from all
//! of them (what it wrote lies above them) names the new layer instead, and still reads
//! the same tree and the same changes. A turn that wrote one of the merged layers keeps
//! its own list: it can still be rewound to, forked from and diffed, and the individual
//! layers stay on disk until retention drops the last such turn (retention counts them).
//! The running workspace keeps the layers it is mounted on (`Stack::mounted`) until the
//! next turn end mounts the new stack.
//!
//! What the copy leaves out, as the copies do: FIFOs, sockets and devices, extended
//! attributes, set-user-ID and set-group-ID bits; hard links become separate files.
//! Sparse files stay sparse (only their data is copied).

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, FileExt};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Dir, Gid, Mode, OFlags, SeekFrom, Stat, Timespec, Timestamps, Uid};
use uuid::Uuid;

use super::layers::{OverlayStore, STAGING_DIR, layer_size, remove_all, sync_dir};
use super::lock;
use super::mount::MAX_LOWER_LAYERS;
use super::tree::{self, Kind};
use super::view::detached_view;
use crate::snapshot::SnapshotError;

/// A workspace stacking more layers than this is worth squashing (well below
/// [`MAX_LOWER_LAYERS`], so a squash that runs late still finds room).
pub const SQUASH_AT: usize = 64;
/// The newest layers a squash leaves as they are: the recent turns' own layers, which
/// rewinds and diffs use most.
pub const SQUASH_KEEPS: usize = 16;

/// What a squash did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Squashed {
    /// The new layer, at the bottom of the workspace's stack.
    pub layer: String,
    /// How many layers it stands for.
    pub replaced: usize,
    /// Kept turns whose layers now name it.
    pub turns_rewritten: usize,
    /// Entries of the merged tree left out (FIFOs, sockets, devices).
    pub left_out: usize,
}

impl OverlayStore {
    /// Whether the workspace of `session` stacks more than [`SQUASH_AT`] layers, so
    /// that [`OverlayStore::squash`] would merge some.
    pub fn needs_squash(&self, session: Uuid) -> Result<bool, SnapshotError> {
        Ok(self.stack(session)?.current.len() > SQUASH_AT)
    }

    /// Merges the oldest layers of `session`'s workspace (all but the
    /// [`SQUASH_KEEPS`] newest) into one when it stacks more than [`SQUASH_AT`];
    /// `None` when it does not, or when the stack changed meanwhile (a rewind). Its cost
    /// follows the size of the merged tree, so it runs off the turn's path: after a
    /// turn's end, in a blocking task, while the next turn may already run (the
    /// workspace stays mounted; a turn end waits only for the last step, the stack's
    /// replacement).
    pub fn squash(&self, session: Uuid) -> Result<Option<Squashed>, SnapshotError> {
        self.squash_with(session, SQUASH_AT, false)
    }

    /// Squashes as [`OverlayStore::squash`] does, for a turn's end that holds the
    /// session's lock and the store's and found the stack full.
    pub(super) fn squash_held(&self, session: Uuid) -> Result<Option<Squashed>, SnapshotError> {
        self.squash_with(session, MAX_LOWER_LAYERS - 1, true)
    }

    fn squash_with(
        &self,
        session: Uuid,
        above: usize,
        held: bool,
    ) -> Result<Option<Squashed>, SnapshotError> {
        let stack = self.stack(session)?;
        if stack.current.len() <= above.max(SQUASH_KEEPS + 1) {
            return Ok(None);
        }
        let count = stack.current.len() - SQUASH_KEEPS;
        let merged = stack.current[..count].to_vec();
        let staging = self.root().join(STAGING_DIR);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&staging)
            .map_err(|e| SnapshotError::io("creating", &staging, e))?;
        let id = Uuid::now_v7().to_string();
        let building = staging.join(&id);
        let lock_path = building.with_extension("lock");
        let building_lock = lock::exclusive(&lock_path)?;
        let done = |keep: bool| {
            if !keep {
                remove_all(&building);
            }
            let _ = std::fs::remove_file(&lock_path);
        };
        let built = self.build(&merged, &building).and_then(|left_out| {
            sync_file_system(&building)?;
            Ok((left_out, layer_size(&building)?))
        });
        let (left_out, size) = match built {
            Ok(built) => built,
            Err(e) => {
                done(false);
                return Err(e);
            }
        };
        let _locks = if held {
            None
        } else {
            Some((self.lock_session(session)?, self.lock_store()?))
        };
        let mut stack = self.stack(session)?;
        if !stack.current.starts_with(&merged) {
            done(false);
            return Ok(None);
        }
        let layer = self.layer(&id);
        if let Err(e) = std::fs::rename(&building, &layer) {
            done(false);
            return Err(SnapshotError::io("moving", &building, e));
        }
        drop(building_lock);
        done(true);
        if let Some(layers) = layer.parent() {
            sync_dir(layers);
        }
        let bases: Vec<Option<usize>> = stack.turns.iter().map(|t| t.base_in(&stack)).collect();
        let mut turns_rewritten = 0;
        for (turn, base) in stack.turns.iter_mut().zip(bases) {
            match base {
                Some(base) if base >= count && turn.layers.starts_with(&merged) => {
                    turn.layers.splice(..count, [id.clone()]);
                    turn.base = Some(base - count + 1);
                    turns_rewritten += 1;
                }
                _ => {}
            }
        }
        if stack.mounted.is_empty() {
            stack.mounted = stack.current.clone();
        }
        stack.current.splice(..count, [id.clone()]);
        stack.sizes.insert(id.clone(), size);
        self.set_stack(session, &stack)?;
        tracing::info!(%session, layer = %id, replaced = count, turns_rewritten, "squashed workspace layers");
        Ok(Some(Squashed {
            layer: id,
            replaced: count,
            turns_rewritten,
            left_out,
        }))
    }

    /// Copies the merged tree of `merged` (bottom first) into the new folder `target`;
    /// answers how many entries were left out.
    fn build(&self, merged: &[String], target: &Path) -> Result<usize, SnapshotError> {
        let mut lowers: Vec<PathBuf> = merged.iter().rev().map(|id| self.layer(id)).collect();
        lowers.push(self.base());
        let view = detached_view(&lowers)?;
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(target)
            .map_err(|e| SnapshotError::io("creating", target, e))?;
        let dest = tree::open_root(target).map_err(|e| SnapshotError::io("opening", target, e))?;
        copy_tree(&view, &dest).map_err(|e| SnapshotError::io("squashing layers into", target, e))
    }
}

/// Puts everything written on the file system of `path` on stable storage: one call,
/// where syncing a merged tree file by file costs one flush per file (seconds for ten
/// thousand files). It flushes what others wrote there too, which is why turn ends sync
/// their layer file by file instead; a squash runs off the turn's path.
fn sync_file_system(path: &Path) -> Result<(), SnapshotError> {
    let fd = tree::open_root(path).map_err(|e| SnapshotError::io("opening", path, e))?;
    rustix::fs::syncfs(&fd).map_err(|e| SnapshotError::io("syncing", path, e.into()))
}

fn times(stat: &Stat) -> Timestamps {
    Timestamps {
        last_access: Timespec {
            tv_sec: stat.st_atime,
            tv_nsec: stat.st_atime_nsec as _,
        },
        last_modification: Timespec {
            tv_sec: stat.st_mtime,
            tv_nsec: stat.st_mtime_nsec as _,
        },
    }
}

fn owner(stat: &Stat) -> (Option<Uid>, Option<Gid>) {
    (
        Some(Uid::from_raw(stat.st_uid)),
        Some(Gid::from_raw(stat.st_gid)),
    )
}

/// Copies the tree beneath `from` into the empty folder `to` (no link followed, FIFOs,
/// sockets and devices left out and counted); folders get their modes and times last.
fn copy_tree(from: &OwnedFd, to: &OwnedFd) -> io::Result<usize> {
    let root = rustix::fs::fstat(from)?;
    let (uid, gid) = owner(&root);
    rustix::fs::fchown(to, uid, gid)?;
    let mut left_out = 0;
    let mut dirs: Vec<(PathBuf, Stat)> = vec![(PathBuf::new(), root)];
    let mut pending = vec![PathBuf::new()];
    while let Some(rel) = pending.pop() {
        let source = tree::open_dir(from, &rel)?;
        let dest = tree::open_dir(to, &rel)?;
        for entry in Dir::read_from(&source)? {
            let entry = entry?;
            let raw = entry.file_name().to_bytes();
            if raw == b"." || raw == b".." {
                continue;
            }
            let name = OsStr::from_bytes(raw);
            let stat = match rustix::fs::statat(&source, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) => stat,
                Err(rustix::io::Errno::NOENT) => continue,
                Err(e) => return Err(e.into()),
            };
            let (uid, gid) = owner(&stat);
            match Kind::of(&stat) {
                Kind::Dir => {
                    rustix::fs::mkdirat(&dest, name, Mode::from_raw_mode(0o700))?;
                    rustix::fs::chownat(&dest, name, uid, gid, AtFlags::SYMLINK_NOFOLLOW)?;
                    let child = rel.join(name);
                    dirs.push((child.clone(), stat));
                    pending.push(child);
                }
                Kind::File => copy_file(&source, &dest, name, &stat)?,
                Kind::Symlink => {
                    let target = rustix::fs::readlinkat(&source, name, Vec::new())?;
                    rustix::fs::symlinkat(target.as_c_str(), &dest, name)?;
                    rustix::fs::chownat(&dest, name, uid, gid, AtFlags::SYMLINK_NOFOLLOW)?;
                    rustix::fs::utimensat(&dest, name, &times(&stat), AtFlags::SYMLINK_NOFOLLOW)?;
                }
                Kind::Whiteout | Kind::Other => left_out += 1,
            }
        }
    }
    // Deepest first: setting a folder's times before its entries are made would not last.
    for (rel, stat) in dirs.iter().rev() {
        let dir = tree::open_dir(to, rel)?;
        rustix::fs::fchmod(&dir, Mode::from_raw_mode(stat.st_mode & 0o1777))?;
        rustix::fs::futimens(&dir, &times(stat))?;
    }
    Ok(left_out)
}

/// Copies the regular file `name` of `from` into `to`: only the data (a sparse file's
/// holes stay holes), then its owner, mode and times.
fn copy_file(from: &OwnedFd, to: &OwnedFd, name: &OsStr, stat: &Stat) -> io::Result<()> {
    let (source, opened) = tree::open_child_file(from, name)?;
    let size = u64::try_from(opened.st_size).unwrap_or(0);
    let fd = rustix::fs::openat(
        to,
        name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )?;
    let dest = File::from(fd);
    let mut buf = vec![0u8; 256 * 1024];
    let mut offset = 0u64;
    while offset < size {
        let data = match rustix::fs::seek(&source, SeekFrom::Data(offset)) {
            Ok(data) => data,
            Err(rustix::io::Errno::NXIO) => break,
            Err(e) => return Err(e.into()),
        };
        if data >= size {
            break;
        }
        let hole = rustix::fs::seek(&source, SeekFrom::Hole(data))?.min(size);
        let mut at = data;
        while at < hole {
            let want = usize::try_from((hole - at).min(buf.len() as u64)).unwrap_or(buf.len());
            let n = source.read_at(&mut buf[..want], at)?;
            if n == 0 {
                break;
            }
            dest.write_all_at(&buf[..n], at)?;
            at += n as u64;
        }
        offset = hole.max(at);
    }
    rustix::fs::ftruncate(&dest, size)?;
    let (uid, gid) = owner(stat);
    rustix::fs::fchown(&dest, uid, gid)?;
    rustix::fs::fchmod(&dest, Mode::from_raw_mode(stat.st_mode & 0o777))?;
    rustix::fs::futimens(&dest, &times(stat))?;
    Ok(())
}
