//! The content-addressed object store: one read-only file per distinct file content,
//! named by its SHA-256. Objects are written once (a temporary file renamed in) and never
//! changed, so any number of manifests, and the forks of a session, can share them.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::error::SnapshotError;

const CHUNK: usize = 256 * 1024;

#[derive(Clone, Debug)]
pub struct ObjectStore {
    dir: PathBuf,
}

impl ObjectStore {
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    pub fn path(&self, id: &str) -> PathBuf {
        let (prefix, rest) = id.split_at(id.len().min(2));
        self.dir.join(prefix).join(rest)
    }

    /// Stores what `file` holds (read to its end) and answers its id, its length, and the
    /// object's path when it is new (not yet synced: see [`ObjectStore::sync`]). The bytes
    /// are hashed while they are copied, so a file is read once.
    pub fn put(&self, file: &mut File) -> Result<(String, u64, Option<PathBuf>), SnapshotError> {
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| SnapshotError::io("creating", &self.dir, e))?;
        let tmp = self
            .dir
            .join(format!(".tmp-{:016x}", rand::random::<u64>()));
        let result = (|| -> io::Result<(String, u64)> {
            let mut out = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o400)
                .open(&tmp)?;
            let mut hasher = Sha256::new();
            let mut buf = vec![0u8; CHUNK];
            let mut total = 0u64;
            loop {
                let n = match file.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                };
                hasher.update(&buf[..n]);
                out.write_all(&buf[..n])?;
                total += n as u64;
            }
            Ok((hex::encode(hasher.finalize()), total))
        })();
        let (id, size) = match result {
            Ok(done) => done,
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(SnapshotError::io("storing a copy in", &self.dir, e));
            }
        };
        let target = self.path(&id);
        if target.is_file() {
            let _ = std::fs::remove_file(&tmp);
            return Ok((id, size, None));
        }
        let placed = target
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::rename(&tmp, &target));
        if let Err(e) = placed {
            let _ = std::fs::remove_file(&tmp);
            return Err(SnapshotError::io("storing", &target, e));
        }
        Ok((id, size, Some(target)))
    }

    /// Makes new objects durable before a manifest names them: each one's data when they
    /// are few, the whole file system at once when they are many (one sync instead of
    /// thousands).
    pub fn sync(&self, fresh: &[PathBuf]) -> Result<(), SnapshotError> {
        const ONE_BY_ONE: usize = 64;
        if fresh.len() > ONE_BY_ONE {
            let dir =
                File::open(&self.dir).map_err(|e| SnapshotError::io("opening", &self.dir, e))?;
            return rustix::fs::syncfs(&dir)
                .map_err(|e| SnapshotError::io("syncing", &self.dir, e.into()));
        }
        for path in fresh {
            File::open(path)
                .and_then(|f| f.sync_data())
                .map_err(|e| SnapshotError::io("syncing", path, e))?;
        }
        Ok(())
    }

    /// Makes `id` of `other` available here: a hard link (objects are never written, so
    /// sharing the inode is safe), else a copy.
    pub fn adopt(&self, other: &ObjectStore, id: &str) -> Result<(), SnapshotError> {
        let target = self.path(id);
        if target.is_file() {
            return Ok(());
        }
        let source = other.path(id);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| SnapshotError::io("creating", parent, e))?;
        }
        if std::fs::hard_link(&source, &target).is_ok() {
            return Ok(());
        }
        std::fs::copy(&source, &target)
            .and_then(|_| std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o400)))
            .map(|_| ())
            .map_err(|e| SnapshotError::io("copying", &source, e))
    }

    /// Opens an object for reading, checking its length.
    pub fn open(&self, id: &str, size: u64) -> io::Result<File> {
        let file = File::open(self.path(id))?;
        let len = file.metadata()?.len();
        if len != size {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("holds {len} bytes, {size} expected"),
            ));
        }
        Ok(file)
    }

    /// Every object id stored, with its length.
    pub fn list(&self) -> Result<Vec<(String, u64)>, SnapshotError> {
        let mut found = Vec::new();
        let prefixes = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(found),
            Err(e) => return Err(SnapshotError::io("listing", &self.dir, e)),
        };
        for prefix in prefixes.flatten() {
            let name = prefix.file_name().to_string_lossy().into_owned();
            if name.len() != 2 {
                continue;
            }
            let Ok(entries) = std::fs::read_dir(prefix.path()) else {
                continue;
            };
            for entry in entries.flatten() {
                let rest = entry.file_name().to_string_lossy().into_owned();
                let len = entry.metadata().map(|m| m.len()).unwrap_or(0);
                found.push((format!("{name}{rest}"), len));
            }
        }
        Ok(found)
    }

    pub fn remove(&self, id: &str) {
        let _ = std::fs::remove_file(self.path(id));
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}
