//! The core's error type. Every failure a caller can see carries an [`ErrorKind`] (what the
//! caller should do about it), a stable machine-readable `reason`, and, for bad input, the
//! field at fault. The gRPC adapter maps these one-to-one onto status codes.

use std::time::Duration;

/// What kind of failure this is, from the caller's point of view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request is malformed; retrying it unchanged fails again.
    InvalidArgument,
    NotFound,
    AlreadyExists,
    /// The request is well-formed but the system is not in a state to accept it.
    FailedPrecondition,
    /// An operator setting forbids what was asked.
    PermissionDenied,
    /// A bounded resource (queue, disk) is full; retry later.
    ResourceExhausted,
    /// A dependency (model provider, registry, disk) is unavailable right now.
    Unavailable,
    Cancelled,
    DeadlineExceeded,
    /// The operation exists in the API but this server does not provide it yet.
    Unimplemented,
    /// A bug or an unexpected environment failure. Details stay in the server log.
    Internal,
}

/// An error of the runtime core.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("invalid {field}: {message}")]
    InvalidArgument { field: String, message: String },

    #[error("{what} not found: {id}")]
    NotFound { what: &'static str, id: String },

    #[error("{0}")]
    FailedPrecondition(String),

    #[error("{message} (setting: {setting})")]
    PermissionDenied { setting: String, message: String },

    #[error("the execution queue is full ({capacity} turns waiting); retry later")]
    QueueFull {
        capacity: usize,
        retry_after: Duration,
    },

    #[error(
        "the running turn already has {waiting} inputs waiting for its next model call; retry once it takes them, or send the input in queue mode"
    )]
    InputsWaiting {
        waiting: usize,
        retry_after: Duration,
    },

    #[error("{0}")]
    Unimplemented(&'static str),

    #[error("the server is shutting down")]
    ShuttingDown,

    /// This server read the session again from the store several servers share (its copy
    /// fell behind another server's writes): a subscription to it ends, and the client
    /// subscribes again after the last sequence it received, missing nothing.
    #[error(
        "session {session_id} was read again from the shared store on this server; subscribe again after the last sequence received"
    )]
    SessionReloaded { session_id: String },

    /// The store (a database several servers share) cannot be reached right now; the
    /// server reconnects by itself.
    #[error("the store is unavailable: {0}; retry shortly")]
    StoreUnavailable(String),

    #[error(transparent)]
    Bundle(#[from] crate::bundle::BundleError),

    #[error(transparent)]
    Hub(#[from] crate::hub::HubError),

    #[error(transparent)]
    Provider(#[from] crate::provider::ProviderError),

    #[error(transparent)]
    Sandbox(#[from] crate::sandbox::SandboxError),

    #[error(transparent)]
    Approval(#[from] crate::permissions::ApprovalError),

    #[error(transparent)]
    Rule(#[from] crate::permissions::RuleError),

    #[error("{context}: {source}")]
    Storage {
        context: String,
        #[source]
        source: std::io::Error,
    },

    #[error("session {session_id} is corrupt and was quarantined: {reason}")]
    Quarantined { session_id: String, reason: String },

    /// The session's lifetime token budget is spent. Retrying cannot help (the budget
    /// never refills), hence FAILED_PRECONDITION rather than RESOURCE_EXHAUSTED, which
    /// clients treat as "retry later".
    #[error(
        "session {session_id} has spent its token budget ({spent} of {budget} tokens); start a new session to continue"
    )]
    TokenBudgetExhausted {
        session_id: String,
        budget: u64,
        spent: u64,
    },
}

impl RuntimeError {
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::InvalidArgument {
            field: field.into(),
            message: message.into(),
        }
    }

    pub fn not_found(what: &'static str, id: impl Into<String>) -> Self {
        Self::NotFound {
            what,
            id: id.into(),
        }
    }

    pub fn storage(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Storage {
            context: context.into(),
            source,
        }
    }

    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::InvalidArgument { .. } => ErrorKind::InvalidArgument,
            Self::NotFound { .. } => ErrorKind::NotFound,
            Self::FailedPrecondition(_) => ErrorKind::FailedPrecondition,
            Self::PermissionDenied { .. } => ErrorKind::PermissionDenied,
            Self::QueueFull { .. } => ErrorKind::ResourceExhausted,
            Self::InputsWaiting { .. } => ErrorKind::ResourceExhausted,
            Self::Unimplemented(_) => ErrorKind::Unimplemented,
            Self::ShuttingDown => ErrorKind::Unavailable,
            Self::StoreUnavailable(_) => ErrorKind::Unavailable,
            Self::SessionReloaded { .. } => ErrorKind::Unavailable,
            Self::Bundle(e) => e.kind(),
            Self::Hub(e) => e.kind(),
            Self::Provider(e) => e.kind(),
            Self::Sandbox(e) => e.kind(),
            Self::Approval(e) => e.kind(),
            Self::Rule(e) => e.kind(),
            Self::Storage { source, .. } => storage_kind(source),
            Self::Quarantined { .. } => ErrorKind::FailedPrecondition,
            Self::TokenBudgetExhausted { .. } => ErrorKind::FailedPrecondition,
        }
    }

    /// A stable UPPER_SNAKE identifier for `google.rpc.ErrorInfo.reason`.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::InvalidArgument { .. } => "INVALID_ARGUMENT",
            Self::NotFound { what, .. } => match *what {
                "session" => "SESSION_NOT_FOUND",
                "execution" => "EXECUTION_NOT_FOUND",
                "approval" => "APPROVAL_NOT_FOUND",
                "agent" => "AGENT_NOT_FOUND",
                _ => "NOT_FOUND",
            },
            Self::FailedPrecondition(_) => "FAILED_PRECONDITION",
            Self::PermissionDenied { .. } => "PERMISSION_DENIED",
            Self::QueueFull { .. } => "QUEUE_FULL",
            Self::InputsWaiting { .. } => "INPUTS_WAITING",
            Self::Unimplemented(_) => "UNIMPLEMENTED",
            Self::ShuttingDown => "SHUTTING_DOWN",
            Self::StoreUnavailable(_) => "STORE_UNAVAILABLE",
            Self::SessionReloaded { .. } => "SESSION_RELOADED",
            Self::Bundle(e) => e.reason(),
            Self::Hub(e) => e.reason(),
            Self::Provider(e) => e.reason(),
            Self::Sandbox(e) => e.reason(),
            Self::Approval(e) => e.reason(),
            Self::Rule(e) => e.reason(),
            Self::Storage { source, .. } => storage_reason(source),
            Self::Quarantined { .. } => "SESSION_QUARANTINED",
            Self::TokenBudgetExhausted { .. } => "SESSION_TOKEN_BUDGET_EXHAUSTED",
        }
    }

    /// The request field at fault, for `google.rpc.BadRequest` field violations.
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::InvalidArgument { field, .. } => Some(field),
            Self::Bundle(e) => e.field(),
            Self::Hub(e) => e.field(),
            Self::Sandbox(e) => e.field(),
            Self::Approval(e) => e.field(),
            _ => None,
        }
    }

    /// The message a client is shown. A full or read-only disk is named as such, without
    /// the files of the server's home its detail names (the log has those).
    pub fn client_message(&self) -> String {
        match self.reason() {
            "DISK_FULL" => {
                "the server's disk is full (no space left on device); retry once space is freed"
                    .into()
            }
            "STORAGE_READ_ONLY" => "the server's storage is read-only; nothing can be written \
                                    until it is writable again"
                .into(),
            _ => self.to_string(),
        }
    }

    /// How long a caller should wait before retrying, when that is known.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::QueueFull { retry_after, .. } | Self::InputsWaiting { retry_after, .. } => {
                Some(*retry_after)
            }
            Self::StoreUnavailable(_) => Some(Duration::from_secs(1)),
            _ => None,
        }
    }
}

