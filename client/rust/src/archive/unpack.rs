//! Unpacking an archive that came over the network into a user's folder. Every entry is
//! checked before anything is written, so a bad archive leaves no half-written tree:
//! no absolute paths, no `..`, no links, no devices, nothing written over an existing file,
//! and a cap on the inflated size so a gzip bomb stops while it inflates.

use std::collections::BTreeSet;
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use flate2::read::GzDecoder;

use super::paths::normalize_entry;
use crate::error::ClientError;

/// Most bytes an archive may inflate to. Scaffolds and bundles are far smaller; the server
/// refuses bundles past 256 MiB of content, so nothing legitimate is near this.
const MAX_INFLATED_BYTES: u64 = 512 * 1024 * 1024;

/// A checked entry, held in memory until the whole archive has passed.
enum Entry {
    Dir(String),
    File {
        rel: String,
        data: Vec<u8>,
        executable: bool,
    },
}

/// Unpacks a tar + gzip `archive` under `dir` (created if missing) and returns the
/// relative paths of the files written, in archive order.
///
/// Refuses absolute paths, `..`, symbolic and hard links, devices and FIFOs, duplicate
/// entries, and files that already exist under `dir`; in all those cases nothing is written.
pub fn unpack_archive(archive: &[u8], dir: &Path) -> Result<Vec<String>, ClientError> {
    let entries = read_entries(archive)?;
    for entry in &entries {
        if let Entry::File { rel, .. } = entry {
            let target = dir.join(rel);
            if fs::symlink_metadata(&target).is_ok() {
                return Err(ClientError::io(
                    "refusing to overwrite",
                    target,
                    io::Error::from(io::ErrorKind::AlreadyExists),
                ));
            }
        }
    }
    fs::create_dir_all(dir).map_err(|e| ClientError::io("cannot create", dir, e))?;
    let mut written = Vec::new();
    for entry in entries {
        match entry {
            Entry::Dir(rel) => {
                let target = dir.join(&rel);
                fs::create_dir_all(&target)
                    .map_err(|e| ClientError::io("cannot create", target, e))?;
            }
            Entry::File {
                rel,
                data,
                executable,
            } => {
                write_file(&dir.join(&rel), &data, executable)?;
                written.push(rel);
            }
        }
    }
    Ok(written)
}

/// Reads and checks every entry without touching the disk.
fn read_entries(archive: &[u8]) -> Result<Vec<Entry>, ClientError> {
    let inflated = GzDecoder::new(archive).take(MAX_INFLATED_BYTES + 1);
    let mut tar = tar::Archive::new(inflated);
    let mut entries = Vec::new();
    let mut files = BTreeSet::new();
    let mut dirs = BTreeSet::new();
    let mut total = 0u64;
    for entry in tar.entries().map_err(ClientError::Archive)? {
        let mut entry = entry.map_err(ClientError::Archive)?;
        let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let refuse = |reason: &'static str| ClientError::UnsafeEntry {
            entry: raw.clone(),
            reason,
        };
        let path = std::str::from_utf8(&entry.path_bytes())
            .map_err(|_| refuse("the path is not valid UTF-8"))?
            .to_owned();
        let rel = normalize_entry(&path).map_err(refuse)?;
        match entry.header().entry_type() {
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                let rel = rel.ok_or_else(|| refuse("a file cannot be the archive root"))?;
                if dirs.contains(&rel) || !files.insert(rel.clone()) {
                    return Err(refuse("appears more than once"));
                }
                total = total.saturating_add(entry.size());
                if total > MAX_INFLATED_BYTES {
                    return Err(refuse("the archive inflates past 512 MiB"));
                }
                let executable = entry
                    .header()
                    .mode()
                    .map(|m| m & 0o111 != 0)
                    .unwrap_or(false);
                let capacity = usize::try_from(entry.size()).unwrap_or(0);
                let mut data = Vec::with_capacity(capacity);
                entry.read_to_end(&mut data).map_err(ClientError::Archive)?;
                claim_parents(&rel, &files, &mut dirs).map_err(refuse)?;
                entries.push(Entry::File {
                    rel,
                    data,
                    executable,
                });
            }
            tar::EntryType::Directory => {
                if let Some(rel) = rel {
                    if files.contains(&rel) {
                        return Err(refuse("is both a file and a folder"));
                    }
                    claim_parents(&rel, &files, &mut dirs).map_err(refuse)?;
                    dirs.insert(rel.clone());
                    entries.push(Entry::Dir(rel));
                }
            }
            tar::EntryType::XGlobalHeader | tar::EntryType::XHeader => {}
            tar::EntryType::Symlink => return Err(refuse("symbolic links are not allowed")),
            tar::EntryType::Link => return Err(refuse("hard links are not allowed")),
            tar::EntryType::Char | tar::EntryType::Block => {
                return Err(refuse("devices are not allowed"));
            }
            tar::EntryType::Fifo => return Err(refuse("FIFOs are not allowed")),
            _ => return Err(refuse("unsupported entry type")),
        }
    }
    Ok(entries)
}

/// Records the folders above `rel`, refusing a path that runs through a file.
fn claim_parents(
    rel: &str,
    files: &BTreeSet<String>,
    dirs: &mut BTreeSet<String>,
) -> Result<(), &'static str> {
    let mut end = 0;
    while let Some(pos) = rel[end..].find('/') {
        let parent = &rel[..end + pos];
        if files.contains(parent) {
            return Err("lies inside an entry that is a file");
        }
        dirs.insert(parent.to_owned());
        end += pos + 1;
    }
    Ok(())
}

fn write_file(target: &Path, data: &[u8], executable: bool) -> Result<(), ClientError> {
    if let Some(parent) = target.parent() {
        fs::create_dir_all(parent).map_err(|e| ClientError::io("cannot create", parent, e))?;
    }
    let mut options = OpenOptions::new();
    // `create_new` never follows a symlink planted at the target and never overwrites.
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(if executable { 0o755 } else { 0o644 });
    }
    #[cfg(not(unix))]
    let _ = executable;
    let mut file = options
        .open(target)
        .map_err(|e| ClientError::io("cannot create", target, e))?;
    file.write_all(data)
        .map_err(|e| ClientError::io("cannot write", target, e))?;
    file.sync_all()
        .map_err(|e| ClientError::io("cannot write", PathBuf::from(target), e))
}
