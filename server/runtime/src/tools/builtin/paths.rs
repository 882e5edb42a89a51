//! The security boundary of the file tools: where a path the model names really is, and
//! whether the session may read or write there.
//!
//! The file tools run inside the server, not under bubblewrap, so they enforce the
//! sandbox's file policy themselves, and they do it the way the kernel would for a
//! sandboxed process, without ever checking a path and using it later (a process of the
//! session may change the tree at any moment):
//! - paths are those the session's processes see (`/workspace/src/main.rs`, `/app/...`,
//!   a mount's own path); a relative one is taken from the working directory, and `.` and
//!   `..` are applied to the text first, which picks the root the path lies in;
//! - each root is an open folder ([`BeneathDir`]); the rest of the path is resolved by the
//!   kernel beneath it in one `openat2` call, so a symbolic link is followed only while it
//!   stays beneath that root, and the call works on the descriptor it got;
//! - reads may reach the workspace, the staged bundle (`/app`) and the bundle's mounts;
//!   writes only the workspace and the writable mounts, and nothing at all in `read_only`;
//! - in `danger_full_access` the session's processes run on the host without restriction,
//!   so the file tools follow the same policy: one unconfined root, `/`, host paths.
//!
//! Errors name the path as the model gave it, never where a link pointed, so a refusal
//! does not reveal host paths outside the session's reach.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{OFlags, Stat};

use crate::policy::SandboxMode;
use crate::sandbox::beneath::{self, BeneathDir, Entry, Kind};
use crate::sandbox::paths::normalize;
use crate::tools::ToolContext;

/// What a call wants to do with a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    Read,
    Write,
}

/// Why a path was refused.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    #[error("the path is empty")]
    Empty,

    #[error("`{given}` contains a NUL byte")]
    Nul { given: String },

    #[error("`{given}` is outside the workspace{also}", also = ALSO_ALLOWED)]
    Outside { given: String },

    #[error(
        "`{given}` goes through a symbolic link that points outside its folder (or is \
         absolute); only relative links that stay inside are followed"
    )]
    SymlinkEscape { given: String },

    #[error("`{given}` is a symbolic link whose target does not exist")]
    DanglingSymlink { given: String },

    #[error("`{given}` does not exist")]
    Missing { given: String },

    #[error("cannot write `{given}`: the session's sandbox mode is read_only")]
    ReadOnlyMode { given: String },

    #[error(
        "cannot write `{given}`: it is in a read-only location (the bundle's files or a \
         read-only mount); write inside the workspace instead"
    )]
    ReadOnlyLocation { given: String },

    #[error("cannot reach `{given}`: {source}")]
    Io {
        given: String,
        #[source]
        source: io::Error,
    },

    #[error("the session's workspace is missing: {source}")]
    Workspace {
        #[source]
        source: io::Error,
    },
}

const ALSO_ALLOWED: &str = " (and outside the bundle's files and mounts this session may reach)";

/// One folder the session may reach, open for the length of a call.
#[derive(Debug)]
struct Root {
    /// Where it appears to the session's processes.
    shown: PathBuf,
    dir: BeneathDir,
    writable: bool,
}

/// A path the model named, located in one root (not yet opened).
#[derive(Debug)]
pub(crate) struct Target {
    root: usize,
    /// Beneath the root, `.`/`..` applied; empty for the root itself.
    rel: PathBuf,
    /// As the model gave it, for messages.
    pub given: String,
}

/// Where one call may reach: the session's roots, opened once per call.
#[derive(Debug)]
pub(crate) struct Scope {
    mode: SandboxMode,
    /// Longest shown path first, so the innermost root wins.
    roots: Vec<Root>,
    /// The workspace as the session's processes see it.
    workspace: PathBuf,
    /// The working directory, as the session's processes see it.
    cwd: PathBuf,
}

