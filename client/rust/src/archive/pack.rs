//! Packing a project into a deterministic archive: regular files only, sorted by path,
//! mtime 0, uid/gid 0, mode 0644 (0755 for executables). The same folder always packs to
//! the same bytes, so retrying a build never looks like a content change.

use std::fs::{self, File, Metadata};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;

use super::paths::{is_excluded_component, normalize_entry};
use crate::error::ClientError;

/// Packs the project folder `dir` as tar + gzip, ready for BuildBundle.
///
/// Hidden entries, `target/` and `node_modules/` are skipped at any depth. A symlink is
/// followed when its target stays inside the project (and packed as a plain file); one
/// pointing outside, a dangling one or a loop is an error rather than a silent omission.
pub fn pack_project(dir: &Path) -> Result<Vec<u8>, ClientError> {
    let root =
        fs::canonicalize(dir).map_err(|e| ClientError::io("cannot open project folder", dir, e))?;
    let meta =
        fs::metadata(&root).map_err(|e| ClientError::io("cannot open project folder", dir, e))?;
    if !meta.is_dir() {
        return Err(ClientError::Unpackable {
            path: dir.to_path_buf(),
            reason: "not a folder",
        });
    }
    let mut walk = Walk {
        root: &root,
        ancestors: vec![root.clone()],
        files: Vec::new(),
    };
    walk.dir(&root, "")?;
    let mut files = walk.files;
    files.sort_by(|a, b| a.rel.cmp(&b.rel));

    let mut writer = Writer::new();
    for file in &files {
        let mut source = File::open(&file.source)
            .map_err(|e| ClientError::io("cannot read", &file.source, e))?;
        // The size comes from the open file, not the earlier walk, so a file that changes
        // size in between still produces a well-formed entry.
        let size = source
            .metadata()
            .map_err(|e| ClientError::io("cannot read", &file.source, e))?
            .len();
        writer.add(&file.rel, size, file.executable, &mut source)?;
    }
    writer.finish()
}

/// Packs in-memory files (relative path, contents) the same way as [`pack_project`].
/// Paths must be relative, without `..`; excluded names are refused rather than skipped,
/// since the caller named them on purpose.
pub fn pack_files(files: &[(&str, &[u8])]) -> Result<Vec<u8>, ClientError> {
    let mut entries = Vec::with_capacity(files.len());
    for (raw, data) in files {
        let rel = normalize_entry(raw)
            .map_err(|reason| ClientError::UnsafeEntry {
                entry: (*raw).to_owned(),
                reason,
            })?
            .ok_or_else(|| ClientError::UnsafeEntry {
                entry: (*raw).to_owned(),
                reason: "does not name a file",
            })?;
        if rel.split('/').any(is_excluded_component) {
            return Err(ClientError::UnsafeEntry {
                entry: rel,
                reason: "hidden entries, target/ and node_modules/ are never packed",
            });
        }
        entries.push((rel, *data));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    if let Some(pair) = entries.windows(2).find(|pair| pair[0].0 == pair[1].0) {
        return Err(ClientError::UnsafeEntry {
            entry: pair[0].0.clone(),
            reason: "appears more than once",
        });
    }
    let mut writer = Writer::new();
    for (rel, data) in entries {
        writer.add(&rel, data.len() as u64, false, data)?;
    }
    writer.finish()
}

/// One file found in the project.
struct Found {
    rel: String,
    source: PathBuf,
    executable: bool,
}

struct Walk<'a> {
    root: &'a Path,
    /// Canonical folders on the current path, to stop symlink loops.
    ancestors: Vec<PathBuf>,
    files: Vec<Found>,
}

impl Walk<'_> {
    fn dir(&mut self, dir: &Path, prefix: &str) -> Result<(), ClientError> {
        let entries = fs::read_dir(dir).map_err(|e| ClientError::io("cannot list", dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| ClientError::io("cannot list", dir, e))?;
            let path = entry.path();
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                return Err(ClientError::Unpackable {
                    path,
                    reason: "the name is not valid UTF-8",
                });
            };
            if is_excluded_component(&name) {
                continue;
            }
            let rel = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            let file_type = entry
                .file_type()
                .map_err(|e| ClientError::io("cannot inspect", &path, e))?;
            let (real, meta) = if file_type.is_symlink() {
                self.follow(&path)?
            } else {
                let meta = entry
                    .metadata()
                    .map_err(|e| ClientError::io("cannot inspect", &path, e))?;
                (path.clone(), meta)
            };
            if meta.is_dir() {
                let canonical = fs::canonicalize(&real)
                    .map_err(|e| ClientError::io("cannot open", &path, e))?;
                if self.ancestors.contains(&canonical) {
                    return Err(ClientError::Unpackable {
                        path,
                        reason: "symlink loop",
                    });
                }
                self.ancestors.push(canonical);
                self.dir(&real, &rel)?;
                self.ancestors.pop();
            } else if meta.is_file() {
                self.files.push(Found {
                    rel,
                    source: real,
                    executable: is_executable(&meta),
                });
            } else {
                return Err(ClientError::Unpackable {
                    path,
                    reason: "not a regular file or folder (sockets, FIFOs and devices cannot be packed)",
                });
            }
        }
        Ok(())
    }

    /// Resolves a symlink, refusing one that leaves the project or points nowhere.
    fn follow(&self, link: &Path) -> Result<(PathBuf, Metadata), ClientError> {
        let target = fs::canonicalize(link).map_err(|_| ClientError::Unpackable {
            path: link.to_path_buf(),
            reason: "symlink target does not exist",
        })?;
        if !target.starts_with(self.root) {
            return Err(ClientError::Unpackable {
                path: link.to_path_buf(),
                reason: "symlink points outside the project",
            });
        }
        let meta =
            fs::metadata(&target).map_err(|e| ClientError::io("cannot inspect", &target, e))?;
        Ok((target, meta))
    }
}

#[cfg(unix)]
fn is_executable(meta: &Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_meta: &Metadata) -> bool {
    false
}

/// A tar + gzip writer with fixed headers.
struct Writer {
    tar: tar::Builder<GzEncoder<Vec<u8>>>,
}

impl Writer {
    fn new() -> Self {
        let mut tar = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::default()));
        tar.mode(tar::HeaderMode::Deterministic);
        Self { tar }
    }

    fn add(
        &mut self,
        rel: &str,
        size: u64,
        executable: bool,
        data: impl Read,
    ) -> Result<(), ClientError> {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(size);
        header.set_mode(if executable { 0o755 } else { 0o644 });
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        let exact = Exact {
            inner: data.take(size),
            remaining: size,
        };
        self.tar
            .append_data(&mut header, rel, exact)
            .map_err(ClientError::Archive)
    }

    fn finish(self) -> Result<Vec<u8>, ClientError> {
        let gzip = self.tar.into_inner().map_err(ClientError::Archive)?;
        gzip.finish().map_err(ClientError::Archive)
    }
}

/// Yields exactly the size written in the header: `take` stops a file that grew, and a file
/// that shrank while packing is an error. tar itself would pad nothing and write a corrupt
/// archive.
struct Exact<R> {
    inner: R,
    remaining: u64,
}

impl<R: Read> Read for Exact<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 && self.remaining > 0 && !buf.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "a file shrank while it was being packed",
            ));
        }
        self.remaining -= n as u64;
        Ok(n)
    }
}
