//! What a command can fail with, and how that becomes the one line on stderr and the exit
//! code: `odyssey: <message> (<GRPC_CODE>)`, exit 1; usage mistakes found after parsing
//! exit 2 like clap's own.

use std::io;
use std::path::PathBuf;

use odyssey_client::{ClientError, code_name};

#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    #[error(transparent)]
    Client(#[from] ClientError),
    /// Writing our own output failed (a closed pipe, a full disk).
    #[error("cannot write output: {0}")]
    Output(#[from] io::Error),
    #[error("{context} {}: {source}", .path.display())]
    File {
        context: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// `odyssey events --after N` with N beyond the session's last event.
    #[error("--after {after} is past the end of session {session}: its last sequence is {last}")]
    PastTheEnd {
        session: String,
        after: u64,
        last: u64,
    },
    /// A combination of arguments clap cannot rule out by itself.
    #[error("{0}")]
    Usage(String),
    /// The turn ran but did not complete; the reason was already shown with the events.
    #[error("the turn {outcome}{}", if .error.is_empty() { String::new() } else { format!(": {}", .error) })]
    TurnNotCompleted {
        outcome: &'static str,
        error: String,
    },
    /// `odyssey exec`'s command did not exit 0. Its output already said why, so only a
    /// timeout gets a line; the code becomes ours.
    #[error("{}", if *.timed_out {
        format!("the command timed out after {duration_ms} ms and was killed")
    } else {
        format!("the command exited with code {code}")
    })]
    CommandExited {
        code: i32,
        timed_out: bool,
        duration_ms: u64,
    },
    /// Ctrl-C during a command that cleans up after itself (the demo's server and home).
    #[error("interrupted")]
    Interrupted,
    #[error(transparent)]
    Serve(#[from] odyssey_server::serve::ServeError),
    #[error(transparent)]
    Runtime(#[from] odyssey_runtime::RuntimeError),
    /// A message this client could not put in its JSON form (`--json`).
    #[error(transparent)]
    Json(#[from] odyssey_api::json::JsonError),
    #[error("invalid configuration: {0}")]
    Config(#[from] odyssey_server::config::ConfigError),
}

impl CliError {
    pub fn file(context: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::File {
            context,
            path: path.into(),
            source,
        }
    }

    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::Usage(_) => 2,
            // A code a process can exit with passes through; a timeout without one is
            // 124 as with timeout(1); anything else (a signal, a negative code) is 1.
            Self::CommandExited {
                code, timed_out, ..
            } => match *code {
                1..=255 => *code,
                _ if *timed_out => 124,
                _ => 1,
            },
            Self::Interrupted => 130,
            _ => 1,
        }
    }

    /// Whether the exit code says it all: a command that failed in `exec` printed its own
    /// output, and an extra line would mix ours into it.
    pub fn is_silent(&self) -> bool {
        matches!(
            self,
            Self::CommandExited {
                timed_out: false,
                ..
            }
        )
    }

    /// Whether the error is a closed stdout (`odyssey events … | head`): not worth a message.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, Self::Output(e) if e.kind() == io::ErrorKind::BrokenPipe)
    }

    /// `odyssey: <message> (<GRPC_CODE>)`, the code only when there is one.
    pub fn line(&self) -> String {
        match self {
            Self::Client(e) => match e.code() {
                Some(code) => format!("odyssey: {e} ({})", code_name(code)),
                None => format!("odyssey: {e}"),
            },
            other => format!("odyssey: {other}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_errors_name_their_code() {
        let error = CliError::from(ClientError::from(tonic::Status::not_found("no bundle `x`")));
        assert_eq!(error.line(), "odyssey: no bundle `x` (NOT_FOUND)");
        assert_eq!(error.exit_code(), 1);
    }

    #[test]
    fn usage_errors_exit_2() {
        let error = CliError::Usage("--output needs a folder".into());
        assert_eq!(error.line(), "odyssey: --output needs a folder");
        assert_eq!(error.exit_code(), 2);
    }
}
