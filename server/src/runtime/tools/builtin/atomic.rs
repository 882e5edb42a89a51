//! Replacing a file's content all at once, so a crash or a full disk never leaves a
//! half-written file where the model (or the user) expects the old or the new one.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

/// Why a file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("cannot create the folders of `{path}`: {source}")]
    CreateParents {
        path: String,
        #[source]
        source: io::Error,
    },

    #[error("cannot write `{path}`: {source}")]
    Write {
        path: String,
        #[source]
        source: io::Error,
    },
}

/// Writes `bytes` to `real` through a temporary file in the same folder and a rename: the
/// rename replaces the directory entry (never follows a link there) and is atomic on one
/// file system. An existing file keeps its permissions (an edited script stays
/// executable). `shown` names the file in errors.
pub(crate) fn write_atomic(real: &Path, bytes: &[u8], shown: &str) -> Result<(), WriteError> {
    let write_error = |source| WriteError::Write {
        path: shown.to_owned(),
        source,
    };
    let parent = real
        .parent()
        .ok_or_else(|| write_error(io::Error::other("it has no parent folder")))?;
    fs::create_dir_all(parent).map_err(|source| WriteError::CreateParents {
        path: shown.to_owned(),
        source,
    })?;
    let permissions = fs::metadata(real).ok().map(|meta| meta.permissions());
    let mut temp = tempfile::Builder::new()
        .prefix(".odyssey-write-")
        .tempfile_in(parent)
        .map_err(write_error)?;
    temp.write_all(bytes).map_err(write_error)?;
    if let Some(permissions) = permissions {
        temp.as_file()
            .set_permissions(permissions)
            .map_err(write_error)?;
    }
    temp.as_file().sync_all().map_err(write_error)?;
    temp.persist(real).map_err(|e| write_error(e.error))?;
    // The rename is durable once the folder is synced; failing that is not worth failing
    // the call for, the data itself is on disk.
    if let Ok(dir) = fs::File::open(parent) {
        let _ = dir.sync_all();
    }
    Ok(())
}

impl From<WriteError> for crate::runtime::tools::ToolOutput {
    fn from(e: WriteError) -> Self {
        Self::error(e.to_string())
    }
}

/// Gives a file written inside the workspace (and the folders created for it) the
/// workspace's owner. When the server runs as root, sandboxed processes run as an
/// unprivileged user that owns the workspace; a root-owned file there would be one
/// they cannot edit. Without root nothing changes (the file is already the server's).
pub(crate) fn adopt_workspace_owner(real: &Path, workspace: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(owner) = fs::metadata(workspace) else {
        return;
    };
    let (uid, gid) = (owner.uid(), owner.gid());
    for path in real
        .ancestors()
        .take_while(|p| *p != workspace && p.starts_with(workspace))
    {
        let needs = fs::symlink_metadata(path).is_ok_and(|m| m.uid() != uid || m.gid() != gid);
        if needs {
            // Best effort: an unprivileged server cannot chown, and needs not.
            let _ = std::os::unix::fs::lchown(path, Some(uid), Some(gid));
        }
    }
}
