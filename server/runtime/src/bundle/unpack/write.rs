//! The second pass over an archive: it writes what the first pass planned. Nothing here
//! checks a limit; every entry it sees was checked already.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::Path;

use super::super::error::BundleError;
use super::super::files::set_mode;
use super::EntryError;
use super::plan::Action;

/// Writes one entry under `dest` as `action` says.
pub(super) fn entry(
    dest: &Path,
    action: Option<&Action>,
    data: &mut impl Read,
) -> Result<(), EntryError> {
    match action {
        Some(Action::Skip) => Ok(()),
        Some(Action::Dir(rel)) => fs::create_dir_all(dest.join(rel))
            .map_err(|e| BundleError::io(format!("unpacking {rel}"), e).into()),
        Some(Action::File {
            rel,
            size,
            executable,
        }) => file(dest, rel, *size, *executable, data),
        // The archive is the same bytes the plan was made from; more entries now would mean
        // the reader is not deterministic, which no archive can be allowed to exploit.
        None => Err(BundleError::io(
            "unpacking the archive",
            io::Error::other("the archive has more entries than when it was checked"),
        )
        .into()),
    }
}

/// Writes one file, not synced: the store syncs the whole staging directory once, before
/// the bundle is committed.
fn file(
    dest: &Path,
    rel: &str,
    size: u64,
    executable: bool,
    data: &mut impl Read,
) -> Result<(), EntryError> {
    let target = dest.join(rel);
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
            Err(e) => return Err(EntryError::Stream(rel.to_owned(), e)),
        };
        out.write_all(&buf[..n]).map_err(disk)?;
        written += n as u64;
    }
    if written != size {
        return Err(EntryError::Bundle(BundleError::archive(
            rel,
            "the archive ends inside this entry",
        )));
    }
    set_mode(&out, executable).map_err(disk)
}