impl Scope {
    /// Opens the context's roots. Mounts that cannot be opened (gone) are dropped: nothing
    /// can be read under them anyway.
    pub fn new(ctx: &ToolContext) -> Result<Self, PathError> {
        let workspace = ctx.view.workspace.clone();
        let cwd = normalize(&workspace.join(&ctx.cwd));
        let cwd = if cwd.starts_with(&workspace) {
            cwd
        } else {
            workspace.clone()
        };
        let mut roots = Vec::new();
        if ctx.mode == SandboxMode::DangerFullAccess {
            let dir = BeneathDir::host_root().map_err(|source| PathError::Workspace { source })?;
            roots.push(Root {
                shown: PathBuf::from("/"),
                dir,
                writable: true,
            });
        } else {
            let writable = ctx.mode == SandboxMode::WorkspaceWrite;
            let dir = BeneathDir::open(&ctx.cell.data)
                .map_err(|source| PathError::Workspace { source })?;
            roots.push(Root {
                shown: workspace.clone(),
                dir,
                writable,
            });
            let others = std::iter::once((&ctx.view.app, &ctx.cell.app, false))
                .chain(ctx.mounts_read.iter().map(|m| (m, m, false)))
                .chain(ctx.mounts_write.iter().map(|m| (m, m, writable)));
            for (shown, host, writable) in others {
                if let Ok(dir) = BeneathDir::open(host) {
                    roots.push(Root {
                        shown: shown.clone(),
                        dir,
                        writable,
                    });
                }
            }
            roots.sort_by_key(|root| std::cmp::Reverse(root.shown.components().count()));
        }
        Ok(Self {
            mode: ctx.mode,
            roots,
            workspace,
            cwd,
        })
    }

    /// Locates `given` (relative to the working directory, or absolute) and checks that
    /// `access` is allowed there.
    pub fn target(&self, given: &str, access: Access) -> Result<Target, PathError> {
        if access == Access::Write && self.mode == SandboxMode::ReadOnly {
            return Err(PathError::ReadOnlyMode {
                given: given.to_owned(),
            });
        }
        let (root, rel) = self.place(given)?;
        if access == Access::Write && !self.roots[root].writable {
            return Err(PathError::ReadOnlyLocation {
                given: given.to_owned(),
            });
        }
        Ok(Target {
            root,
            rel,
            given: given.to_owned(),
        })
    }

    /// The root `given` lies in and the rest of it.
    fn place(&self, given: &str) -> Result<(usize, PathBuf), PathError> {
        if given.is_empty() {
            return Err(PathError::Empty);
        }
        if given.contains('\0') {
            return Err(PathError::Nul {
                given: given.to_owned(),
            });
        }
        let path = normalize(&self.cwd.join(given));
        self.roots
            .iter()
            .enumerate()
            .find_map(|(index, root)| {
                let rel = path.strip_prefix(&root.shown).ok()?;
                Some((index, rel.to_path_buf()))
            })
            .ok_or_else(|| PathError::Outside {
                given: given.to_owned(),
            })
    }

    /// What `target` is, following links beneath its root; `None` when nothing is there.
    pub fn locate(&self, target: &Target) -> Result<Option<(OwnedFd, Stat)>, PathError> {
        match self.root(target).locate(&target.rel) {
            Ok(found) => Ok(Some(found)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                self.refuse_dangling(target)?;
                Ok(None)
            }
            Err(e) => Err(self.error(target, e)),
        }
    }

