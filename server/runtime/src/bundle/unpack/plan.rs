//! The first pass over an archive: every entry is checked against the rules and the limits,
//! its data read (and dropped) to prove the archive holds it, and nothing is written. What
//! comes out is the plan the second pass follows.

use std::collections::HashSet;
use std::io::{self, Read};
use std::path::Path;

use super::super::archive::ArchiveLimits;
use super::super::error::BundleError;
use super::super::paths::{MAX_DEPTH, is_excluded};
use super::{ArchiveKind, EntryError, entry_name};

/// The longest name one path component may have (Linux's NAME_MAX): a longer one could
/// only fail when written.
const MAX_NAME_BYTES: usize = 255;
/// The longest entry path, well within PATH_MAX once under the staging directory.
const MAX_PATH_BYTES: usize = 1024;

/// What the second pass does with one entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Action {
    /// Nothing: the root itself, a skipped project entry, a global header.
    Skip,
    Dir(String),
    File {
        rel: String,
        size: u64,
        executable: bool,
    },
}

/// The checked entries of an archive, by position.
pub(super) struct Plan {
    actions: Vec<Action>,
}

impl Plan {
    /// The action for the entry at `position` (from 1); `None` past the planned entries.
    pub fn get(&self, position: usize) -> Option<&Action> {
        self.actions.get(position.checked_sub(1)?)
    }
}

/// Checks entries one by one, keeping what the limits count.
pub(super) struct Planner<'a> {
    kind: ArchiveKind,
    limits: &'a ArchiveLimits,
    total: u64,
    files: HashSet<String>,
    dirs: HashSet<String>,
    actions: Vec<Action>,
}

impl<'a> Planner<'a> {
    pub fn new(kind: ArchiveKind, limits: &'a ArchiveLimits) -> Self {
        Self {
            kind,
            limits,
            total: 0,
            files: HashSet::new(),
            dirs: HashSet::new(),
            actions: Vec::new(),
        }
    }

    pub fn finish(self) -> Plan {
        Plan {
            actions: self.actions,
        }
    }

    /// Checks the entry at `position` (from 1) and plans it, or refuses the archive.
    pub fn entry<R: Read>(
        &mut self,
        position: usize,
        entry: &mut tar::Entry<'_, R>,
    ) -> Result<(), EntryError> {
        let raw = entry_name(&entry.path_bytes(), position);
        let action = self
            .check(position, entry)
            .map_err(|message| EntryError::Bundle(BundleError::archive(raw.as_str(), message)))?;
        if let Action::File { size, .. } = action {
            read_data(&raw, size, entry)?;
        }
        self.actions.push(action);
        Ok(())
    }

