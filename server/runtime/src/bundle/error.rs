//! The bundle module's error type.
//!
//! Bundles come from clients, so most failures are the caller's to fix: each such error says
//! which file, field, archive entry or reference is at fault, and `kind()` maps it to
//! `InvalidArgument` rather than `Internal`. Disk failures keep their `io::Error` as the source
//! so a full or read-only disk is reported as what it is.

use std::io;
use std::path::PathBuf;

use crate::error::{ErrorKind, storage_kind, storage_reason};

/// The reference forms `resolve`, `delete` and `export` accept; quoted in every reference error
/// so a user sees the fix next to the mistake.
pub const REFERENCE_FORMS: &str = "name, name@version, name@latest, namespace/name, \
     namespace/name@version, namespace/name@latest, @sha256:<64 hex>, name@sha256:<64 hex>";

/// A failure of a bundle operation.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// The manifest, an agent file or a skill reference is wrong. `location` is
    /// `file:field` (or just `file` when the YAML itself does not parse).
    #[error("{file}: {}{message}", field_prefix(.field))]
    InvalidManifest {
        file: String,
        field: String,
        message: String,
        location: String,
    },

    /// The project directory cannot be turned into a bundle (a symlink leaving it, too many
    /// files, ...). `path` is relative to the project.
    #[error("invalid bundle project: {path}: {message}")]
    InvalidProject { path: String, message: String },

    /// An archive entry was refused; nothing of the archive was installed.
    #[error("invalid bundle archive: entry `{entry}`: {message}")]
    InvalidArchive { entry: String, message: String },

    #[error(
        "invalid bundle reference `{reference}`: {message}; accepted forms: {}",
        REFERENCE_FORMS
    )]
    InvalidReference { reference: String, message: String },

    /// A name given by the caller rather than a manifest (namespace, scaffold name).
    #[error("invalid {field} `{value}`: {message}")]
    InvalidName {
        field: &'static str,
        value: String,
        message: String,
    },

    #[error("bundle `{reference}` is not installed")]
    NotFound { reference: String },

    #[error("bundle {bundle} has no skill `{skill}`")]
    SkillNotFound { bundle: String, skill: String },

    #[error(
        "bundle reference `{reference}` matches several installed bundles ({}); name the namespace",
        .candidates.join(", ")
    )]
    AmbiguousReference {
        reference: String,
        candidates: Vec<String>,
    },

    #[error(
        "bundle {bundle} is already installed with different content (installed {installed}, \
         new {new}); pass force to replace it"
    )]
    VersionExists {
        bundle: String,
        installed: String,
        new: String,
    },

    /// The content does not have the digest it was announced with; nothing was installed.
    #[error(
        "the bundle's content digest is {actual}, not the {expected} it was published with; \
         nothing was installed"
    )]
    DigestMismatch { expected: String, actual: String },

    #[error("{} is not empty; choose a new or empty directory", .path.display())]
    DirectoryNotEmpty { path: PathBuf },

    /// An installed bundle on disk no longer reads back (edited or damaged by hand).
    #[error("installed bundle at {} is unreadable: {message}", .path.display())]
    Corrupt { path: PathBuf, message: String },

    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
}

fn field_prefix(field: &str) -> String {
    if field.is_empty() {
        String::new()
    } else {
        format!("{field}: ")
    }
}

impl BundleError {
    /// A manifest error at `file` / `field` (a dotted path such as `spec.agents[1].id`).
    pub fn manifest(
        file: impl Into<String>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        let (file, field) = (file.into(), field.into());
        let location = if field.is_empty() {
            file.clone()
        } else {
            format!("{file}:{field}")
        };
        Self::InvalidManifest {
            file,
            field,
            message: message.into(),
            location,
        }
    }

    pub(crate) fn archive(entry: impl Into<String>, message: impl Into<String>) -> Self {
        Self::InvalidArchive {
            entry: entry.into(),
            message: message.into(),
        }
    }

    pub(crate) fn project(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::InvalidProject {
            path: path.into(),
            message: message.into(),
        }
    }

    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }

    /// What the caller should do about this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::InvalidManifest { .. }
            | Self::InvalidProject { .. }
            | Self::InvalidArchive { .. }
            | Self::InvalidReference { .. }
            | Self::InvalidName { .. }
            | Self::AmbiguousReference { .. } => ErrorKind::InvalidArgument,
            Self::NotFound { .. } | Self::SkillNotFound { .. } => ErrorKind::NotFound,
            Self::VersionExists { .. } => ErrorKind::AlreadyExists,
            Self::DirectoryNotEmpty { .. } | Self::DigestMismatch { .. } => {
                ErrorKind::FailedPrecondition
            }
            Self::Corrupt { .. } => ErrorKind::Internal,
            Self::Io { source, .. } => storage_kind(source),
        }
    }

    /// A stable UPPER_SNAKE identifier for `google.rpc.ErrorInfo.reason`.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::InvalidManifest { .. } => "INVALID_MANIFEST",
            Self::InvalidProject { .. } => "INVALID_PROJECT",
            Self::InvalidArchive { .. } => "INVALID_ARCHIVE",
            Self::InvalidReference { .. } => "INVALID_REFERENCE",
            Self::InvalidName { .. } => "INVALID_NAME",
            Self::NotFound { .. } => "BUNDLE_NOT_FOUND",
            Self::SkillNotFound { .. } => "SKILL_NOT_FOUND",
            Self::AmbiguousReference { .. } => "AMBIGUOUS_REFERENCE",
            Self::VersionExists { .. } => "BUNDLE_VERSION_EXISTS",
            Self::DirectoryNotEmpty { .. } => "DIRECTORY_NOT_EMPTY",
            Self::DigestMismatch { .. } => "DIGEST_MISMATCH",
            Self::Corrupt { .. } => "BUNDLE_CORRUPT",
            Self::Io { source, .. } => storage_reason(source),
        }
    }

    /// The field at fault: `file:field` for manifest errors, the entry or path for archive
    /// and project errors, the request field otherwise.
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::InvalidManifest { location, .. } => Some(location),
            Self::InvalidProject { path, .. } => Some(path),
            Self::InvalidArchive { entry, .. } => Some(entry),
            Self::InvalidReference { .. } | Self::AmbiguousReference { .. } => Some("reference"),
            Self::InvalidName { field, .. } => Some(field),
            _ => None,
        }
    }
}
