//! Workspace snapshots: what a session's `data/` held at the end of each turn, so a
//! session can be forked from any turn, rewound to one, and asked what a turn changed.
//!
//! Two mechanisms record them; a session keeps the one its workspace was made with (see
//! `workspaces`). Overlay layers (see `overlay`) where the server can mount them. Copies
//! elsewhere: a per-session content-addressed object store (`objects/`,
//! SHA-256 of each regular file's bytes) and one manifest per turn end (`turns/`: path →
//! folder, file or symbolic link, with mode, size, times and object id). Taking a snapshot
//! walks `data/` beneath a descriptor (no link is ever followed) and re-hashes only the
//! files whose size, times or inode differ from the previous manifest (`head.json`), so its
//! cost grows with what the turn changed plus one `stat` per entry, not with the bytes the
//! workspace holds. Objects are never written in place, so no process of any session can
//! change a snapshot: a file is copied out of the store, never linked.
//!
//! Layout, under `<home>/sessions/<id>/snapshots/` with the file store, and under
//! `<workspace root>/.snapshots/<id>/` with a store several servers share (every one of
//! them mounts the workspace root, so any of them reads what another recorded; see
//! [`SnapshotStore::on_workspace_root`]):
//!
//! ```text
//! objects/<2 hex>/<62 hex>      the bytes of one file version, read-only
//! turns/<turn:08>-<turn_id>.json  the manifest at that turn's end
//! head.json                      the manifest the workspace matches now (the diff base)
//! ```

mod diff;
mod error;
mod manifest;
mod materialize;
mod objects;
pub mod overlay;
mod settings;
mod store;
mod walk;
mod workspaces;

pub use diff::{ChangeKind, FileChange, MAX_CHANGES, NodeKind, TurnChanges, changes};
pub use error::SnapshotError;
pub use manifest::{Manifest, Node};
pub use settings::{MechanismChoice, SnapshotMechanism, SnapshotSettings};
pub use store::{SnapshotOutcome, SnapshotStore, TakenSnapshot, UnsyncedSnapshot};
pub use workspaces::{OVERLAY_DIR, Workspaces};

/// The folder of a session's snapshots, inside its session folder.
pub const SNAPSHOTS_DIR: &str = "snapshots";

/// The folder of the sessions' snapshots on a workspace root servers share, beside the
/// cells (a cell's folder is named by its session's id, never with a leading dot). No
/// cell ever sees it: a sandbox binds only a cell's own folders, and command mounts may
/// not reach into the folder the cells lie in.
pub const SHARED_SNAPSHOTS_DIR: &str = ".snapshots";

#[cfg(test)]
mod tests;
