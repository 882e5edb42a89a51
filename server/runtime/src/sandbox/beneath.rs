//! Files reached beneath an open folder, never by a path checked first and used later.
//!
//! A session's processes can run at any moment (a background job, an operator command), so
//! a folder checked a moment ago may be a symbolic link now. Every lookup here is one
//! `openat2` from a descriptor of the root folder with `RESOLVE_BENEATH |
//! RESOLVE_NO_MAGICLINKS`: the kernel resolves the whole path, symbolic links included,
//! and refuses (`EXDEV`) any step that would leave the root, whatever the tree looks like
//! at that instant. Links that stay beneath the root keep working (`node_modules/.bin`, a
//! virtual environment's `bin/python -> python3`); absolute links are refused, as the
//! kernel cannot tell where they stay. Work then goes on through the descriptors.
//!
//! An unconfined root (`/`, for `danger_full_access`) resolves without `RESOLVE_BENEATH`.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, ResolveFlags, Stat};
use rustix::io::Errno;

/// Mode of the folders created on a model's behalf.
const NEW_DIR_MODE: u32 = 0o755;
/// Attempts at a free temporary name before giving up.
const TEMP_ATTEMPTS: usize = 16;

/// An open folder every path is resolved beneath.
#[derive(Debug)]
pub struct BeneathDir {
    fd: OwnedFd,
    confined: bool,
}

/// What an entry is, as seen without following it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
    Symlink,
    Other,
}

impl Kind {
    fn of(file_type: FileType) -> Self {
        match file_type {
            FileType::Directory => Self::Dir,
            FileType::RegularFile => Self::File,
            FileType::Symlink => Self::Symlink,
            _ => Self::Other,
        }
    }

    /// The kind of a `stat` answer.
    pub fn of_stat(stat: &Stat) -> Self {
        Self::of(FileType::from_raw_mode(stat.st_mode))
    }
}

/// One entry of a folder.
#[derive(Clone, Debug)]
pub struct Entry {
    pub name: OsString,
    pub kind: Kind,
    /// Size in bytes for files.
    pub size: Option<u64>,
}

impl BeneathDir {
    /// Opens the folder at `path` as a root. The path is the server's own (a cell folder, an
    /// operator's mount) and is opened as given.
    pub fn open(path: &Path) -> io::Result<Self> {
        let fd = rustix::fs::open(
            path,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Self { fd, confined: true })
    }

