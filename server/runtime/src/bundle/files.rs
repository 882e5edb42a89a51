//! Which files make up a bundle, read from a directory: a project being built, a staging
//! directory being installed, or an installed bundle being exported.
//!
//! One rule for all three keeps the digest stable: every regular file except hidden entries
//! (`.git`, the store's `.odyssey-bundle.json`), `target/` and `node_modules/`. Symlinks that
//! stay inside the directory are followed and their targets taken as plain files; a symlink
//! leaving it is an error, so building never copies in something the author did not mean to
//! ship.

use std::fs::{self, File, Metadata};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use super::archive::ArchiveLimits;
use super::error::BundleError;
use super::paths::{MAX_DEPTH, is_excluded_component};

/// A file of a bundle: where it is read from and where it goes.
#[derive(Clone, Debug)]
pub(crate) struct BundleFile {
    /// Path relative to the bundle root, forward slashes.
    pub rel: String,
    /// Where the bytes are read from (a symlink's target, for followed symlinks).
    pub path: PathBuf,
    pub size: u64,
    pub executable: bool,
}

impl BundleFile {
    /// Opens the file for reading exactly `size` bytes, failing if it changed since listed.
    pub fn open(&self) -> Result<ExactReader<File>, BundleError> {
        let file = File::open(&self.path)
            .map_err(|e| BundleError::io(format!("opening {}", self.rel), e))?;
        Ok(ExactReader {
            inner: file,
            remaining: self.size,
            rel: self.rel.clone(),
        })
    }
}

/// Lists the bundle files under `root`, sorted by relative path, within `limits`.
pub(crate) fn collect_files(
    root: &Path,
    limits: &ArchiveLimits,
) -> Result<Vec<BundleFile>, BundleError> {
    let root = root
        .canonicalize()
        .map_err(|e| BundleError::io(format!("opening {}", root.display()), e))?;
    let mut walk = Walk {
        root: root.clone(),
        limits,
        files: Vec::new(),
        total: 0,
        ancestors: vec![root.clone()],
    };
    walk.dir(&root, "")?;
    let mut files = walk.files;
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(files)
}

struct Walk<'a> {
    root: PathBuf,
    limits: &'a ArchiveLimits,
    files: Vec<BundleFile>,
    total: u64,
    /// Canonical directories on the current path, to stop symlink loops.
    ancestors: Vec<PathBuf>,
}

impl Walk<'_> {
    fn dir(&mut self, dir: &Path, prefix: &str) -> Result<(), BundleError> {
        if self.ancestors.len() > MAX_DEPTH {
            return Err(BundleError::project(
                prefix,
                format!("nested more than {MAX_DEPTH} directories deep"),
            ));
        }
        let io_err = |e| BundleError::io(format!("listing {}", dir.display()), e);
        for entry in fs::read_dir(dir).map_err(io_err)? {
            let entry = entry.map_err(io_err)?;
            let name = entry.file_name().into_string().map_err(|raw| {
                BundleError::project(
                    join(prefix, &raw.to_string_lossy()),
                    "file name is not valid UTF-8",
                )
            })?;
            if is_excluded_component(&name) {
                continue;
            }
            let rel = join(prefix, &name);
            let (path, meta) = self.resolve(
                entry.path(),
                &rel,
                entry.file_type().map_err(io_err)?.is_symlink(),
            )?;
            if meta.is_dir() {
                if self.ancestors.contains(&path) {
                    return Err(BundleError::project(rel, "symlink loop"));
                }
                self.ancestors.push(path.clone());
                self.dir(&path, &rel)?;
                self.ancestors.pop();
            } else if meta.is_file() {
                self.add(rel, path, &meta)?;
            } else {
                tracing::debug!(path = %rel, "skipping a special file: bundles hold regular files only");
            }
        }
        Ok(())
    }

    /// The real location and metadata of an entry, following a symlink only if it stays inside.
    fn resolve(
        &self,
        path: PathBuf,
        rel: &str,
        is_symlink: bool,
    ) -> Result<(PathBuf, Metadata), BundleError> {
        let path = if is_symlink {
            let target = match path.canonicalize() {
                Ok(target) => target,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(BundleError::project(rel, "symlink target does not exist"));
                }
                Err(e) => return Err(BundleError::io(format!("resolving {rel}"), e)),
            };
            if !target.starts_with(&self.root) {
                return Err(BundleError::project(
                    rel,
                    "symlink points outside the project",
                ));
            }
            target
        } else {
            path
        };
        let meta = fs::metadata(&path).map_err(|e| BundleError::io(format!("reading {rel}"), e))?;
        Ok((path, meta))
    }

    fn add(&mut self, rel: String, path: PathBuf, meta: &Metadata) -> Result<(), BundleError> {
        if self.files.len() >= self.limits.max_entries {
            return Err(BundleError::project(
                rel,
                format!("a bundle holds at most {} files", self.limits.max_entries),
            ));
        }
        self.total = self.total.saturating_add(meta.len());
        if self.total > self.limits.max_total_bytes {
            return Err(BundleError::project(
                rel,
                format!(
                    "a bundle holds at most {} bytes",
                    self.limits.max_total_bytes
                ),
            ));
        }
        self.files.push(BundleFile {
            rel,
            path,
            size: meta.len(),
            executable: is_executable(meta),
        });
        Ok(())
    }
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}/{name}")
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

/// Sets the only two modes bundle files have: 0755 for executables, 0644 otherwise.
pub(crate) fn set_mode(file: &File, executable: bool) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = if executable { 0o755 } else { 0o644 };
        file.set_permissions(fs::Permissions::from_mode(mode))
    }
    #[cfg(not(unix))]
    {
        let _ = (file, executable);
        Ok(())
    }
}

/// Copies `files` under `dest`. They are not synced here: the store syncs the staging
/// directory once before it commits, so an install never points at half-written content.
pub(crate) fn copy_into(files: &[BundleFile], dest: &Path) -> Result<(), BundleError> {
    for file in files {
        let target = dest.join(&file.rel);
        let ctx = |e| BundleError::io(format!("copying {}", file.rel), e);
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent).map_err(ctx)?;
        }
        let mut out = File::create_new(&target).map_err(ctx)?;
        let mut reader = file.open()?;
        io::copy(&mut reader, &mut out).map_err(ctx)?;
        set_mode(&out, file.executable).map_err(ctx)?;
    }
    Ok(())
}

/// Reads exactly the size a file had when it was listed: the digest and tar headers are
/// written from that size, so a file that changes meanwhile must fail, not corrupt them.
pub(crate) struct ExactReader<R> {
    inner: R,
    remaining: u64,
    rel: String,
}

impl<R: Read> Read for ExactReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.remaining == 0 {
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(io::Error::other(format!(
                    "{} grew while it was being read",
                    self.rel
                ))),
            };
        }
        let want = usize::try_from(self.remaining)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let n = self.inner.read(&mut buf[..want])?;
        if n == 0 && want > 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("{} shrank while it was being read", self.rel),
            ));
        }
        self.remaining -= n as u64;
        Ok(n)
    }
}
