//! Cheap change detection: what `stat` says about a file or folder.
//!
//! A stamp changes when the file is rewritten in place (size, mtime, ctime) or replaced by
//! a rename (inode), and a folder's stamp changes when an entry is added, removed or
//! renamed. Timestamps are coarse (a clock tick, or a whole second on some file systems),
//! so two writes in the same tick can leave the same stamp: a stamp younger than
//! [`SETTLE_TIME`] is not trusted, and its file is read again at the next check.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How old a modification must be before an unchanged stamp proves an unchanged file.
pub(super) const SETTLE_TIME: Duration = Duration::from_secs(2);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    /// A folder's link count moves with its subfolders, even within one clock tick.
    nlink: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl Stamp {
    pub fn of(meta: &Metadata) -> Self {
        let ns = |secs: i64, nanos: i64| i128::from(secs) * 1_000_000_000 + i128::from(nanos);
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            nlink: meta.nlink(),
            mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// Whether the last change is old enough, at `now`, for an equal stamp to be trusted.
    pub fn settled(&self, now: SystemTime) -> bool {
        let now_ns = match now.duration_since(UNIX_EPOCH) {
            Ok(d) => i128::try_from(d.as_nanos()).unwrap_or(i128::MAX),
            Err(_) => return false,
        };
        let settle = i128::try_from(SETTLE_TIME.as_nanos()).unwrap_or(i128::MAX);
        let last_change = self.mtime_ns.max(self.ctime_ns);
        now_ns.saturating_sub(last_change) > settle
    }
}

/// A stamp as last seen, and whether it could be trusted then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Seen {
    /// `None`: the file did not exist.
    pub stamp: Option<Stamp>,
    pub settled: bool,
}

impl Seen {
    pub fn new(stamp: Option<Stamp>, now: SystemTime) -> Self {
        Self {
            stamp,
            // "Absent" cannot be racy: creating the file changes the stamp.
            settled: stamp.is_none_or(|s| s.settled(now)),
        }
    }

    /// Whether a file last seen as `self` and now stamped `stamp` must be read again.
    pub fn is_stale(&self, stamp: Option<Stamp>) -> bool {
        !self.settled || self.stamp != stamp
    }
}