/// Disk full and read-only file systems are conditions an operator fixes, not bugs.
pub(crate) fn storage_kind(e: &std::io::Error) -> ErrorKind {
    use std::io::ErrorKind as Io;
    match e.kind() {
        Io::StorageFull | Io::QuotaExceeded => ErrorKind::ResourceExhausted,
        Io::ReadOnlyFilesystem => ErrorKind::Unavailable,
        _ => ErrorKind::Internal,
    }
}

/// The ErrorInfo reason of a storage failure, matching [`storage_kind`].
pub(crate) fn storage_reason(e: &std::io::Error) -> &'static str {
    match storage_kind(e) {
        ErrorKind::ResourceExhausted => "DISK_FULL",
        ErrorKind::Unavailable => "STORAGE_READ_ONLY",
        _ => "STORAGE_ERROR",
    }
}

/// Client input as error messages quote it: whole when short, else its start and `…`.
/// A message travels in the gRPC trailers, so echoing a megabyte of input back would
/// break the response rather than explain it.
pub fn shorten(value: &str) -> String {
    const MAX: usize = 64;
    if value.len() <= MAX {
        return value.to_string();
    }
    format!(
        "{}{}",
        crate::text::byte_prefix(value, MAX),
        crate::text::CUT_MARK
    )
}

pub type Result<T, E = RuntimeError> = std::result::Result<T, E>;

/// An error and its causes on one line (`error sending request: connection refused`):
/// reqwest's and hyper's top-level messages hide the useful part in their sources. A cause
/// already quoted by the message before it is not repeated.
pub fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
