//! Walking a folder tree for Glob and Grep, bounded, by descriptor, and without leaving
//! the session's reach.
//!
//! Each folder is opened from its parent's descriptor, refusing a link there, so a folder
//! swapped for a link mid-walk is never entered, and symbolic links to folders are never
//! descended into (a link to a folder could loop). A link to a file is visited (as its
//! target) only when the kernel resolves it beneath the walk's root. Ignore files
//! (`.gitignore`) are deliberately not honoured: the model should find what is on disk,
//! not what git tracks.

use std::ffi::OsStr;
use std::fs::File;
use std::ops::ControlFlow;
use std::os::fd::OwnedFd;

use rustix::fs::Stat;
use tokio_util::sync::CancellationToken;

use super::paths::{Scope, Target};
use crate::sandbox::beneath::{self, BeneathDir, Kind};

/// Entries a walk looks at before it gives up, so a huge tree cannot stall a turn.
pub(crate) const MAX_VISITED: usize = 200_000;
/// Folders deeper than this are not entered: each level holds a descriptor open.
pub(crate) const MAX_DEPTH: usize = 128;

/// A file met by a walk.
pub(crate) struct Found<'a> {
    /// Relative to the walk's root, with `/` separators.
    pub rel: &'a str,
    source: Source<'a>,
}

enum Source<'a> {
    /// A regular file in an open folder, not opened yet (Glob never needs its content).
    Entry { dir: &'a OwnedFd, name: &'a OsStr },
    /// A link's target, opened to find out what it is.
    Opened(File, Stat),
}

impl Found<'_> {
    /// Opens the file for reading, refusing anything but a regular file reached the way the
    /// walk saw it.
    pub fn open(self) -> Option<(File, Stat)> {
        let (file, stat) = match self.source {
            Source::Entry { dir, name } => beneath::open_child_file(dir, name).ok()?,
            Source::Opened(file, stat) => (file, stat),
        };
        (Kind::of_stat(&stat) == Kind::File).then_some((file, stat))
    }
}

/// How a walk ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WalkEnd {
    /// Every entry was visited.
    Complete,
    /// The visitor asked to stop.
    Stopped,
    /// [`MAX_VISITED`] entries were looked at.
    Capped,
    /// The turn was cancelled.
    Cancelled,
}

/// Calls `visit` for every regular file under the folder `start`, depth first, each
/// folder's entries in name order.
pub(crate) fn walk_files(
    scope: &Scope,
    start: &Target,
    cancel: &CancellationToken,
    mut visit: impl FnMut(Found<'_>) -> ControlFlow<()>,
) -> WalkEnd {
    let Ok(dir) = scope.open_dir(start) else {
        return WalkEnd::Complete;
    };
    let mut walk = Walk {
        scope,
        start,
        cancel,
        visited: 0,
    };
    match walk.folder(&dir, "", 0, &mut visit) {
        ControlFlow::Continue(()) => WalkEnd::Complete,
        ControlFlow::Break(end) => end,
    }
}

struct Walk<'a> {
    scope: &'a Scope,
    start: &'a Target,
    cancel: &'a CancellationToken,
    visited: usize,
}

impl Walk<'_> {
    fn folder(
        &mut self,
        dir: &OwnedFd,
        prefix: &str,
        depth: usize,
        visit: &mut impl FnMut(Found<'_>) -> ControlFlow<()>,
    ) -> ControlFlow<WalkEnd> {
        let budget = MAX_VISITED - self.visited;
        // Unreadable folders are skipped, as `find` and `grep -r` do.
        let Ok((mut entries, more)) = BeneathDir::entries(dir, budget) else {
            return ControlFlow::Continue(());
        };
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        for entry in &entries {
            if self.visited == MAX_VISITED {
                return ControlFlow::Break(WalkEnd::Capped);
            }
            if self.visited.is_multiple_of(256) && self.cancel.is_cancelled() {
                return ControlFlow::Break(WalkEnd::Cancelled);
            }
            self.visited += 1;
            let name = entry.name.to_string_lossy();
            let rel = if prefix.is_empty() {
                name.into_owned()
            } else {
                format!("{prefix}/{name}")
            };
            let source = match entry.kind {
                Kind::File => Source::Entry {
                    dir,
                    name: &entry.name,
                },
                Kind::Symlink => match self.scope.open_found_link(self.start, &rel) {
                    Some((file, stat)) => Source::Opened(file, stat),
                    None => continue,
                },
                Kind::Dir if depth < MAX_DEPTH => {
                    if let Ok(child) = beneath::open_child_dir(dir, &entry.name) {
                        self.folder(&child, &rel, depth + 1, visit)?;
                    }
                    continue;
                }
                Kind::Dir | Kind::Other => continue,
            };
            if visit(Found { rel: &rel, source }).is_break() {
                return ControlFlow::Break(WalkEnd::Stopped);
            }
        }
        if more {
            return ControlFlow::Break(WalkEnd::Capped);
        }
        ControlFlow::Continue(())
    }
}
