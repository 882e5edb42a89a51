//! Reading bundle archives defensively into a staging directory.
//!
//! Archives come from clients. Every entry is checked before anything is written: no
//! absolute paths, no `..`, no links of any kind, no devices or FIFOs, at most
//! `max_entries` entries and `max_total_bytes` of content. Sizes are checked from the
//! headers before the data is read, and the decompressed stream itself is capped, so a gzip
//! bomb is stopped while it inflates. Files are written only under the destination.

use std::cell::Cell;
use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::Path;
use std::rc::Rc;

use flate2::read::GzDecoder;

use super::archive::ArchiveLimits;
use super::error::BundleError;
use super::files::set_mode;
use super::paths::is_excluded;

/// Slack for tar headers, long-name and PAX records and padding on top of the content limit.
const PER_ENTRY_OVERHEAD: u64 = 3 * 512;
const STREAM_OVERHEAD: u64 = 1024 * 1024;
/// The longest name one path component may have (Linux's NAME_MAX): a longer one could
/// only fail when written.
const MAX_NAME_BYTES: usize = 255;
/// The longest entry path, well within PATH_MAX once under the staging directory.
const MAX_PATH_BYTES: usize = 1024;
/// How errors before the first entry name their place.
const START: &str = "<start of archive>";

/// What the archive is expected to hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ArchiveKind {
    /// A project tree (BuildBundle): hidden entries, `target/` and `node_modules/` are
    /// skipped, as when building from a directory.
    Project,
    /// A built bundle (ImportBundle): it holds exactly the bundle files, so such entries
    /// are refused.
    Bundle,
}

/// Unpacks `input` under `dest` (an existing, empty directory).
pub(crate) fn unpack(
    input: impl Read,
    dest: &Path,
    kind: ArchiveKind,
    limits: &ArchiveLimits,
) -> Result<(), BundleError> {
    let cap = limits
        .max_total_bytes
        .saturating_add((limits.max_entries as u64).saturating_mul(PER_ENTRY_OVERHEAD))
        .saturating_add(STREAM_OVERHEAD);
    let tripped = Rc::new(Cell::new(false));
    let stream = CappedReader {
        inner: GzDecoder::new(input),
        remaining: cap,
        tripped: Rc::clone(&tripped),
    };
    let mut archive = tar::Archive::new(stream);
    let mut state = State {
        dest,
        kind,
        limits,
        entries: 0,
        total: 0,
        files: HashSet::new(),
        dirs: HashSet::new(),
        last: None,
    };
    let stream_error = |e: io::Error, last: &str| {
        if tripped.get() {
            BundleError::archive(last, format!("the archive inflates past {cap} bytes"))
        } else {
            BundleError::archive(
                last,
                format!(
                    "unreadable archive (expected {}): {e}",
                    super::ARCHIVE_MEDIA_TYPE
                ),
            )
        }
    };
    let entries = archive.entries().map_err(|e| stream_error(e, START))?;
    for entry in entries {
        let entry = entry.map_err(|e| {
            let place = state
                .last
                .as_ref()
                .map_or_else(|| START.to_owned(), |last| format!("after {last}"));
            stream_error(e, &place)
        })?;
        state.entry(entry).map_err(|e| match e {
            EntryError::Bundle(e) => e,
            EntryError::Stream(name, e) => stream_error(e, &name),
        })?;
    }
    Ok(())
}

/// An entry failed either on its own terms or because the stream under it broke.
enum EntryError {
    Bundle(BundleError),
    Stream(String, io::Error),
}

impl From<BundleError> for EntryError {
    fn from(e: BundleError) -> Self {
        Self::Bundle(e)
    }
}

struct State<'a> {
    dest: &'a Path,
    kind: ArchiveKind,
    limits: &'a ArchiveLimits,
    entries: usize,
    total: u64,
    files: HashSet<String>,
    dirs: HashSet<String>,
    /// The last entry seen, to place errors of the stream between entries.
    last: Option<String>,
}