    /// Whether this folder holds an entry named `name` (one component), of any kind; a
    /// link is not followed. Only a missing entry answers `false`: an entry that cannot be
    /// looked at counts as there, for whoever opens it to report.
    pub fn has_entry(&self, name: &OsStr) -> bool {
        !matches!(
            rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW),
            Err(Errno::NOENT)
        )
    }

    /// The host's `/`, resolved without confinement (`danger_full_access`).
    pub fn host_root() -> io::Result<Self> {
        let mut root = Self::open(Path::new("/"))?;
        root.confined = false;
        Ok(root)
    }

    fn resolve(&self) -> ResolveFlags {
        if self.confined {
            ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS
        } else {
            ResolveFlags::NO_MAGICLINKS
        }
    }

    /// Opens `rel` (relative, no `..`; empty for the root itself) with `flags`, following
    /// links that stay beneath the root. `EXDEV` means a link (or a `..` in one) leads out.
    pub fn open_at(&self, rel: &Path, flags: OFlags) -> io::Result<OwnedFd> {
        let path = if rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            rel
        };
        // openat2 refuses O_PATH with anything but O_DIRECTORY, O_NOFOLLOW, O_CLOEXEC.
        let extra = if flags.contains(OFlags::PATH) {
            OFlags::CLOEXEC
        } else {
            OFlags::CLOEXEC | OFlags::NOCTTY
        };
        Ok(openat2_retrying(
            &self.fd,
            path,
            flags | extra,
            Mode::empty(),
            self.resolve(),
        )?)
    }

    /// Opens the folder `rel` with no symbolic link allowed anywhere on the way (for work
    /// on the server's own trees, where no link is expected).
    pub fn open_without_links(&self, rel: &Path) -> io::Result<OwnedFd> {
        let path = if rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            rel
        };
        Ok(openat2_retrying(
            &self.fd,
            path,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS,
        )?)
    }

    /// Opens `rel` for reading without blocking on a FIFO; the caller checks its type.
    pub fn open_read(&self, rel: &Path) -> io::Result<(File, Stat)> {
        let fd = self.open_at(rel, OFlags::RDONLY | OFlags::NONBLOCK)?;
        let stat = rustix::fs::fstat(&fd)?;
        Ok((File::from(fd), stat))
    }

    /// A descriptor naming `rel` (no access to its content), and what it is.
    pub fn locate(&self, rel: &Path) -> io::Result<(OwnedFd, Stat)> {
        let fd = self.open_at(rel, OFlags::PATH)?;
        let stat = rustix::fs::fstat(&fd)?;
        Ok((fd, stat))
    }

    /// The path of what `fd` names, relative to this root: where a call really lands once
    /// links are followed. Read from `/proc/thread-self/fd`, so it is the kernel's answer for
    /// this instant.
    pub fn relative_of(&self, fd: &OwnedFd) -> io::Result<PathBuf> {
        let root = fd_path(&self.fd)?;
        let target = fd_path(fd)?;
        target
            .strip_prefix(&root)
            .map(Path::to_path_buf)
            .map_err(|_| io::Error::from_raw_os_error(libc::EXDEV))
    }

    /// The folder `rel`, created with its missing parents (each created beneath the root,
    /// as whoever runs this). Answers a descriptor of it.
    pub fn create_dirs(&self, rel: &Path) -> io::Result<OwnedFd> {
        let mut done = PathBuf::new();
        let mut current = self.open_at(&done, OFlags::PATH | OFlags::DIRECTORY)?;
        for component in rel.components() {
            let Component::Normal(name) = component else {
                return Err(io::Error::from_raw_os_error(libc::EINVAL));
            };
            done.push(name);
            current = match self.open_at(&done, OFlags::PATH | OFlags::DIRECTORY) {
                Ok(fd) => fd,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    match rustix::fs::mkdirat(&current, name, Mode::from_raw_mode(NEW_DIR_MODE)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => return Err(e.into()),
                    }
                    self.open_at(&done, OFlags::PATH | OFlags::DIRECTORY)?
                }
                Err(e) => return Err(e),
            };
        }
        Ok(current)
    }

    /// The entries of the folder `dir` (a descriptor opened for reading), unsorted, at most
    /// `cap` of them; the flag says whether more were left.
    pub fn entries(dir: &OwnedFd, cap: usize) -> io::Result<(Vec<Entry>, bool)> {
        let mut entries = Vec::new();
        for entry in Dir::read_from(dir)? {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            if entries.len() == cap {
                return Ok((entries, true));
            }
            let name = OsStr::from_bytes(name).to_os_string();
            entries.push(describe(dir, name));
        }
        Ok((entries, false))
    }
}

/// What `name` in the folder `dir` is, not following a link.
pub fn describe(dir: &OwnedFd, name: OsString) -> Entry {
    match rustix::fs::statat(dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => {
            let kind = Kind::of_stat(&stat);
            let size = (kind == Kind::File).then(|| u64::try_from(stat.st_size).unwrap_or(0));
            Entry { name, kind, size }
        }
        Err(_) => Entry {
            name,
            kind: Kind::Other,
            size: None,
        },
    }
}

/// Gives the owner of what `fd` names read, write and search access, changing nothing
/// else. Works on a descriptor opened with `O_PATH` (through `/proc/thread-self/fd`, which
/// names that very file), so there is no path to swap.
pub fn grant_owner_all(fd: &OwnedFd) -> io::Result<()> {
    let stat = rustix::fs::fstat(fd)?;
    let mode = stat.st_mode & 0o7777;
    if mode & 0o700 == 0o700 {
        return Ok(());
    }
    let path = format!("/proc/thread-self/fd/{}", fd.as_raw_fd());
    Ok(rustix::fs::chmod(
        path.as_str(),
        Mode::from_raw_mode(mode | 0o700),
    )?)
}

/// Whether `name` in the folder `dir` is a symbolic link (not followed).
pub fn is_symlink(dir: &OwnedFd, name: &OsStr) -> bool {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|stat| Kind::of_stat(&stat) == Kind::Symlink)
}

