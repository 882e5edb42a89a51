//! How many snapshots a session keeps, how large a workspace may be to be snapshotted,
//! and which mechanism records them.

use serde::{Deserialize, Serialize};

/// How snapshots are made on this server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotMechanism {
    /// Changed files are copied into a content-addressed store at each turn end, and
    /// copied back out to fork or rewind.
    Copies,
    /// A session's workspace is an overlay mount: each turn's writes become a layer at
    /// its end; a fork or a rewind mounts the layers of a turn (see
    /// `crate::snapshot::overlay`).
    Overlay,
}

impl SnapshotMechanism {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Copies => "copies",
            Self::Overlay => "overlay",
        }
    }
}

/// The operator's choice of mechanism (`snapshots.mechanism`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MechanismChoice {
    /// Overlay layers where the server can mount an overlay under its home, else copies.
    #[default]
    Auto,
    /// Overlay layers; the server does not start where it cannot mount them.
    Overlay,
    /// Copies, even where overlays could be mounted.
    Copies,
}

impl MechanismChoice {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Overlay => "overlay",
            Self::Copies => "copies",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotSettings {
    /// Whether turn ends record snapshots at all.
    pub enabled: bool,
    /// Which mechanism new sessions' workspaces use (a session keeps the one it was
    /// created with).
    pub mechanism: MechanismChoice,
    /// Turn snapshots one session keeps; older ones are dropped (their turns can no
    /// longer be forked from, rewound to or diffed).
    pub max_turns: usize,
    /// Bytes one session's object store may hold; past it the oldest turn snapshots are
    /// dropped (never the newest).
    pub max_bytes: u64,
    /// Entries (files, folders, links) of a workspace that is snapshotted; a larger one is
    /// skipped, and the turn's end says so in an event.
    pub max_workspace_files: usize,
    /// Bytes of regular files of a workspace that is snapshotted; a larger one is skipped.
    pub max_workspace_bytes: u64,
}

impl Default for SnapshotSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            mechanism: MechanismChoice::Auto,
            max_turns: 100,
            max_bytes: 8 << 30,
            max_workspace_files: 100_000,
            max_workspace_bytes: 4 << 30,
        }
    }
}
