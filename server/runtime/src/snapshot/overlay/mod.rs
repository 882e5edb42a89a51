//! Workspace snapshots as overlay layers: a session's `data/` is an overlay mount whose
//! lower layers are the layers of its past turns (immutable, outside every cell) and whose
//! upper folder takes the running turn's writes. A turn's end unmounts it, makes the upper
//! folder the turn's layer and mounts again over a fresh one: its cost follows what the
//! turn wrote, never the workspace's size. A fork mounts the source's layers of a turn
//! beneath an upper folder of its own; a rewind mounts a kept turn's layers again. A write
//! through any mount (an in-place append included) lands in that mount's upper folder
//! (copy-up), so it never changes a layer or another session's files.
//!
//! Layout, under `<home>/overlay/`:
//!
//! ```text
//! base/                      the empty bottom layer of every stack
//! layers/<id>/               the writes of one turn, never written again
//! sessions/<session>/upper/  the running turn's writes
//! sessions/<session>/work/   the kernel's scratch folder of the mount
//! sessions/<session>/stack.json  the layers beneath the workspace, and each kept turn's
//! sessions/<session>/lock    held while the stack is read, changed and replaced
//! staging/<id>/              a squashed layer being built (`<id>.lock` held meanwhile)
//! trash/                     layers the collector took out, being removed
//! lock                       shared by publishers of layers, exclusive for the collector
//! ```
//!
//! A turn's changes are read from its own layer against the layers beneath it
//! ([`OverlayStore::turn_changes`]); when a workspace stacks many layers, the oldest are
//! squashed into one off the turn's path ([`OverlayStore::squash`]).
//!
//! The server uses this where [`probe`] mounts an overlay; elsewhere the copies of
//! `crate::snapshot` remain the mechanism.

mod changes;
mod layers;
mod lock;
mod mount;
mod squash;
mod tree;
mod view;

pub use layers::{OverlayStore, Stack, TurnLayers, UnsyncedLayer};
pub use mount::{
    MAX_LOWER_LAYERS, OverlaySpec, is_mount_point, mount_overlay, probe, unmount_overlay,
    unmount_overlay_strict,
};
pub use squash::{SQUASH_AT, SQUASH_KEEPS, Squashed};

#[cfg(test)]
mod changes_tests;
#[cfg(test)]
mod squash_tests;
#[cfg(test)]
mod tests;
