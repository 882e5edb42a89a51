//! Walking a folder tree for Glob and Grep, bounded and without leaving the session's
//! reach.
//!
//! Symbolic links are never descended into: a link to a folder would let a walk leave the
//! workspace or loop. A link to a file is visited (as its target) only when the target is
//! somewhere the session may read. Ignore files (`.gitignore`) are deliberately not
//! honoured: the model should find what is on disk, not what git tracks.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;
use walkdir::WalkDir;

use super::paths::Scope;

/// Entries a walk looks at before it gives up, so a huge tree cannot stall a turn.
pub(crate) const MAX_VISITED: usize = 200_000;

/// A regular file met by a walk.
pub(crate) struct Found<'a> {
    /// Relative to the walk's root, with `/` separators.
    pub rel: &'a str,
    /// Where its content really is (the link target for a link).
    pub real: &'a Path,
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

/// Calls `visit` for every regular file under `root` (a real folder), in name order.
pub(crate) fn walk_files(
    scope: &Scope,
    root: &Path,
    cancel: &CancellationToken,
    mut visit: impl FnMut(Found<'_>) -> ControlFlow<()>,
) -> WalkEnd {
    let walker = WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .min_depth(1);
    for (visited, entry) in walker.into_iter().enumerate() {
        if visited == MAX_VISITED {
            return WalkEnd::Capped;
        }
        if visited.is_multiple_of(256) && cancel.is_cancelled() {
            return WalkEnd::Cancelled;
        }
        // Unreadable folders are skipped, as `find` and `grep -r` do.
        let Ok(entry) = entry else { continue };
        let file_type = entry.file_type();
        let real: PathBuf = if file_type.is_file() {
            entry.path().to_path_buf()
        } else if file_type.is_symlink() {
            match scope.resolve_found(entry.path()) {
                Some(target) if target.is_file() => target,
                _ => continue,
            }
        } else {
            continue;
        };
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let rel = slash(rel);
        if visit(Found {
            rel: &rel,
            real: &real,
        })
        .is_break()
        {
            return WalkEnd::Stopped;
        }
    }
    WalkEnd::Complete
}

fn slash(rel: &Path) -> String {
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}
