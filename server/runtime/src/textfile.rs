//! Reading the small text files the runtime puts in front of a model (bootstrap files,
//! SKILL.md) without trusting them: only regular files (a FIFO would block the turn, a
//! device would never end), never more than a cap (a huge file cannot exhaust memory), and,
//! inside a workspace, never through a symbolic link that leads out of it (the agent can
//! create links in its workspace, so `AGENTS.md -> /etc/shadow` must not be read).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::sandbox::beneath::{self, BeneathDir, Kind};

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum TextFileError {
    #[error("it is a symbolic link that leads outside its folder")]
    LinkEscape,
    #[error("it is a symbolic link")]
    Link,
    #[error("it is not a regular file")]
    NotRegular,
    #[error("{0}")]
    Io(#[from] io::Error),
}

impl Clone for TextFileError {
    fn clone(&self) -> Self {
        match self {
            Self::LinkEscape => Self::LinkEscape,
            Self::Link => Self::Link,
            Self::NotRegular => Self::NotRegular,
            Self::Io(e) => Self::Io(io::Error::new(e.kind(), e.to_string())),
        }
    }
}

/// What was read of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CappedText {
    /// At most the cap, cut on a character boundary; invalid UTF-8 replaced by U+FFFD.
    pub text: String,
    /// The file's whole size, in bytes.
    pub size: u64,
    /// The file was longer than the cap.
    pub truncated: bool,
}

/// Whether the last component of a path may be a symbolic link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Links {
    /// Refused: for files in folders a model or a client controls.
    Refuse,
    /// Followed: for operator-configured folders, where links are a deliberate setup.
    Follow,
}

/// Reads at most `cap` bytes of the regular file at `path`; `Ok(None)` when there is no
/// file there.
pub fn read_capped(
    path: &Path,
    cap: usize,
    links: Links,
) -> Result<Option<CappedText>, TextFileError> {
    let mut options = OpenOptions::new();
    options.read(true);
    // O_NONBLOCK: opening a FIFO for reading must not wait for a writer; the type check
    // below then refuses it.
    let mut flags = libc::O_NONBLOCK;
    if links == Links::Refuse {
        flags |= libc::O_NOFOLLOW;
    }
    options.custom_flags(flags);
    let file = match options.open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) && links == Links::Refuse => {
            return Err(TextFileError::Link);
        }
        Err(e) => return Err(e.into()),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(TextFileError::NotRegular);
    }
    read_open(file, meta.len(), cap).map(Some)
}

/// Reads `name` in `root` at most `cap` bytes at a time. A symbolic link is followed only
/// when its target is inside `root`; the target is then opened without following links
/// again. `Ok(None)` when there is no such file.
pub fn read_inside(
    root: &Path,
    name: &str,
    cap: usize,
) -> Result<Option<CappedText>, TextFileError> {
    let path = root.join(name);
    let meta = match fs::symlink_metadata(&path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    if !meta.file_type().is_symlink() {
        return read_capped(&path, cap, Links::Refuse);
    }
    let root = root.canonicalize()?;
    match path.canonicalize() {
        Ok(real) if real.starts_with(&root) => read_capped(&real, cap, Links::Refuse),
        Ok(_) => Err(TextFileError::LinkEscape),
        // A dangling link is no file; where it points is nobody's business.
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Reads `name` beneath the open folder `dir` at most `cap` bytes at a time, following a
/// link only while it stays beneath `dir` (resolved by the kernel in the same call that
/// opens the file). `Ok(None)` when there is no such file, a dangling link included.
pub fn read_beneath(
    dir: &BeneathDir,
    name: &str,
    cap: usize,
) -> Result<Option<CappedText>, TextFileError> {
    let (file, stat) = match dir.open_read(Path::new(name)) {
        Ok(open) => open,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if beneath::is_escape(&e) => return Err(TextFileError::LinkEscape),
        Err(e) => return Err(e.into()),
    };
    if Kind::of_stat(&stat) != Kind::File {
        return Err(TextFileError::NotRegular);
    }
    read_open(file, u64::try_from(stat.st_size).unwrap_or(0), cap).map(Some)
}

impl CappedText {
    /// This text cut further to at most `cap` bytes (on a character boundary).
    pub fn recapped(&self, cap: usize) -> Self {
        if self.text.len() <= cap {
            return self.clone();
        }
        let mut end = cap;
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        Self {
            text: self.text[..end].to_owned(),
            size: self.size,
            truncated: true,
        }
    }
}

fn read_open(file: File, size: u64, cap: usize) -> Result<CappedText, TextFileError> {
    let limit = u64::try_from(cap).unwrap_or(u64::MAX).saturating_add(1);
    let mut bytes = Vec::with_capacity(cap.min(usize::try_from(size).unwrap_or(cap)) + 1);
    file.take(limit).read_to_end(&mut bytes)?;
    // A file growing while it is read may be longer than its size said.
    let size = size.max(u64::try_from(bytes.len()).unwrap_or(u64::MAX));
    let truncated = bytes.len() > cap;
    if truncated {
        bytes.truncate(cap);
        // Drop a character the cap cut in half.
        if let Err(e) = std::str::from_utf8(&bytes)
            && e.error_len().is_none()
        {
            bytes.truncate(e.valid_up_to());
        }
    }
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    Ok(CappedText {
        text,
        size,
        truncated,
    })
}
