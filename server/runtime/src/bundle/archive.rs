//! The bundle archive format: tar + gzip ([`ARCHIVE_MEDIA_TYPE`]), and its deterministic
//! writer. Reading lives in `unpack`, because reading is where the defences are.
//!
//! Written archives hold regular files only, in sorted path order, with mtime 0, uid/gid 0
//! and mode 0644 (0755 for executables), so the same bundle always exports to the same
//! bytes.

use std::io::{Read, Write};

use flate2::Compression;
use flate2::write::GzEncoder;

use super::digest::{DigestBuilder, HashingReader};
use super::error::BundleError;
use super::files::BundleFile;

/// The media type of bundle archives (exported, built, imported).
pub const ARCHIVE_MEDIA_TYPE: &str = "application/vnd.odyssey.bundle.v1.tar+gzip";

/// Bounds on what one bundle (archive or project directory) may hold. They bound the work
/// and disk a single request can cause.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArchiveLimits {
    /// Entries in an archive (files, directories, skipped entries) or files in a project.
    pub max_entries: usize,
    /// Total uncompressed size of the files, in bytes; also the limit for one file.
    pub max_total_bytes: u64,
    /// How many times its own size an archive may inflate to (beyond a first MiB): a gzip
    /// bomb is stopped after a bounded amount of work, not at the size limit.
    pub max_expansion: u32,
}

impl Default for ArchiveLimits {
    fn default() -> Self {
        Self {
            max_entries: 10_000,
            max_total_bytes: 256 * 1024 * 1024,
            max_expansion: 100,
        }
    }
}

/// Writes an archive entry by entry; callers add entries in sorted path order.
pub(crate) struct ArchiveWriter<W: Write> {
    tar: tar::Builder<GzEncoder<W>>,
}

impl<W: Write> ArchiveWriter<W> {
    pub fn new(out: W) -> Self {
        let mut tar = tar::Builder::new(GzEncoder::new(out, Compression::default()));
        tar.mode(tar::HeaderMode::Deterministic);
        Self { tar }
    }

    pub fn add(
        &mut self,
        rel: &str,
        size: u64,
        executable: bool,
        data: impl Read,
    ) -> Result<(), BundleError> {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(size);
        header.set_mode(if executable { 0o755 } else { 0o644 });
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        self.tar
            .append_data(&mut header, rel, data)
            .map_err(|e| BundleError::io(format!("writing archive entry {rel}"), e))
    }

    /// Ends the tar stream and the gzip member, returning the output.
    pub fn finish(self) -> Result<W, BundleError> {
        let ctx = |e| BundleError::io("finishing the bundle archive", e);
        self.tar.into_inner().map_err(ctx)?.finish().map_err(ctx)
    }
}

/// Writes `files` as an archive into `out` and returns the digest of exactly what was
/// written (each file is read once, for both).
pub(crate) fn write_files<W: Write>(
    files: &[BundleFile],
    out: W,
) -> Result<(W, String), BundleError> {
    let mut writer = ArchiveWriter::new(out);
    let mut digest = DigestBuilder::new();
    for file in files {
        digest.begin_file(&file.rel, file.size);
        let reader = HashingReader {
            inner: file.open()?,
            digest: &mut digest,
        };
        writer.add(&file.rel, file.size, file.executable, reader)?;
    }
    Ok((writer.finish()?, digest.finish()))
}
