//! Advisory locks (`flock`) that order the writers of `<home>/overlay`: a session's stack
//! is read, changed and replaced by one writer at a time (a turn's end, a rewind, a
//! squash publishing its layer), and garbage collection never runs between a layer
//! being moved into `layers/` and a stack naming it.
//!
//! Two locks: one per session (`sessions/<id>/lock`, exclusive) and one for the store
//! (`lock`: shared by whoever publishes a layer or a stack naming layers, exclusive for
//! the collector while it decides what is garbage). Always the session's first, then the
//! store's. Each acquisition opens the file anew, so two threads of one process exclude
//! each other as two processes do.

use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{FlockOperation, Mode, OFlags};

use crate::snapshot::SnapshotError;

/// A lock held until dropped (closing the file releases it).
#[derive(Debug)]
pub(super) struct Held {
    _file: OwnedFd,
}

fn open(path: &Path) -> Result<OwnedFd, SnapshotError> {
    rustix::fs::open(
        path,
        OFlags::RDWR | OFlags::CREATE | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::from_raw_mode(0o600),
    )
    .map_err(|e| SnapshotError::io("opening the lock", path, e.into()))
}

fn take(path: &Path, operation: FlockOperation) -> Result<Held, SnapshotError> {
    let fd = open(path)?;
    rustix::fs::flock(&fd, operation)
        .map_err(|e| SnapshotError::io("taking the lock", path, e.into()))?;
    Ok(Held { _file: fd })
}

/// Waits for `path` alone.
pub(super) fn exclusive(path: &Path) -> Result<Held, SnapshotError> {
    take(path, FlockOperation::LockExclusive)
}

/// Waits for `path` among other shared holders.
pub(super) fn shared(path: &Path) -> Result<Held, SnapshotError> {
    take(path, FlockOperation::LockShared)
}

/// `path` alone if nobody holds it now; `None` when someone does.
pub(super) fn try_exclusive(path: &Path) -> Result<Option<Held>, SnapshotError> {
    let fd = open(path)?;
    match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(Some(Held { _file: fd })),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(None),
        Err(e) => Err(SnapshotError::io("taking the lock", path, e.into())),
    }
}
