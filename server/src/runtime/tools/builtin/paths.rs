//! The security boundary of the file tools: where a path the model names really is, and
//! whether the session may read or write there.
//!
//! The file tools run inside the server process, not under bubblewrap, so they enforce the
//! sandbox's file policy themselves:
//! - a path is resolved against the turn's working directory, then every existing component
//!   is resolved on disk (symbolic links included) *before* the check, so a link inside the
//!   workspace never lets a call out of it; components that do not exist yet cannot be links
//!   and are appended as given (a `..` after them only removes them);
//! - reads may reach the workspace (`cell.data`), the staged bundle (`cell.app`) and the
//!   bundle's mounts; writes only the workspace and the writable mounts, and nothing at all
//!   in `read_only`;
//! - in `danger_full_access` the session's processes run on the host without restriction,
//!   so the file tools follow the same policy: any path is allowed (links are still resolved,
//!   and writes still land on the real file, never replace a link).
//!
//! Errors name the path as the model gave it, never what a link pointed to, so a refusal
//! does not reveal host paths outside the workspace.
//!
//! What this cannot prevent: a process changing the tree between the check and the use (a
//! directory swapped for a link). Sandboxed processes of a session do not outlive their
//! command, and tool calls of a turn run one after another, so no such process is running
//! while a file tool works.

use std::ffi::OsStr;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::runtime::policy::SandboxMode;
use crate::runtime::tools::ToolContext;

/// What a call wants to do with a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    Read,
    Write,
}

/// A path after resolution, known to be allowed for the access it was resolved for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// Absolute; every existing component is a real directory or file (no links), the
    /// components that do not exist yet follow as given.
    pub real: PathBuf,
    /// Whether the whole path exists.
    pub exists: bool,
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
        "`{given}` goes through a symbolic link that points outside the workspace; \
         links out of the workspace are not followed"
    )]
    SymlinkEscape { given: String },

    #[error("`{given}` is a symbolic link whose target does not exist")]
    DanglingSymlink { given: String },

    #[error("cannot write `{given}`: the session's sandbox mode is read_only")]
    ReadOnlyMode { given: String },

    #[error(
        "cannot write `{given}`: it is in a read-only location (the bundle's files or a \
         read-only mount); write inside the workspace instead"
    )]
    ReadOnlyLocation { given: String },

    #[error("cannot resolve `{given}`: {source}")]
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

/// Where one call may reach: the session's roots, resolved on disk once per call.
#[derive(Clone, Debug)]
pub(crate) struct Scope {
    mode: SandboxMode,
    /// The workspace, canonical.
    workspace: PathBuf,
    /// The working directory, canonical.
    cwd: PathBuf,
    /// Roots readable besides the workspace: the staged bundle and every mount.
    readable: Vec<PathBuf>,
    /// Roots writable besides the workspace: the writable mounts.
    writable: Vec<PathBuf>,
}

impl Scope {
    /// Resolves the context's roots. Roots that do not exist (a mount that is gone) are
    /// dropped: nothing can be read under them anyway.
    pub fn new(ctx: &ToolContext) -> Result<Self, PathError> {
        let workspace =
            fs::canonicalize(&ctx.cell.data).map_err(|source| PathError::Workspace { source })?;
        let cwd = fs::canonicalize(&ctx.cwd)
            .ok()
            .filter(|cwd| cwd.starts_with(&workspace))
            .unwrap_or_else(|| workspace.clone());
        let canonical = |paths: &[PathBuf]| -> Vec<PathBuf> {
            paths
                .iter()
                .filter_map(|p| fs::canonicalize(p).ok())
                .collect()
        };
        let writable = canonical(&ctx.mounts_write);
        let mut readable = canonical(std::slice::from_ref(&ctx.cell.app));
        readable.extend(canonical(&ctx.mounts_read));
        readable.extend(writable.iter().cloned());
        Ok(Self {
            mode: ctx.mode,
            workspace,
            cwd,
            readable,
            writable,
        })
    }

    /// The canonical working directory.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Resolves `given` (relative to the working directory, or absolute) and checks that
    /// `access` is allowed there.
    pub fn resolve(&self, given: &str, access: Access) -> Result<Resolved, PathError> {
        if access == Access::Write && self.mode == SandboxMode::ReadOnly {
            return Err(PathError::ReadOnlyMode {
                given: given.to_owned(),
            });
        }
        let walked = self.walk(given)?;
        if self.mode == SandboxMode::DangerFullAccess || self.allows(&walked.real, access) {
            return Ok(Resolved {
                real: walked.real,
                exists: walked.exists,
            });
        }
        let given = given.to_owned();
        Err(
            if access == Access::Write && self.allows(&walked.real, Access::Read) {
                PathError::ReadOnlyLocation { given }
            } else if walked.through_link {
                PathError::SymlinkEscape { given }
            } else {
                PathError::Outside { given }
            },
        )
    }

