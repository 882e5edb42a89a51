//! Reading a layer or a view without trusting what is in it. A layer holds what a
//! sandboxed process left in its upper folder: links, FIFOs, device-looking files, huge
//! sparse files and deep trees. Every folder is opened beneath a root descriptor with no
//! link allowed on the way (`RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`), every file with
//! `O_NOFOLLOW | O_NONBLOCK` and its type checked on the opened descriptor, and walks are
//! bounded by the callers.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, ResolveFlags, Stat};

/// The longest path one lookup is given (the kernel takes at most 4096 bytes).
pub(super) const MAX_PATH_BYTES: usize = 3072;

/// The opaque mark of a folder in a layer: what was beneath it is hidden.
const OPAQUE_XATTR: &str = "trusted.overlay.opaque";

fn dot(rel: &Path) -> &Path {
    if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    }
}

/// Opens the root folder of a layer or of the server's own tree (no link followed).
pub(super) fn open_root(path: &Path) -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// Opens the folder `rel` beneath `root`, refusing any link on the way. A path longer
/// than one lookup takes is opened in pieces, each beneath the folder the last opened.
pub(super) fn open_dir(root: &OwnedFd, rel: &Path) -> io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    if rel.as_os_str().len() <= MAX_PATH_BYTES {
        return Ok(crate::sandbox::beneath::openat2_retrying(
            root,
            dot(rel),
            flags,
            Mode::empty(),
            resolve,
        )?);
    }
    let mut here: Option<OwnedFd> = None;
    let mut piece = PathBuf::new();
    for part in rel.components() {
        let part = part.as_os_str();
        if !piece.as_os_str().is_empty()
            && piece.as_os_str().len() + part.len() + 1 > MAX_PATH_BYTES
        {
            let from = here.as_ref().unwrap_or(root);
            here = Some(crate::sandbox::beneath::openat2_retrying(
                from,
                &piece,
                flags,
                Mode::empty(),
                resolve,
            )?);
            piece = PathBuf::new();
        }
        piece.push(part);
    }
    let from = here.as_ref().unwrap_or(root);
    Ok(crate::sandbox::beneath::openat2_retrying(
        from,
        dot(&piece),
        flags,
        Mode::empty(),
        resolve,
    )?)
}

/// Opens the entry `name` of the open folder `dir` for reading: no link followed, no
/// wait on a FIFO, and anything but a regular file refused once opened.
pub(super) fn open_child_file(dir: &OwnedFd, name: &OsStr) -> io::Result<(File, Stat)> {
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let stat = rustix::fs::fstat(&fd)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok((File::from(fd), stat))
}

/// Opens the regular file `rel` beneath `root` for reading, as [`open_child_file`] does.
pub(super) fn open_file(root: &OwnedFd, rel: &Path) -> io::Result<(File, Stat)> {
    let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a file path",
        ));
    };
    open_child_file(&open_dir(root, parent)?, name)
}

/// Calls `visit` with each entry of the tree beneath `root` (its folder, name and stat,
/// no link followed), folders before what they hold; `visit` answers whether to go on.
/// Entries that vanish meanwhile are skipped.
pub(super) fn walk(
    root: &OwnedFd,
    mut visit: impl FnMut(&OwnedFd, &OsStr, &Stat) -> io::Result<bool>,
) -> io::Result<()> {
    let mut pending = vec![PathBuf::new()];
    while let Some(rel) = pending.pop() {
        let dir = open_dir(root, &rel)?;
        for entry in Dir::read_from(&dir)? {
            let entry = entry?;
            let raw = entry.file_name().to_bytes();
            if raw == b"." || raw == b".." {
                continue;
            }
            let name = OsStr::from_bytes(raw);
            let stat = match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) => stat,
                Err(rustix::io::Errno::NOENT) => continue,
                Err(e) => return Err(e.into()),
            };
            if !visit(&dir, name, &stat)? {
                return Ok(());
            }
            if Kind::of(&stat) == Kind::Dir {
                pending.push(rel.join(name));
            }
        }
    }
    Ok(())
}

/// What an entry of a layer is, seen without following it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Dir,
    File,
    Symlink,
    /// A character device 0/0: the layer removes the name from what is beneath it.
    Whiteout,
    /// FIFOs, sockets and devices: left out of snapshots, as the copies leave them out.
    Other,
}

impl Kind {
    pub(super) fn of(stat: &Stat) -> Self {
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::Directory => Self::Dir,
            FileType::RegularFile => Self::File,
            FileType::Symlink => Self::Symlink,
            FileType::CharacterDevice if stat.st_rdev == 0 => Self::Whiteout,
            _ => Self::Other,
        }
    }
}

/// Whether the layer folder `dir` hides what is beneath it.
pub(super) fn is_opaque(dir: &OwnedFd) -> bool {
    let mut value = [0u8; 4];
    matches!(
        rustix::fs::fgetxattr(dir, OPAQUE_XATTR, &mut value[..]),
        Ok(1) if value[0] == b'y'
    )
}

/// Permission bits, set-ID and sticky bits of `stat`.
pub(super) fn mode_of(stat: &Stat) -> u32 {
    stat.st_mode & 0o7777
}

/// Bytes `stat` occupies on disk (a sparse file counts what it holds, not its length).
pub(super) fn allocated(stat: &Stat) -> u64 {
    u64::try_from(stat.st_blocks)
        .unwrap_or(0)
        .saturating_mul(512)
}

/// `rel/name`, or `name` at the root.
pub(super) fn join(rel: &str, name: &str) -> String {
    if rel.is_empty() {
        name.to_owned()
    } else {
        format!("{rel}/{name}")
    }
}