/// Opens the folder `name` of `dir` for reading, refusing a link there.
pub fn open_child_dir(dir: &OwnedFd, name: &OsStr) -> io::Result<OwnedFd> {
    Ok(rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// Opens the regular file `name` of `dir` for reading, refusing a link there and not
/// blocking on a FIFO.
pub fn open_child_file(dir: &OwnedFd, name: &OsStr) -> io::Result<(File, Stat)> {
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )?;
    let stat = rustix::fs::fstat(&fd)?;
    Ok((File::from(fd), stat))
}

/// Replaces `name` in the folder `parent` with `bytes`, atomically: a temporary file in
/// the same folder, synced, renamed over the entry (the rename replaces a link there, never
/// follows it). The file gets `mode` with the set-user-ID, set-group-ID and sticky bits
/// cleared, and belongs to whoever runs this.
pub fn replace_file(parent: &OwnedFd, name: &OsStr, bytes: &[u8], mode: u32) -> io::Result<()> {
    let (temp_name, fd) = create_temp(parent)?;
    let result = (|| {
        let mut file = File::from(fd);
        file.write_all(bytes)?;
        rustix::fs::fchmod(&file, Mode::from_raw_mode(mode & 0o777))?;
        file.sync_all()?;
        rustix::fs::renameat(parent, &temp_name, parent, name)?;
        Ok(())
    })();
    if result.is_err() {
        let _ = rustix::fs::unlinkat(parent, &temp_name, AtFlags::empty());
        return result;
    }
    // The rename is durable once the folder is synced; failing that is not worth failing
    // the write for, the data itself is on disk.
    if let Ok(dir) = rustix::fs::openat(
        parent,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        let _ = rustix::fs::fsync(&dir);
    }
    Ok(())
}

fn create_temp(parent: &OwnedFd) -> io::Result<(OsString, OwnedFd)> {
    for _ in 0..TEMP_ATTEMPTS {
        let name = OsString::from(format!(".odyssey-write-{:016x}", rand::random::<u64>()));
        match rustix::fs::openat(
            parent,
            name.as_os_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        ) {
            Ok(fd) => return Ok((name, fd)),
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "no free temporary file name",
    ))
}

/// Where `fd` is on the host, as the kernel names it now.
fn fd_path(fd: &impl AsFd) -> io::Result<PathBuf> {
    std::fs::read_link(format!("/proc/thread-self/fd/{}", fd.as_fd().as_raw_fd()))
}

/// Whether an error is the kernel refusing a step out of the root.
pub fn is_escape(error: &io::Error) -> bool {
    error.raw_os_error() == Some(libc::EXDEV)
}

/// How many times a lookup the kernel could not prove safe is tried again.
const LOOKUP_RETRIES: usize = 64;

/// `openat2`, tried again when it answers `EAGAIN`: with `RESOLVE_BENEATH` the kernel
/// gives up on a lookup when a rename or a mount anywhere on the machine ran while it
/// walked (it cannot then prove a `..` stayed beneath), and asks the caller to retry. A
/// busy server (other sessions' turns renaming and mounting) must not turn that into a
/// failed tool call.
pub(crate) fn openat2_retrying<Fd: AsFd>(
    dir: Fd,
    path: &Path,
    flags: OFlags,
    mode: Mode,
    resolve: ResolveFlags,
) -> rustix::io::Result<OwnedFd> {
    let mut tries = 0;
    loop {
        match rustix::fs::openat2(&dir, path, flags, mode, resolve) {
            Err(Errno::AGAIN) if tries < LOOKUP_RETRIES => tries += 1,
            answer => return answer,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::{PermissionsExt, symlink};

    fn tree() -> (tempfile::TempDir, BeneathDir) {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("root");
        fs::create_dir_all(root.join("sub")).expect("mkdir");
        fs::write(root.join("sub/file.txt"), "inside").expect("write");
        fs::write(dir.path().join("secret.txt"), "outside").expect("write");
        let beneath = BeneathDir::open(&root).expect("open root");
        (dir, beneath)
    }

    #[test]
    fn has_entry_sees_any_entry_and_follows_no_link() {
        let (dir, root) = tree();
        symlink(dir.path().join("secret.txt"), dir.path().join("root/out")).expect("link");
        symlink(dir.path().join("nowhere"), dir.path().join("root/dangling")).expect("link");
        for name in ["sub", "out", "dangling"] {
            assert!(root.has_entry(OsStr::new(name)), "{name}");
        }
        assert!(!root.has_entry(OsStr::new("AGENTS.md")));
        assert!(
            !root.has_entry(OsStr::new("file.txt")),
            "not in the root itself"
        );
    }

    #[test]
    fn links_beneath_are_followed_and_links_out_refused() {
        let (dir, root) = tree();
        let base = dir.path().join("root");
        symlink("sub/file.txt", base.join("relative")).expect("link");
        symlink("../secret.txt", base.join("up")).expect("link");
        symlink(dir.path().join("secret.txt"), base.join("absolute")).expect("link");
        symlink("..", base.join("sub/parent")).expect("link");

        let (_, stat) = root.locate(Path::new("relative")).expect("inside");
        assert_eq!(Kind::of_stat(&stat), Kind::File);
        let (fd, _) = root
            .locate(Path::new("sub/parent/relative"))
            .expect("inside");
        assert_eq!(
            root.relative_of(&fd).expect("relative"),
            PathBuf::from("sub/file.txt")
        );
        for out in ["up", "absolute", "sub/parent/up"] {
            let err = root.locate(Path::new(out)).expect_err(out);
            assert!(is_escape(&err), "{out}: {err}");
        }
    }

    #[test]
    fn folders_are_created_beneath_and_never_through_a_link_out() {
        let (dir, root) = tree();
        let base = dir.path().join("root");
        root.create_dirs(Path::new("a/b/c")).expect("create");
        assert!(base.join("a/b/c").is_dir());
        symlink(dir.path(), base.join("out")).expect("link");
        let err = root.create_dirs(Path::new("out/x")).expect_err("refused");
        assert!(is_escape(&err), "{err}");
        assert!(!dir.path().join("x").exists());
    }

    #[test]
    fn replacing_a_file_clears_special_bits_and_replaces_a_link_itself() {
        let (dir, root) = tree();
        let base = dir.path().join("root");
        let parent = root
            .open_at(Path::new("sub"), OFlags::PATH | OFlags::DIRECTORY)
            .expect("parent");
        replace_file(&parent, OsStr::new("file.txt"), b"new", 0o4755).expect("replace");
        let meta = fs::metadata(base.join("sub/file.txt")).expect("meta");
        assert_eq!(meta.permissions().mode() & 0o7777, 0o755);
        assert_eq!(
            fs::read_to_string(base.join("sub/file.txt")).expect("read"),
            "new"
        );

        symlink(dir.path().join("secret.txt"), base.join("sub/link")).expect("link");
        replace_file(&parent, OsStr::new("link"), b"mine", 0o644).expect("replace link");
        assert_eq!(
            fs::read_to_string(dir.path().join("secret.txt")).expect("secret"),
            "outside"
        );
        assert!(
            !fs::symlink_metadata(base.join("sub/link"))
                .expect("meta")
                .is_symlink()
        );
        let leftovers: Vec<_> = fs::read_dir(base.join("sub"))
            .expect("list")
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(".odyssey-write-")
            })
            .collect();
        assert!(leftovers.is_empty());
    }

    #[test]
    fn a_fifo_is_opened_without_blocking() {
        let (dir, root) = tree();
        let fifo = dir.path().join("root/pipe");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .expect("mkfifo");
        let (_, stat) = root.open_read(Path::new("pipe")).expect("opens at once");
        assert_eq!(Kind::of_stat(&stat), Kind::Other);
    }

    #[test]
    fn entries_are_listed_without_following_links() {
        let (dir, root) = tree();
        symlink("/etc", dir.path().join("root/etc")).expect("link");
        let fd = root
            .open_at(Path::new(""), OFlags::RDONLY | OFlags::DIRECTORY)
            .expect("open");
        let (mut entries, more) = BeneathDir::entries(&fd, 10).expect("entries");
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        assert!(!more);
        let kinds: Vec<_> = entries
            .iter()
            .map(|e| (e.name.to_string_lossy().into_owned(), e.kind))
            .collect();
        assert_eq!(
            kinds,
            vec![
                ("etc".to_owned(), Kind::Symlink),
                ("sub".to_owned(), Kind::Dir)
            ]
        );
    }
}