impl State<'_> {
    fn entry<R: Read>(&mut self, mut entry: tar::Entry<'_, R>) -> Result<(), EntryError> {
        self.entries += 1;
        let raw = entry_name(&entry.path_bytes(), self.entries);
        self.last = Some(raw.clone());
        let refuse =
            |message: &str| EntryError::Bundle(BundleError::archive(raw.as_str(), message));

        if self.entries > self.limits.max_entries {
            return Err(refuse(&format!(
                "the archive has more than {} entries",
                self.limits.max_entries
            )));
        }
        let rel = normalize_entry(&entry.path_bytes()).map_err(&refuse)?;
        let entry_type = entry.header().entry_type();
        let size = entry.size();
        self.total = self.total.saturating_add(size);
        if size > self.limits.max_total_bytes || self.total > self.limits.max_total_bytes {
            return Err(refuse(&format!(
                "the archive holds more than {} bytes uncompressed",
                self.limits.max_total_bytes
            )));
        }
        let Some(rel) = rel else { return Ok(()) };
        if is_excluded(&rel) {
            return match self.kind {
                ArchiveKind::Project => Ok(()),
                ArchiveKind::Bundle => Err(refuse(
                    "hidden entries, target/ and node_modules/ are never part of a built bundle",
                )),
            };
        }
        match entry_type {
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                self.claim_file(&rel).map_err(|m| refuse(&m))?;
                let executable = entry
                    .header()
                    .mode()
                    .map(|m| m & 0o111 != 0)
                    .unwrap_or(false);
                self.write_file(&rel, &raw, size, executable, &mut entry)
            }
            tar::EntryType::Directory => {
                self.claim_dir(&rel).map_err(|m| refuse(&m))?;
                fs::create_dir_all(self.dest.join(&rel))
                    .map_err(|e| BundleError::io(format!("unpacking {rel}"), e).into())
            }
            tar::EntryType::XGlobalHeader => Ok(()),
            tar::EntryType::Symlink => {
                Err(refuse("symbolic links are not allowed in bundle archives"))
            }
            tar::EntryType::Link => Err(refuse("hard links are not allowed in bundle archives")),
            tar::EntryType::Char | tar::EntryType::Block => {
                Err(refuse("device entries are not allowed in bundle archives"))
            }
            tar::EntryType::Fifo => Err(refuse("FIFO entries are not allowed in bundle archives")),
            other => Err(refuse(&format!(
                "unsupported entry type {:?}",
                other.as_byte() as char
            ))),
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

    fn write_file(
        &self,
        rel: &str,
        raw: &str,
        size: u64,
        executable: bool,
        data: &mut impl Read,
    ) -> Result<(), EntryError> {
        let target = self.dest.join(rel);
        let disk = |e| EntryError::Bundle(BundleError::io(format!("unpacking {rel}"), e));
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent).map_err(disk)?;
        }
        let mut out = File::create_new(&target).map_err(disk)?;
        let mut buf = vec![0u8; 64 * 1024];
        let mut written = 0u64;
        loop {
            let n = match data.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(EntryError::Stream(raw.to_owned(), e)),
            };
            out.write_all(&buf[..n]).map_err(disk)?;
            written += n as u64;
        }
        if written != size {
            return Err(EntryError::Bundle(BundleError::archive(
                raw,
                "the archive ends inside this entry",
            )));
        }
        set_mode(&out, executable).map_err(disk)?;
        out.sync_all().map_err(disk)
    }
}

/// How errors name an entry: its path as written, or its position when the path is empty
/// (an error must point somewhere a person can look).
fn entry_name(path: &[u8], position: usize) -> String {
    if path.is_empty() {
        format!("<entry {position}, which has no name>")
    } else {
        String::from_utf8_lossy(path).into_owned()
    }
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

/// Caps the decompressed stream: once `remaining` is spent, reads fail and `tripped` is set.
struct CappedReader<R> {
    inner: R,
    remaining: u64,
    tripped: Rc<Cell<bool>>,
}

impl<R: Read> Read for CappedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.remaining == 0 {
            // One more byte tells a stream that ends exactly at the cap from one that goes on.
            let mut probe = [0u8; 1];
            if self.inner.read(&mut probe)? == 0 {
                return Ok(0);
            }
            self.tripped.set(true);
            return Err(io::Error::other("decompressed size limit reached"));
        }
        let want = usize::try_from(self.remaining)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let n = self.inner.read(&mut buf[..want])?;
        self.remaining -= n as u64;
        Ok(n)
    }
}
