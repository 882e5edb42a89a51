//! Reading bundle archives defensively into a staging directory.
//!
//! Archives come from clients, and one that breaks a rule must cost next to nothing: so the
//! archive is read twice. The first pass ([`plan`]) checks every entry and every limit (no
//! absolute paths, no `..`, no links, devices or FIFOs; at most `max_entries` entries,
//! `max_total_bytes` of content, [`MAX_DEPTH`](super::paths::MAX_DEPTH) levels, 1024-byte
//! paths) and writes nothing; only an archive that passes them all is written, by the second
//! pass ([`write`]). Sizes are checked from the headers before the data is read, and the
//! decompressed stream itself is capped (by the limits, and at `max_expansion` times the
//! archive's own size), so a gzip bomb is stopped while it inflates. Files are written only
//! under the destination, and not synced one by one: the store syncs the staging directory
//! once, when the bundle is about to be committed.

mod plan;
mod write;

use std::cell::Cell;
use std::io::{self, Read};
use std::path::Path;
use std::rc::Rc;

use flate2::read::GzDecoder;

use super::archive::ArchiveLimits;
use super::error::BundleError;
use plan::Planner;

/// Slack for tar headers, long-name and PAX records and padding on top of the content limit.
const PER_ENTRY_OVERHEAD: u64 = 3 * 512;
/// What any archive may inflate to beyond its limits, and the floor of the expansion cap (a
/// tiny archive's tar padding alone is many times its compressed size).
const STREAM_OVERHEAD: u64 = 1024 * 1024;
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

/// Unpacks `archive` under `dest` (an existing, empty directory), once every entry of it
/// has been checked.
pub(crate) fn unpack(
    archive: &[u8],
    dest: &Path,
    kind: ArchiveKind,
    limits: &ArchiveLimits,
) -> Result<(), BundleError> {
    let mut planner = Planner::new(kind, limits);
    read(archive, limits, |position, entry| {
        planner.entry(position, entry)
    })?;
    let plan = planner.finish();
    read(archive, limits, |position, entry| {
        write::entry(dest, plan.get(position), entry)
    })
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

/// Reads `archive` entry by entry through the decompression cap, handing each entry and its
/// position (from 1) to `visit`; errors of the stream name the entry they happened in.
fn read(
    archive: &[u8],
    limits: &ArchiveLimits,
    mut visit: impl FnMut(
        usize,
        &mut tar::Entry<'_, CappedReader<GzDecoder<&[u8]>>>,
    ) -> Result<(), EntryError>,
) -> Result<(), BundleError> {
    let cap = inflate_cap(archive.len() as u64, limits);
    let tripped = Rc::new(Cell::new(false));
    let stream = CappedReader {
        inner: GzDecoder::new(archive),
        remaining: cap,
        tripped: Rc::clone(&tripped),
    };
    let mut tar = tar::Archive::new(stream);
    let stream_error = |e: io::Error, place: &str| {
        if tripped.get() {
            BundleError::archive(place, inflate_message(cap, archive.len() as u64, limits))
        } else {
            BundleError::archive(
                place,
                format!(
                    "unreadable archive (expected {}): {e}",
                    super::ARCHIVE_MEDIA_TYPE
                ),
            )
        }
    };
    let entries = tar.entries().map_err(|e| stream_error(e, START))?;
    let mut last: Option<String> = None;
    for (index, entry) in entries.enumerate() {
        let mut entry = entry.map_err(|e| {
            let place = last
                .as_ref()
                .map_or_else(|| START.to_owned(), |last| format!("after {last}"));
            stream_error(e, &place)
        })?;
        let position = index + 1;
        last = Some(entry_name(&entry.path_bytes(), position));
        visit(position, &mut entry).map_err(|e| match e {
            EntryError::Bundle(e) => e,
            EntryError::Stream(name, e) => stream_error(e, &name),
        })?;
    }
    Ok(())
}

/// How far the decompressed stream may go: what the limits allow (content, headers and
/// padding), and no more than `max_expansion` times the archive itself.
fn inflate_cap(archive_len: u64, limits: &ArchiveLimits) -> u64 {
    let by_limits = limits
        .max_total_bytes
        .saturating_add((limits.max_entries as u64).saturating_mul(PER_ENTRY_OVERHEAD))
        .saturating_add(STREAM_OVERHEAD);
    let by_ratio = archive_len
        .saturating_mul(u64::from(limits.max_expansion))
        .max(STREAM_OVERHEAD);
    by_limits.min(by_ratio)
}

fn inflate_message(cap: u64, archive_len: u64, limits: &ArchiveLimits) -> String {
    if cap < inflate_cap(u64::MAX, limits) {
        format!(
            "the archive inflates past {cap} bytes, more than {} times its {archive_len} bytes",
            limits.max_expansion
        )
    } else {
        format!("the archive inflates past {cap} bytes")
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
