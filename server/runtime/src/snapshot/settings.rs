//! How many snapshots a session keeps, and how large a workspace may be to be snapshotted.

/// How snapshots are made on this server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotMechanism {
    /// Changed files are copied into a content-addressed store at each turn end, and
    /// copied back out to fork or rewind.
    Copies,
}

impl SnapshotMechanism {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Copies => "copies",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotSettings {
    /// Whether turn ends record snapshots at all.
    pub enabled: bool,
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
            max_turns: 100,
            max_bytes: 8 << 30,
            max_workspace_files: 100_000,
            max_workspace_bytes: 4 << 30,
        }
    }
}

impl SnapshotSettings {
    /// The mechanism in use.
    pub fn mechanism(&self) -> SnapshotMechanism {
        SnapshotMechanism::Copies
    }
}
