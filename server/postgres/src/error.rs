//! What can go wrong in the store, each with what it was about. No variant carries the
//! database password: connection errors name the host, never the URL.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the database URL is not valid: {0}")]
    InvalidUrl(String),
    #[error(
        "the database at {host} is not on this machine, so the connection must be encrypted: \
         add sslmode=require to the database URL"
    )]
    TlsRequired { host: String },
    #[error("TLS to the database: {0}")]
    Tls(String),
    #[error("cannot read the database password file {path}: {source}")]
    PasswordFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the database password file {path} is empty")]
    EmptyPasswordFile { path: PathBuf },
    #[error("the database connection pool: {0}")]
    Pool(String),
    #[error("cannot get a database connection: {message}")]
    Connect {
        message: String,
        #[source]
        source: deadpool_postgres::PoolError,
    },
    #[error("the database failed to {what}: {message}")]
    Query {
        what: &'static str,
        message: String,
        #[source]
        source: tokio_postgres::Error,
    },
    #[error(
        "the database is at schema version {found}, newer than this odysseyd knows \
         ({known}): upgrade odysseyd"
    )]
    SchemaTooNew { found: i64, known: i64 },
    #[error(
        "migration {version} ({name}) as applied to the database differs from the one this \
         odysseyd carries"
    )]
    MigrationChanged { version: i64, name: String },
    #[error("session {0} does not exist")]
    SessionNotFound(String),
    #[error("session {0} already exists")]
    SessionExists(String),
    #[error(
        "session {session_id} is leased to {holder} until it expires; it cannot be taken \
         over before then"
    )]
    LeaseHeld { session_id: String, holder: String },
    #[error(
        "the lease on session {session_id} (epoch {epoch}) is no longer held by {holder}: \
         it expired or was taken over"
    )]
    LeaseLost {
        session_id: String,
        holder: String,
        epoch: i64,
    },
    #[error("session {session_id} is at sequence {actual}, not {expected} as the append expected")]
    SequenceConflict {
        session_id: String,
        expected: i64,
        actual: i64,
    },
    #[error("turn {0} already exists")]
    TurnExists(String),
    #[error("turn {turn_id} is not running on {holder}")]
    TurnNotRunning { turn_id: String, holder: String },
    #[error(
        "bundle {0}: its archive in the database no longer matches the SHA-256 recorded at install"
    )]
    BundleCorrupted(String),
    #[error("approval {0} already exists")]
    ApprovalExists(String),
    #[error("approval {0} does not exist")]
    ApprovalNotFound(String),
    #[error("approval {0} was already answered")]
    ApprovalDecided(String),
    #[error("{0}")]
    InvalidArgument(String),
    #[error("cannot open the store: {0}")]
    Open(String),
    #[error("the connection listening for appended events was closed: {0}")]
    ListenerClosed(String),
}

impl StoreError {
    /// Whether the database could not be reached: no connection could be made or had
    /// within the pool's wait, or the connection was lost or shut down by the server
    /// (SQLSTATE class 08, `57P01`–`57P03`, too many connections). Such a failure is
    /// passing: the pool connects again on the next call.
    pub fn is_unavailable(&self) -> bool {
        match self {
            Self::Connect { source, .. } => match source {
                deadpool_postgres::PoolError::Timeout(_) | deadpool_postgres::PoolError::Closed => {
                    true
                }
                deadpool_postgres::PoolError::Backend(e) => is_connection_lost(e),
                _ => false,
            },
            Self::Query { source, .. } => is_connection_lost(source),
            Self::ListenerClosed(_) => true,
            _ => false,
        }
    }

    pub(crate) fn query(what: &'static str) -> impl FnOnce(tokio_postgres::Error) -> Self {
        move |source| Self::Query {
            what,
            message: describe(&source),
            source,
        }
    }
}

impl From<deadpool_postgres::PoolError> for StoreError {
    fn from(source: deadpool_postgres::PoolError) -> Self {
        let message = match &source {
            deadpool_postgres::PoolError::Backend(e) => describe(e),
            other => other.to_string(),
        };
        Self::Connect { message, source }
    }
}

/// What the server said (`FATAL: password authentication failed for user "odyssey"`), or
/// the client's error with its causes: the driver's own text for a server error is only
/// "db error".
pub(crate) fn describe(error: &tokio_postgres::Error) -> String {
    if let Some(db) = error.as_db_error() {
        return format!("{}: {}", db.severity(), db.message());
    }
    let mut text = error.to_string();
    let mut cause = std::error::Error::source(error);
    while let Some(e) = cause {
        text.push_str(": ");
        text.push_str(&e.to_string());
        cause = e.source();
    }
    text
}

/// Whether a driver error says the connection is gone or could not be made, rather than
/// that the database refused a statement.
pub(crate) fn is_connection_lost(error: &tokio_postgres::Error) -> bool {
    if error.is_closed() {
        return true;
    }
    if let Some(code) = error.code() {
        let code = code.code();
        return code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03" | "53300");
    }
    // A socket that failed (refused, reset, timed out, ended early).
    let mut cause = std::error::Error::source(error);
    while let Some(e) = cause {
        if e.is::<std::io::Error>() {
            return true;
        }
        cause = e.source();
    }
    false
}

/// Whether a database error is the violation of a unique constraint (SQLSTATE 23505).
pub(crate) fn is_unique_violation(error: &tokio_postgres::Error) -> bool {
    error.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION)
}

/// Whether a database error is a foreign key pointing nowhere (SQLSTATE 23503).
pub(crate) fn is_foreign_key_violation(error: &tokio_postgres::Error) -> bool {
    error.code() == Some(&tokio_postgres::error::SqlState::FOREIGN_KEY_VIOLATION)
}
