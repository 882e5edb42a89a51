//! Staging directories: where an install is unpacked and checked before it is renamed into
//! place. They live under `<root>/.staging/` (same file system as the store, so the final
//! rename is atomic) and are removed on drop, so a failed install leaves nothing behind.

use std::fs;
use std::path::{Path, PathBuf};

use super::error::BundleError;

/// A directory removed when dropped, unless it was renamed away first.
pub(crate) struct Staging {
    path: PathBuf,
}

impl Staging {
    /// Creates `<staging_root>/<uuid><suffix>`.
    pub fn create(staging_root: &Path, suffix: &str) -> Result<Self, BundleError> {
        let path = staging_root.join(format!("{}{suffix}", uuid::Uuid::new_v4()));
        fs::create_dir_all(&path)
            .map_err(|e| BundleError::io(format!("creating {}", path.display()), e))?;
        Ok(Self { path })
    }

    /// A fresh, unused path under `staging_root`, to move a directory aside into.
    pub fn reserve(staging_root: &Path, suffix: &str) -> Self {
        Self {
            path: staging_root.join(format!("{}{suffix}", uuid::Uuid::new_v4())),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        match fs::remove_dir_all(&self.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = %e, "could not remove a bundle staging directory; it is removed at the next start")
            }
        }
    }
}

/// Removes what a crash left under `staging_root` and recreates it empty.
pub(crate) fn reset(staging_root: &Path) -> Result<(), BundleError> {
    let leftovers = fs::read_dir(staging_root).map(|d| d.count()).unwrap_or(0);
    match fs::remove_dir_all(staging_root) {
        Ok(()) if leftovers > 0 => {
            tracing::info!(path = %staging_root.display(), leftovers, "removed bundle staging directories left by a crash");
        }
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        // A read-only home still serves its bundles; nothing can be staged anyway.
        Err(e) if e.kind() == std::io::ErrorKind::ReadOnlyFilesystem => {
            tracing::warn!(path = %staging_root.display(), "the bundle store is read-only: bundles can be read, not installed");
            return Ok(());
        }
        Err(e) => {
            return Err(BundleError::io(
                format!("cleaning {}", staging_root.display()),
                e,
            ));
        }
    }
    fs::create_dir_all(staging_root)
        .map_err(|e| BundleError::io(format!("creating {}", staging_root.display()), e))
}