    /// Resolves a path found on disk (during a walk) for reading, without the name the
    /// model gave: used to decide whether a link met on the way may be followed.
    pub fn resolve_found(&self, path: &Path) -> Option<PathBuf> {
        let walked = self.walk_path(path, &path.to_string_lossy()).ok()?;
        let allowed =
            self.mode == SandboxMode::DangerFullAccess || self.allows(&walked.real, Access::Read);
        (walked.exists && allowed).then_some(walked.real)
    }

    /// How a resolved path is shown to the model: relative to the working directory when
    /// under it (so it can be passed back as is), absolute otherwise.
    pub fn display(&self, real: &Path) -> String {
        match real.strip_prefix(&self.cwd) {
            Ok(rel) => slash_path(rel),
            Err(_) => real.to_string_lossy().into_owned(),
        }
    }

    /// The path relative to the workspace root (`src/main.rs`, `.` for the root itself),
    /// or `None` when it lies outside the workspace.
    pub fn workspace_relative(&self, real: &Path) -> Option<String> {
        real.strip_prefix(&self.workspace).ok().map(slash_path)
    }

    /// What permission rules match for a path argument: the path relative to the
    /// workspace root when it lies inside (`Write(src/*)`), the absolute path otherwise.
    /// Links are resolved, so a link cannot dodge a rule; a path that cannot be resolved
    /// (it will be refused when the call runs) is normalized lexically instead.
    pub fn permission_subject(&self, given: &str) -> String {
        let real = match self.walk(given) {
            Ok(walked) => walked.real,
            Err(_) => lexical(&self.cwd.join(given)),
        };
        self.workspace_relative(&real)
            .unwrap_or_else(|| real.to_string_lossy().into_owned())
    }

    fn allows(&self, real: &Path, access: Access) -> bool {
        let extra = match access {
            Access::Read => &self.readable,
            Access::Write => &self.writable,
        };
        real.starts_with(&self.workspace) || extra.iter().any(|root| real.starts_with(root))
    }

    fn walk(&self, given: &str) -> Result<Walked, PathError> {
        if given.is_empty() {
            return Err(PathError::Empty);
        }
        if given.contains('\0') {
            return Err(PathError::Nul {
                given: given.to_owned(),
            });
        }
        self.walk_path(&self.cwd.join(given), given)
    }

    /// Resolves `path` (absolute) component by component. `given` only names it in errors.
    fn walk_path(&self, path: &Path, given: &str) -> Result<Walked, PathError> {
        let mut real = PathBuf::from("/");
        // How many trailing components of `real` do not exist on disk.
        let mut missing = 0usize;
        let mut through_link = false;
        for component in path.components() {
            match component {
                Component::Prefix(_) | Component::RootDir => {
                    real = PathBuf::from("/");
                    missing = 0;
                }
                Component::CurDir => {}
                Component::ParentDir => {
                    real.pop();
                    missing = missing.saturating_sub(1);
                }
                Component::Normal(name) if missing > 0 => {
                    real.push(name);
                    missing += 1;
                }
                Component::Normal(name) => {
                    let step = step(&real, name, given)?;
                    through_link |= step.link;
                    real = step.path;
                    if !step.exists {
                        missing = 1;
                    }
                }
            }
        }
        Ok(Walked {
            real,
            exists: missing == 0,
            through_link,
        })
    }
}

struct Walked {
    real: PathBuf,
    exists: bool,
    through_link: bool,
}

struct Step {
    path: PathBuf,
    exists: bool,
    link: bool,
}

/// Resolves one existing-or-not component below the real directory `dir`.
fn step(dir: &Path, name: &OsStr, given: &str) -> Result<Step, PathError> {
    let candidate = dir.join(name);
    let io_error = |source| PathError::Io {
        given: given.to_owned(),
        source,
    };
    match fs::symlink_metadata(&candidate) {
        Ok(meta) if meta.file_type().is_symlink() => match fs::canonicalize(&candidate) {
            Ok(path) => Ok(Step {
                path,
                exists: true,
                link: true,
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(PathError::DanglingSymlink {
                given: given.to_owned(),
            }),
            Err(e) => Err(io_error(e)),
        },
        Ok(_) => Ok(Step {
            path: candidate,
            exists: true,
            link: false,
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Step {
            path: candidate,
            exists: false,
            link: false,
        }),
        // A component that is a file, followed by more components.
        Err(e) if e.kind() == io::ErrorKind::NotADirectory => Ok(Step {
            path: candidate,
            exists: false,
            link: false,
        }),
        Err(e) => Err(io_error(e)),
    }
}

/// `.` and `..` removed without looking at the disk.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
            Component::Prefix(_) | Component::RootDir | Component::CurDir => {}
        }
    }
    out
}

/// A relative path with `/` separators, `.` when empty.
fn slash_path(rel: &Path) -> String {
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

impl From<PathError> for crate::runtime::tools::ToolOutput {
    fn from(e: PathError) -> Self {
        Self::error(e.to_string())
    }
}