    /// Opens `target` for reading (without blocking on a FIFO).
    pub fn open_read(&self, target: &Target) -> Result<(File, Stat), PathError> {
        match self.root(target).open_read(&target.rel) {
            Ok(open) => Ok(open),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                self.refuse_dangling(target)?;
                Err(PathError::Missing {
                    given: target.given.clone(),
                })
            }
            Err(e) => Err(self.error(target, e)),
        }
    }

    /// Opens the folder `target` for listing.
    pub fn open_dir(&self, target: &Target) -> Result<OwnedFd, PathError> {
        self.root(target)
            .open_at(&target.rel, OFlags::RDONLY | OFlags::DIRECTORY)
            .map_err(|e| self.error(target, e))
    }

    /// The entries of the folder `dir` (see [`BeneathDir::entries`]).
    pub fn entries(
        &self,
        target: &Target,
        dir: &OwnedFd,
        cap: usize,
    ) -> Result<(Vec<Entry>, bool), PathError> {
        BeneathDir::entries(dir, cap).map_err(|e| self.error(target, e))
    }

    /// Opens a symbolic link met by a walk at `rel` beneath `target`, following it only
    /// while it stays beneath the root; `None` when it leads out, dangles or is no file.
    pub fn open_found_link(&self, target: &Target, rel: &str) -> Option<(File, Stat)> {
        let (file, stat) = self.root(target).open_read(&target.rel.join(rel)).ok()?;
        (Kind::of_stat(&stat) == Kind::File).then_some((file, stat))
    }

    /// Writes `bytes` as the whole content of `target`, atomically. A link beneath the root
    /// is followed and its target replaced; the folders on the way are created. Answers
    /// whether the file existed. An existing file keeps its permissions, without the
    /// set-user-ID, set-group-ID and sticky bits; a new one is `0644`.
    pub fn write(&self, target: &Target, bytes: &[u8]) -> Result<bool, PathError> {
        let root = self.root(target);
        let (parent, name, mode, existed) = match self.locate(target)? {
            Some((fd, stat)) => {
                if Kind::of_stat(&stat) == Kind::Dir {
                    return Err(PathError::Io {
                        given: target.given.clone(),
                        source: io::Error::other("it is a folder; give a file path"),
                    });
                }
                let real = root.relative_of(&fd).map_err(|e| self.error(target, e))?;
                let (parent, name) = split(&real, &target.given)?;
                (parent, name, stat.st_mode, true)
            }
            None => {
                let (parent, name) = split(&target.rel, &target.given)?;
                (parent, name, 0o644, false)
            }
        };
        let parent = root
            .create_dirs(&parent)
            .map_err(|e| self.error(target, e))?;
        beneath::replace_file(&parent, &name, bytes, mode).map_err(|e| self.error(target, e))?;
        Ok(existed)
    }

    /// How a place beneath `target`'s root is shown to the model: relative to the working
    /// directory when under it (so it can be passed back as is), absolute otherwise.
    pub fn display(&self, target: &Target) -> String {
        let shown = self.roots[target.root].shown.join(&target.rel);
        match shown.strip_prefix(&self.cwd) {
            Ok(rel) => slash_path(rel),
            Err(_) => shown.to_string_lossy().into_owned(),
        }
    }

    /// What permission rules match for a path argument: the path relative to the
    /// workspace root when it lies inside (`Write(src/*)`), the absolute path as the
    /// session's processes see it otherwise. Links are followed as the call would follow
    /// them, so a link cannot dodge a rule; a path that cannot be resolved (it will be
    /// refused when the call runs) is shown with `.` and `..` applied.
    pub fn permission_subject(&self, given: &str) -> String {
        let shown = match self.place(given) {
            Ok((index, rel)) => {
                let root = &self.roots[index];
                root.shown.join(real_or_given(&root.dir, &rel))
            }
            Err(_) => normalize(&self.cwd.join(given)),
        };
        match shown.strip_prefix(&self.workspace) {
            Ok(rel) => slash_path(rel),
            Err(_) => shown.to_string_lossy().into_owned(),
        }
    }

    fn root(&self, target: &Target) -> &BeneathDir {
        &self.roots[target.root].dir
    }

    /// A missing target that is a link whose target does not exist gets its own message.
    fn refuse_dangling(&self, target: &Target) -> Result<(), PathError> {
        let Ok((parent, name)) = split(&target.rel, &target.given) else {
            return Ok(());
        };
        let Ok(parent) = self
            .root(target)
            .open_at(&parent, OFlags::PATH | OFlags::DIRECTORY)
        else {
            return Ok(());
        };
        if beneath::is_symlink(&parent, &name) {
            return Err(PathError::DanglingSymlink {
                given: target.given.clone(),
            });
        }
        Ok(())
    }

    fn error(&self, target: &Target, source: io::Error) -> PathError {
        let given = target.given.clone();
        if beneath::is_escape(&source) {
            PathError::SymlinkEscape { given }
        } else if source.kind() == io::ErrorKind::NotFound {
            PathError::Missing { given }
        } else {
            PathError::Io { given, source }
        }
    }
}

/// The longest existing part of `rel` as the kernel resolves it beneath `dir`, followed by
/// the rest as given.
fn real_or_given(dir: &BeneathDir, rel: &Path) -> PathBuf {
    let mut existing = rel.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok((fd, _)) = dir.locate(&existing)
            && let Ok(real) = dir.relative_of(&fd)
        {
            let mut out = real;
            out.extend(rest.iter().rev());
            return out;
        }
        let Some(name) = existing.file_name().map(OsStr::to_os_string) else {
            return rel.to_path_buf();
        };
        rest.push(name);
        existing.pop();
    }
}

/// The folder and the name of a file path beneath a root.
fn split(rel: &Path, given: &str) -> Result<(PathBuf, std::ffi::OsString), PathError> {
    match (rel.parent(), rel.file_name()) {
        (Some(parent), Some(name)) => Ok((parent.to_path_buf(), name.to_os_string())),
        _ => Err(PathError::Io {
            given: given.to_owned(),
            source: io::Error::other("it is a folder; give a file path"),
        }),
    }
}

/// A relative path with `/` separators, `.` when empty.
pub(crate) fn slash_path(rel: &Path) -> String {
    let parts: Vec<_> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect();
    if parts.is_empty() {
        ".".to_owned()
    } else {
        parts.join("/")
    }
}

impl From<PathError> for crate::tools::ToolOutput {
    fn from(e: PathError) -> Self {
        Self::error(e.to_string())
    }
}
