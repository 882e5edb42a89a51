//! What can go wrong with snapshots, with the path or turn it concerns.

use std::path::PathBuf;

use crate::error::RuntimeError;

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("{context} {}: {source}", path.display())]
    Io {
        context: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the snapshot file {} is unreadable: {message}", path.display())]
    Corrupt { path: PathBuf, message: String },
    #[error("no snapshot of the workspace was recorded at the end of turn {turn}")]
    Missing { turn: u64 },
    #[error("no workspace layers are kept for the end of turn {turn_id}")]
    NoLayers { turn_id: uuid::Uuid },
    #[error("the workspace snapshot of turn {turn} was skipped: {reason}")]
    Skipped { turn: u64, reason: String },
    #[error("the stored copy of {path} at turn {turn} is damaged ({message})")]
    Damaged {
        turn: u64,
        path: String,
        message: String,
    },
}

impl SnapshotError {
    pub(crate) fn io(
        context: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        Self::Io {
            context,
            path: path.into(),
            source,
        }
    }
}

impl From<SnapshotError> for RuntimeError {
    fn from(e: SnapshotError) -> Self {
        match e {
            SnapshotError::Io {
                context,
                path,
                source,
            } => RuntimeError::storage(format!("{context} {}", path.display()), source),
            SnapshotError::Corrupt { .. } | SnapshotError::Damaged { .. } => {
                RuntimeError::storage(e.to_string(), std::io::Error::other("damaged snapshot"))
            }
            SnapshotError::Missing { .. }
            | SnapshotError::NoLayers { .. }
            | SnapshotError::Skipped { .. } => RuntimeError::FailedPrecondition(e.to_string()),
        }
    }
}
