//! The content digest of a bundle: `sha256:<hex>` over its files in a canonical framing.
//!
//! Files are taken in byte order of their relative paths; each contributes a tag, its path
//! length and path, its content length and content. The lengths make the framing
//! unambiguous; modes, mtimes, archive order and compression are not part of it, so a bundle
//! keeps its digest through export and import.

use std::io::{self, Read};

use sha2::{Digest, Sha256};

use super::error::BundleError;
use super::files::BundleFile;

/// Versions the framing, so a future change cannot collide with today's digests.
const DOMAIN: &[u8] = b"odyssey-bundle-digest-v1\n";

/// Builds a digest incrementally, for callers that read each file once for another purpose
/// (writing an archive) and hash it on the way.
pub(crate) struct DigestBuilder {
    hasher: Sha256,
}

impl DigestBuilder {
    pub fn new() -> Self {
        let mut hasher = Sha256::new();
        hasher.update(DOMAIN);
        Self { hasher }
    }

    /// Starts a file; exactly `size` bytes of content must follow through `update`.
    /// Callers must add files in sorted path order.
    pub fn begin_file(&mut self, rel: &str, size: u64) {
        self.hasher.update(b"F");
        self.hasher.update((rel.len() as u64).to_be_bytes());
        self.hasher.update(rel.as_bytes());
        self.hasher.update(size.to_be_bytes());
    }

    pub fn update(&mut self, bytes: &[u8]) {
        self.hasher.update(bytes);
    }

    pub fn finish(self) -> String {
        format!("sha256:{}", hex::encode(self.hasher.finalize()))
    }
}

/// Passes reads through while hashing them.
pub(crate) struct HashingReader<'a, R> {
    pub inner: R,
    pub digest: &'a mut DigestBuilder,
}

impl<R: Read> Read for HashingReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.digest.update(&buf[..n]);
        Ok(n)
    }
}

/// The digest of `files` (already sorted by `collect_files`).
pub(crate) fn digest_files(files: &[BundleFile]) -> Result<String, BundleError> {
    let mut digest = DigestBuilder::new();
    for file in files {
        digest.begin_file(&file.rel, file.size);
        let mut reader = HashingReader {
            inner: file.open()?,
            digest: &mut digest,
        };
        io::copy(&mut reader, &mut io::sink())
            .map_err(|e| BundleError::io(format!("reading {}", file.rel), e))?;
    }
    Ok(digest.finish())
}

/// Whether `text` is a digest in the form this module writes.
pub(crate) fn is_digest(text: &str) -> bool {
    text.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}
