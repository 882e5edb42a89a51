//! The sandbox module's error type.
//!
//! A process that starts and then fails is not an error here: its exit code and output are
//! the answer. These errors are the cases where nothing could be started at all, and each
//! says what to do about it: install a package, fix a request, make a folder reachable.

use std::io;
use std::path::PathBuf;

use crate::error::{ErrorKind, storage_kind, storage_reason};

/// The hint every "bubblewrap is missing" message carries, so the fix is one copy away.
pub const BUBBLEWRAP_INSTALL_HINT: &str = "apt-get install bubblewrap";

/// Why a sandboxed process could not be started (or a cell not prepared).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// Restricted modes need bubblewrap and it is not installed.
    #[error(
        "bubblewrap is not installed (looked for {looked_for}); restricted sandbox modes need \
         it: install the `bubblewrap` package (`{}`)",
        BUBBLEWRAP_INSTALL_HINT
    )]
    BubblewrapMissing { looked_for: String },

    /// The `odyssey-sandbox` helper that applies Landlock and seccomp was not found.
    #[error(
        "the sandbox helper `odyssey-sandbox` was not found (looked for {looked_for}); install \
         it beside odysseyd or point ODYSSEY_SANDBOX_HELPER at it"
    )]
    HelperMissing { looked_for: String },

    /// The request itself is malformed (empty command, bad exec id, bad variable name...).
    #[error("invalid sandbox request: {field}: {message}")]
    InvalidRequest {
        field: &'static str,
        message: String,
    },

    /// A path of the request leads outside what the sandbox may see.
    #[error("{field} `{}` is outside {allowed}", .path.display())]
    PathEscape {
        field: &'static str,
        path: PathBuf,
        allowed: String,
    },

    /// Without a pids cgroup, a session may run only so many commands at once.
    #[error(
        "the session already runs {limit} commands, as many as it may at once on this host \
         (no per-session cgroup; sandbox.max_commands_per_session); retry when one ends"
    )]
    TooManyCommands { limit: u64 },

    /// Another process with the same exec id is still running.
    #[error("exec id `{exec_id}` is already running")]
    AlreadyRunning { exec_id: String },

    #[error("could not start {program}: {source}")]
    Spawn {
        program: String,
        #[source]
        source: io::Error,
    },

    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
}

impl SandboxError {
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }

    pub(crate) fn invalid(field: &'static str, message: impl Into<String>) -> Self {
        Self::InvalidRequest {
            field,
            message: message.into(),
        }
    }

    /// What the caller should do about this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::BubblewrapMissing { .. }
            | Self::HelperMissing { .. }
            | Self::AlreadyRunning { .. } => ErrorKind::FailedPrecondition,
            Self::InvalidRequest { .. } => ErrorKind::InvalidArgument,
            Self::TooManyCommands { .. } => ErrorKind::ResourceExhausted,
            Self::PathEscape { .. } => ErrorKind::PermissionDenied,
            Self::Spawn { .. } => ErrorKind::Internal,
            Self::Io { source, .. } => storage_kind(source),
        }
    }

    /// A stable UPPER_SNAKE identifier for `google.rpc.ErrorInfo.reason`.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::BubblewrapMissing { .. } => "BUBBLEWRAP_MISSING",
            Self::HelperMissing { .. } => "SANDBOX_HELPER_MISSING",
            Self::InvalidRequest { .. } => "INVALID_SANDBOX_REQUEST",
            Self::PathEscape { .. } => "SANDBOX_PATH_ESCAPE",
            Self::AlreadyRunning { .. } => "EXEC_ALREADY_RUNNING",
            Self::TooManyCommands { .. } => "SESSION_COMMAND_LIMIT",
            Self::Spawn { .. } => "SANDBOX_SPAWN_FAILED",
            Self::Io { source, .. } => storage_reason(source),
        }
    }

    /// The request field at fault, for `google.rpc.BadRequest` field violations.
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::InvalidRequest { field, .. } | Self::PathEscape { field, .. } => Some(field),
            _ => None,
        }
    }
}