    /// The entry's action, or the message refusing it.
    fn check<R: Read>(
        &mut self,
        position: usize,
        entry: &tar::Entry<'_, R>,
    ) -> Result<Action, String> {
        if position > self.limits.max_entries {
            return Err(format!(
                "the archive has more than {} entries",
                self.limits.max_entries
            ));
        }
        let rel = normalize_entry(&entry.path_bytes())?;
        let entry_type = entry.header().entry_type();
        let size = entry.size();
        self.total = self.total.saturating_add(size);
        if size > self.limits.max_total_bytes || self.total > self.limits.max_total_bytes {
            return Err(format!(
                "the archive holds more than {} bytes uncompressed",
                self.limits.max_total_bytes
            ));
        }
        let Some(rel) = rel else {
            return Ok(Action::Skip);
        };
        if is_excluded(&rel) {
            return match self.kind {
                ArchiveKind::Project => Ok(Action::Skip),
                ArchiveKind::Bundle => Err(
                    "hidden entries, target/ and node_modules/ are never part of a built bundle"
                        .to_owned(),
                ),
            };
        }
        let is_dir = entry_type == tar::EntryType::Directory;
        // A directory holds entries one level further down: `collect_files` enters at most
        // MAX_DEPTH - 1 levels, so files have at most MAX_DEPTH components.
        if rel.split('/').count() + usize::from(is_dir) > MAX_DEPTH {
            return Err(format!("nested more than {MAX_DEPTH} levels deep"));
        }
        match entry_type {
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                self.claim_file(&rel)?;
                let executable = entry
                    .header()
                    .mode()
                    .map(|m| m & 0o111 != 0)
                    .unwrap_or(false);
                Ok(Action::File {
                    rel,
                    size,
                    executable,
                })
            }
            tar::EntryType::Directory => {
                self.claim_dir(&rel)?;
                Ok(Action::Dir(rel))
            }
            tar::EntryType::XGlobalHeader => Ok(Action::Skip),
            tar::EntryType::Symlink => {
                Err("symbolic links are not allowed in bundle archives".to_owned())
            }
            tar::EntryType::Link => Err("hard links are not allowed in bundle archives".to_owned()),
            tar::EntryType::Char | tar::EntryType::Block => {
                Err("device entries are not allowed in bundle archives".to_owned())
            }
            tar::EntryType::Fifo => {
                Err("FIFO entries are not allowed in bundle archives".to_owned())
            }
            other => Err(format!(
                "unsupported entry type {:?}",
                other.as_byte() as char
            )),
        }
    }

    /// Records a file path, refusing duplicates and clashes with directories.
    fn claim_file(&mut self, rel: &str) -> Result<(), String> {
        if self.files.contains(rel) || self.dirs.contains(rel) {
            return Err("appears more than once in the archive".to_owned());
        }
        self.claim_parents(rel)?;
        self.files.insert(rel.to_owned());
        Ok(())
    }

    fn claim_dir(&mut self, rel: &str) -> Result<(), String> {
        if self.files.contains(rel) {
            return Err("is both a file and a directory in the archive".to_owned());
        }
        self.claim_parents(rel)?;
        self.dirs.insert(rel.to_owned());
        Ok(())
    }

    fn claim_parents(&mut self, rel: &str) -> Result<(), String> {
        let mut end = 0;
        while let Some(pos) = rel[end..].find('/') {
            let parent = &rel[..end + pos];
            if self.files.contains(parent) {
                return Err(format!(
                    "is inside `{parent}`, which is a file in the archive"
                ));
            }
            self.dirs.insert(parent.to_owned());
            end += pos + 1;
        }
        Ok(())
    }
}

/// Reads a file's data to its end, proving the archive holds all `size` bytes of it.
fn read_data(raw: &str, size: u64, data: &mut impl Read) -> Result<(), EntryError> {
    let read =
        io::copy(data, &mut io::sink()).map_err(|e| EntryError::Stream(raw.to_owned(), e))?;
    if read != size {
        return Err(EntryError::Bundle(BundleError::archive(
            raw,
            "the archive ends inside this entry",
        )));
    }
    Ok(())
}

/// Checks an entry path and normalizes it to `a/b/c`; `Ok(None)` for the root itself (`./`).
fn normalize_entry(raw: &[u8]) -> Result<Option<String>, &'static str> {
    let text = std::str::from_utf8(raw).map_err(|_| "entry path is not valid UTF-8")?;
    if text.starts_with('/') || text.starts_with('\\') || Path::new(text).is_absolute() {
        return Err("absolute paths are not allowed in bundle archives");
    }
    if text.contains('\\') {
        return Err("backslashes are not allowed in archive paths");
    }
    if text.contains('\0') {
        return Err("NUL characters are not allowed in archive paths");
    }
    if text.len() > MAX_PATH_BYTES {
        return Err("archive paths are limited to 1024 bytes");
    }
    let mut parts = Vec::new();
    for part in text.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err("`..` is not allowed in archive paths"),
            long if long.len() > MAX_NAME_BYTES => {
                return Err("names in archive paths are limited to 255 bytes");
            }
            other => parts.push(other),
        }
    }
    Ok((!parts.is_empty()).then(|| parts.join("/")))
}
