//! The syncs a session created without them still owes (see
//! [`SessionStore::create_deferred`](super::SessionStore::create_deferred)).
//!
//! A sub-agent's session is created on the path of its parent's `Agent` call, and its
//! three syncs (the record's data, the session folder's entries, the folder's own entry in
//! the sessions folder) one after another cost the parent more than the rest of the call.
//! Nothing depends on them before the session's first durability point (its first turn's
//! end): until then nothing of the session is durable anyway, and a crash before it leaves
//! at most a session with no turn (after a power loss, possibly a folder whose record was
//! never written, which [`is_unfinished_creation`] recognises and the store clears). So
//! they run together, once, in the background or with the log's first sync, whichever
//! comes first, and that sync does not complete before they have.

use std::io;
use std::path::{Path, PathBuf};

use tokio::sync::OnceCell;

use crate::error::{Result, RuntimeError};

pub(crate) struct PendingCreation {
    /// The record file, the session's folder and the sessions folder.
    paths: [PathBuf; 3],
    /// Set once the syncs succeeded; a failed attempt leaves it unset, so the next
    /// durability point tries again (and fails, as long as the disk does).
    done: OnceCell<()>,
}

impl PendingCreation {
    pub fn new(record: PathBuf, dir: PathBuf, root: PathBuf) -> Self {
        Self {
            paths: [record, dir, root],
            done: OnceCell::new(),
        }
    }

    /// Makes the creation durable: the first call runs the three syncs at once (each on a
    /// blocking thread, so the file system can commit them together); calls meanwhile
    /// wait for it, later ones return at once.
    pub async fn sync(&self) -> Result<()> {
        self.done
            .get_or_try_init(|| async {
                let syncs = self.paths.clone().map(|path| {
                    tokio::task::spawn_blocking(move || {
                        sync_path(&path).map_err(|e| sync_error(&path, e))
                    })
                });
                let mut outcome = Ok(());
                for (joined, path) in futures::future::join_all(syncs)
                    .await
                    .into_iter()
                    .zip(&self.paths)
                {
                    let synced =
                        joined.unwrap_or_else(|e| Err(sync_error(path, io::Error::other(e))));
                    if outcome.is_ok() {
                        outcome = synced;
                    }
                }
                outcome
            })
            .await
            .copied()
    }

    /// [`sync`](Self::sync) on the calling thread (no tokio runtime to wait in).
    pub fn sync_blocking(&self) -> Result<()> {
        if self.done.initialized() {
            return Ok(());
        }
        for path in &self.paths {
            sync_path(path).map_err(|e| sync_error(path, e))?;
        }
        // A concurrent `sync` may have finished first: it is durable either way.
        let _ = self.done.set(());
        Ok(())
    }

    /// Whether the creation is durable (its syncs ran and succeeded).
    pub fn is_durable(&self) -> bool {
        self.done.initialized()
    }
}

fn sync_error(path: &Path, e: io::Error) -> RuntimeError {
    RuntimeError::storage(format!("sync {}", path.display()), e)
}

/// `fsync` of a file or folder (a folder's, to make the entries in it durable; a file's
/// data and size with `fdatasync`).
fn sync_path(path: &Path) -> io::Result<()> {
    let file = std::fs::File::open(path)?;
    if file.metadata()?.is_dir() {
        file.sync_all()
    } else {
        file.sync_data()
    }
}

/// A session folder a crash left before its creation was durable: its record never
/// reached the disk (an empty file, as a file system that allocates on write-back leaves
/// a file whose data was not written), and its log holds nothing. Nothing was ever
/// durable in it, so it is cleared like a half-created staging folder, not quarantined.
pub(crate) fn is_unfinished_creation(record: &Path, log: &Path) -> bool {
    let empty = |path: &Path| match std::fs::metadata(path) {
        Ok(meta) => meta.len() == 0,
        Err(e) => e.kind() == io::ErrorKind::NotFound,
    };
    matches!(std::fs::metadata(record), Ok(meta) if meta.len() == 0) && empty(log)
}
