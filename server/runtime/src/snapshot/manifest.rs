//! One manifest: every entry of a workspace at one moment, by path.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::error::SnapshotError;

/// What an entry is and what it holds. Paths are relative to `data/`, `/`-separated.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Node {
    Dir {
        mode: u32,
    },
    File {
        mode: u32,
        size: u64,
        /// Modification time, restored when the file is copied back out.
        mtime: (i64, i64),
        /// SHA-256 of the bytes, hex.
        object: String,
        /// What `stat` said when the bytes were read: an entry whose stat still matches
        /// is not read again.
        stat: StatKey,
    },
    Symlink {
        target: String,
    },
}

/// The parts of a `stat` answer that change whenever a file's bytes do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatKey {
    pub size: u64,
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
    pub ino: u64,
}

impl StatKey {
    pub fn of(stat: &rustix::fs::Stat) -> Self {
        Self {
            size: u64::try_from(stat.st_size).unwrap_or(0),
            mtime: (stat.st_mtime, stat.st_mtime_nsec as i64),
            ctime: (stat.st_ctime, stat.st_ctime_nsec as i64),
            ino: stat.st_ino,
        }
    }
}

/// A workspace at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// The turn whose end this records (for `head.json`: the turn the workspace matched
    /// when it was last recorded or restored; `None` for a fresh workspace).
    #[serde(default)]
    pub turn_id: Option<Uuid>,
    /// The turn number (1 for the session's first).
    #[serde(default)]
    pub turn: u64,
    /// The manifest the turn started from: `None` for a fresh workspace.
    #[serde(default)]
    pub parent: Option<Uuid>,
    /// Whether what the turn started from is unknown (an earlier snapshot was skipped).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub parent_unknown: bool,
    pub created_at_ms: u64,
    /// Set when the snapshot was skipped, and why; `entries` is then empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// Entries left out: names that are not UTF-8, and devices, sockets and FIFOs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
    pub entries: BTreeMap<String, Node>,
}

impl Manifest {
    pub fn read(path: &Path) -> Result<Self, SnapshotError> {
        let bytes = std::fs::read(path).map_err(|e| SnapshotError::io("reading", path, e))?;
        serde_json::from_slice(&bytes).map_err(|e| SnapshotError::Corrupt {
            path: path.to_path_buf(),
            message: crate::quoted::json_error(&e),
        })
    }

    /// Writes the manifest to `path` atomically (a synced temporary file renamed over it).
    pub fn write(&self, path: &Path) -> Result<(), SnapshotError> {
        self.write_file(path, true)
    }

    /// Writes the manifest as [`Manifest::write`] does, without syncing it: the caller
    /// syncs it later (see [`super::store::UnsyncedSnapshot`]).
    pub fn write_unsynced(&self, path: &Path) -> Result<(), SnapshotError> {
        self.write_file(path, false)
    }

    fn write_file(&self, path: &Path, sync: bool) -> Result<(), SnapshotError> {
        use std::io::Write;
        let bytes = serde_json::to_vec(self).map_err(|e| SnapshotError::Corrupt {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let tmp = path.with_extension(format!("tmp-{:016x}", rand::random::<u64>()));
        let written = (|| {
            let mut file = std::fs::File::create(&tmp)?;
            file.write_all(&bytes)?;
            if sync {
                file.sync_data()?;
            }
            std::fs::rename(&tmp, path)
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(SnapshotError::io("writing", path, e));
        }
        Ok(())
    }

    /// Bytes of regular files.
    pub fn file_bytes(&self) -> u64 {
        self.entries
            .values()
            .map(|node| match node {
                Node::File { size, .. } => *size,
                _ => 0,
            })
            .sum()
    }

    /// The object ids the manifest refers to.
    pub fn objects(&self) -> impl Iterator<Item = &str> {
        self.entries.values().filter_map(|node| match node {
            Node::File { object, .. } => Some(object.as_str()),
            _ => None,
        })
    }
}
