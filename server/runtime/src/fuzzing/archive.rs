//! `bundle_archive`: installing an archive a client sent (ImportBundle, BuildBundle) into a
//! store, through the unpacking defences and their limits.
//!
//! The first byte of the input chooses how the rest is read. Bit 0 set: the rest is a tar
//! stream that the harness gzips, after setting each header's checksum, so the fuzzer works
//! on the tar structure itself and its mutations are not all lost to checksum errors.
//! Clear: the rest is the archive as sent, gzip included, so broken gzip streams and the
//! cap on inflation are reached too. Bit 1 set: the archive is a project tree (BuildBundle);
//! clear: a built bundle (ImportBundle).
//!
//! An installed bundle must hold only regular files and folders inside its directory,
//! within the limits; a refused archive must be refused as the client's mistake. Either
//! way the store keeps nothing else: no staging directory survives the request.

use std::fs;
use std::io::Write;
use std::path::Path;

use flate2::Compression;
use flate2::write::GzEncoder;

use super::scratch::{self, assert_bad_input};
use crate::bundle::{ArchiveLimits, BundleStore, InstallOptions, RECORD_FILE};

/// Small limits, so the fuzzer reaches them with small inputs.
const LIMITS: ArchiveLimits = ArchiveLimits {
    max_entries: 16,
    max_total_bytes: 16 * 1024,
    max_expansion: 100,
};

/// Where the store keeps installs in progress (`bundle::store`).
const STAGING_DIR: &str = ".staging";

pub fn bundle_archive(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let archive = if mode & 1 == 1 {
        let mut tar = rest.to_vec();
        fix_checksums(&mut tar);
        let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
        gz.write_all(&tar)
            .and_then(|()| gz.finish())
            .unwrap_or_else(|e| panic!("cannot gzip in memory: {e}"))
    } else {
        rest.to_vec()
    };
    let scratch = scratch::dir();
    let root = scratch.path().join("store");
    let store = BundleStore::open(root.clone())
        .unwrap_or_else(|e| panic!("cannot open a bundle store: {e}"))
        .with_limits(LIMITS);
    let opts = InstallOptions::default();
    let result = if mode & 2 == 2 {
        store.install_project_archive(archive.as_slice(), &opts)
    } else {
        store.install_bundle_archive(archive.as_slice(), &opts)
    };
    let installed = match result {
        Ok(installed) => Some(installed.root.clone()),
        Err(e) => {
            assert_bad_input(&e, scratch.path());
            None
        }
    };
    check_store(&root, installed.as_deref());
}

/// Sets the checksum of every header of a tar stream, walking from header to header by
/// the sizes they declare, up to the end marker or the first unreadable size.
fn fix_checksums(tar: &mut [u8]) {
    const BLOCK: usize = 512;
    let mut at = 0;
    while let Some(block) = tar.get_mut(at..at + BLOCK) {
        if block.iter().all(|b| *b == 0) {
            return;
        }
        let mut header = tar::Header::new_old();
        header.as_mut_bytes().copy_from_slice(block);
        header.set_cksum();
        block.copy_from_slice(header.as_bytes());
        let Some(size) = header
            .entry_size()
            .ok()
            .and_then(|s| usize::try_from(s).ok())
        else {
            return;
        };
        let Some(next) = size
            .checked_next_multiple_of(BLOCK)
            .and_then(|data| at.checked_add(BLOCK + data))
        else {
            return;
        };
        at = next;
    }
}

/// The store holds the installed bundle, if any, and nothing else.
fn check_store(root: &Path, installed: Option<&Path>) {
    let staging = root.join(STAGING_DIR);
    let left = fs::read_dir(&staging).map_or(0, |d| d.count());
    assert_eq!(left, 0, "the request left {left} staging entries behind");
    let others: Vec<_> = list(root)
        .into_iter()
        .filter(|p| *p != staging && !installed.is_some_and(|i| i.starts_with(p)))
        .collect();
    assert!(others.is_empty(), "the store holds more: {others:?}");
    let Some(bundle) = installed else {
        return;
    };
    let (mut files, mut bytes) = (0usize, 0u64);
    for entry in walkdir::WalkDir::new(bundle).min_depth(1) {
        let entry = entry.unwrap_or_else(|e| panic!("cannot walk the installed bundle: {e}"));
        let kind = entry.file_type();
        assert!(
            kind.is_file() || kind.is_dir(),
            "the installed bundle holds {} ({kind:?})",
            entry.path().display()
        );
        if kind.is_file() && entry.file_name() != RECORD_FILE {
            files += 1;
            bytes += entry.metadata().map_or(0, |m| m.len());
        }
    }
    assert!(
        files <= LIMITS.max_entries && bytes <= LIMITS.max_total_bytes,
        "the installed bundle is past the limits: {files} files, {bytes} bytes"
    );
}

fn list(dir: &Path) -> Vec<std::path::PathBuf> {
    fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default()
}
