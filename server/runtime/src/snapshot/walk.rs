//! Walking a workspace into a manifest. Every folder is opened from its parent's
//! descriptor with `O_NOFOLLOW`, so a link is recorded as a link and never followed, and
//! a folder swapped for a link meanwhile is refused rather than read.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{AtFlags, Dir, Mode, OFlags};

use super::error::SnapshotError;
use super::manifest::{Manifest, Node, StatKey};
use super::objects::ObjectStore;
use crate::sandbox::beneath::{self, Kind};

/// How large a workspace may be to be recorded.
#[derive(Clone, Copy, Debug)]
pub struct WalkLimits {
    pub max_files: usize,
    pub max_bytes: u64,
}

/// What a walk found.
pub enum Walked {
    Recorded {
        manifest: Manifest,
        /// Files whose bytes were read (new or changed since `base`), and their bytes.
        hashed_files: u64,
        hashed_bytes: u64,
        /// Objects this walk stored, not yet synced.
        fresh: Vec<std::path::PathBuf>,
    },
    TooLarge(String),
}

/// Records the workspace at `data` (a missing folder is an empty workspace), reusing the
/// object ids of `base` for entries whose stat is unchanged.
pub fn walk(
    data: &Path,
    base: &Manifest,
    objects: &ObjectStore,
    limits: WalkLimits,
) -> Result<Walked, SnapshotError> {
    let mut manifest = Manifest::default();
    let root = match rustix::fs::open(
        data,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => {
            return Ok(Walked::Recorded {
                manifest,
                hashed_files: 0,
                hashed_bytes: 0,
                fresh: Vec::new(),
            });
        }
        Err(e) => return Err(SnapshotError::io("opening", data, e.into())),
    };
    let (mut hashed_files, mut hashed_bytes, mut total_bytes) = (0u64, 0u64, 0u64);
    let mut fresh = Vec::new();
    let mut pending: Vec<(String, OwnedFd)> = vec![(String::new(), root)];
    let mut entries = BTreeMap::new();
    while let Some((rel, dir)) = pending.pop() {
        let listing = Dir::read_from(&dir).map_err(|e| io_at("listing", data, &rel, e.into()))?;
        for entry in listing {
            let entry = entry.map_err(|e| io_at("listing", data, &rel, e.into()))?;
            let raw = entry.file_name().to_bytes();
            if raw == b"." || raw == b".." {
                continue;
            }
            let name = OsStr::from_bytes(raw);
            let Some(utf8) = name.to_str() else {
                manifest.left_out.push(join(&rel, &name.to_string_lossy()));
                continue;
            };
            let path = join(&rel, utf8);
            if entries.len() >= limits.max_files {
                return Ok(Walked::TooLarge(format!(
                    "the workspace holds more than {} entries",
                    limits.max_files
                )));
            }
            let stat = match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) => stat,
                // Gone since the listing: it is not part of the workspace any more.
                Err(rustix::io::Errno::NOENT) => continue,
                Err(e) => return Err(io_at("reading", data, &path, e.into())),
            };
            let mode = stat.st_mode & 0o7777;
            match Kind::of_stat(&stat) {
                Kind::Dir => {
                    let child = beneath::open_child_dir(&dir, name)
                        .map_err(|e| io_at("opening", data, &path, e))?;
                    entries.insert(path.clone(), Node::Dir { mode });
                    pending.push((path, child));
                }
                Kind::Symlink => {
                    let target = rustix::fs::readlinkat(&dir, name, Vec::new())
                        .map_err(|e| io_at("reading the link", data, &path, e.into()))?;
                    entries.insert(
                        path,
                        Node::Symlink {
                            target: target.to_string_lossy().into_owned(),
                        },
                    );
                }
                Kind::File => {
                    let key = StatKey::of(&stat);
                    total_bytes += key.size;
                    if total_bytes > limits.max_bytes {
                        return Ok(Walked::TooLarge(format!(
                            "the workspace's files hold more than {} bytes",
                            limits.max_bytes
                        )));
                    }
                    let unchanged = match base.entries.get(&path) {
                        Some(Node::File {
                            stat: old, object, ..
                        // The head's objects are never swept, so its ids stand.
                        }) if *old == key => Some(object.clone()),
                        _ => None,
                    };
                    let (object, key) = match unchanged {
                        Some(object) => (object, key),
                        None => {
                            let (mut file, opened) = beneath::open_child_file(&dir, name)
                                .map_err(|e| io_at("opening", data, &path, e))?;
                            if Kind::of_stat(&opened) != Kind::File {
                                manifest.left_out.push(path);
                                continue;
                            }
                            let (object, size, new) = objects.put(&mut file)?;
                            fresh.extend(new);
                            hashed_files += 1;
                            hashed_bytes += size;
                            // The stat of the descriptor read, with the length read: if the
                            // file changed while it was read, the next walk reads it again.
                            let mut key = StatKey::of(&opened);
                            key.size = size;
                            (object, key)
                        }
                    };
                    entries.insert(
                        path,
                        Node::File {
                            mode,
                            size: key.size,
                            mtime: key.mtime,
                            object,
                            stat: key,
                        },
                    );
                }
                Kind::Other => manifest.left_out.push(path),
            }
        }
    }
    manifest.entries = entries;
    Ok(Walked::Recorded {
        manifest,
        hashed_files,
        hashed_bytes,
        fresh,
    })
}

fn join(rel: &str, name: &str) -> String {
    if rel.is_empty() {
        name.to_owned()
    } else {
        format!("{rel}/{name}")
    }
}

fn io_at(context: &'static str, data: &Path, rel: &str, e: io::Error) -> SnapshotError {
    SnapshotError::io(context, data.join(rel), e)
}
