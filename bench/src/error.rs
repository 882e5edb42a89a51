//! The one error type of the harness: what was being done, and why it failed.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{context} {}: {source}", .path.display())]
    Io {
        context: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{context}: {source}")]
    Client {
        context: String,
        #[source]
        source: odyssey_client::ClientError,
    },
    #[error("{context}: {source}")]
    Rpc {
        context: String,
        #[source]
        source: tonic::Status,
    },
    /// `odysseyd` did not start, stop or answer as it must; the log's tail says why.
    #[error("odysseyd: {message}{}", log_tail(.log))]
    Daemon { message: String, log: String },
    /// A run that did not do what the benchmark needs (a failed turn, a missed event).
    #[error("{0}")]
    Check(String),
    #[error("the loopback model server: {0}")]
    Model(#[source] std::io::Error),
    #[error("cannot build odysseyd: {0}")]
    Build(String),
}

fn log_tail(log: &str) -> String {
    if log.trim().is_empty() {
        return String::new();
    }
    format!("\n--- odysseyd log (last lines) ---\n{log}")
}

impl BenchError {
    pub fn io(context: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            context,
            path: path.into(),
            source,
        }
    }

    pub fn check(message: impl Into<String>) -> Self {
        Self::Check(message.into())
    }
}

/// Adds what was being done to a client error.
pub trait ClientContext<T> {
    fn context(self, context: impl Into<String>) -> Result<T, BenchError>;
}

impl<T> ClientContext<T> for Result<T, odyssey_client::ClientError> {
    fn context(self, context: impl Into<String>) -> Result<T, BenchError> {
        self.map_err(|source| BenchError::Client {
            context: context.into(),
            source,
        })
    }
}

impl<T> ClientContext<T> for Result<T, tonic::Status> {
    fn context(self, context: impl Into<String>) -> Result<T, BenchError> {
        self.map_err(|source| BenchError::Rpc {
            context: context.into(),
            source,
        })
    }
}

pub type Result<T, E = BenchError> = std::result::Result<T, E>;
