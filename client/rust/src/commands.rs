//! Operator commands: one process run directly in a session's sandbox cell, under the
//! session's sandbox policy but outside any turn (no model, no Bash tool, no approval).

use std::time::Duration;

use odyssey_api::v1 as pb;
use pb::stream_session_command_response::Item;
use tonic::Streaming;

use crate::client::OdysseyClient;
use crate::error::ClientError;

/// What an operator command runs. The API takes exactly one of the two forms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OperatorCommand {
    /// The program and its arguments, passed as they are.
    Argv(Vec<String>),
    /// One plain command the server splits with shell quoting rules. No shell runs it:
    /// the server refuses lines with operators (`;`, `|`, `&&`, redirections, `$(…)`,
    /// variables) with INVALID_ARGUMENT; send `Argv(["bash", "-c", line])` for those.
    Line(String),
}

impl OperatorCommand {
    /// The request's `argv` and `command_line` fields, after refusing a command that names
    /// no program (the server would refuse it too, less clearly).
    fn into_fields(self) -> Result<(Vec<String>, String), ClientError> {
        match self {
            Self::Argv(argv) => match argv.first() {
                Some(program) if !program.is_empty() => Ok((argv, String::new())),
                _ => Err(ClientError::InvalidRequest(
                    "the command needs a program to run (argv is empty)".into(),
                )),
            },
            Self::Line(line) if line.trim().is_empty() => Err(ClientError::InvalidRequest(
                "the command line is empty".into(),
            )),
            Self::Line(line) => Ok((Vec::new(), line)),
        }
    }
}

impl From<Vec<String>> for OperatorCommand {
    fn from(argv: Vec<String>) -> Self {
        Self::Argv(argv)
    }
}

/// The API's `timeout_ms`: 0 (the server's default) for `None` or a zero duration; a
/// sub-millisecond timeout rounds up rather than to 0, which would mean "the default".
fn timeout_ms(timeout: Option<Duration>) -> u64 {
    match timeout {
        None => 0,
        Some(d) if d.is_zero() => 0,
        Some(d) => u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1),
    }
}

impl OdysseyClient {
    /// Runs one process in the session's sandbox cell and waits for it; returns its exit
    /// code and its output as captured by the server (capped: see `output_truncated`).
    /// `cwd` is relative to the session workspace; `timeout` kills the process group when
    /// it runs longer.
    pub async fn run_session_command(
        &self,
        session_id: &str,
        command: OperatorCommand,
        cwd: Option<&str>,
        timeout: Option<Duration>,
    ) -> Result<pb::RunSessionCommandResponse, ClientError> {
        let (argv, command_line) = command.into_fields()?;
        let request = pb::RunSessionCommandRequest {
            session_id: session_id.to_owned(),
            argv,
            command_line,
            cwd: cwd.unwrap_or_default().to_owned(),
            timeout_ms: timeout_ms(timeout),
        };
        Ok(self
            .executions()
            .run_session_command(request)
            .await?
            .into_inner())
    }

    /// Like [`Self::run_session_command`], but the output arrives as it is produced: a
    /// `begin`, `output` chunks in order, and a final `end` with the exit code.
    pub async fn stream_session_command(
        &self,
        session_id: &str,
        command: OperatorCommand,
        cwd: Option<&str>,
        timeout: Option<Duration>,
    ) -> Result<CommandStream, ClientError> {
        let (argv, command_line) = command.into_fields()?;
        let request = pb::StreamSessionCommandRequest {
            session_id: session_id.to_owned(),
            argv,
            command_line,
            cwd: cwd.unwrap_or_default().to_owned(),
            timeout_ms: timeout_ms(timeout),
        };
        let inner = self
            .executions()
            .stream_session_command(request)
            .await?
            .into_inner();
        Ok(CommandStream { inner, end: None })
    }
}

/// The live output of one operator command, ending after its `end` item.
///
/// Unlike an [`crate::EventStream`] it does not reconnect: the process belongs to this
/// call, so a dropped connection ends the stream with the transport's error. The same
/// output is also in the session's event log (`exec_command_*` events).
pub struct CommandStream {
    inner: Streaming<pb::StreamSessionCommandResponse>,
    end: Option<pb::ExecCommandEnd>,
}

impl std::fmt::Debug for CommandStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandStream")
            .field("end", &self.end)
            .finish_non_exhaustive()
    }
}

impl CommandStream {
    /// The next item; `Ok(None)` once the `end` item was returned. A stream that closes
    /// before its `end` is a protocol error: the exit code would be unknown.
    pub async fn next(&mut self) -> Result<Option<pb::StreamSessionCommandResponse>, ClientError> {
        if self.end.is_some() {
            return Ok(None);
        }
        loop {
            let Some(message) = self.inner.message().await? else {
                return Err(ClientError::Protocol(
                    "the command's output stream ended before the command did".into(),
                ));
            };
            match &message.item {
                // An item of a newer API that this client does not know: nothing to show.
                None => continue,
                Some(Item::End(end)) => self.end = Some(end.clone()),
                Some(Item::Begin(_) | Item::Output(_)) => {}
            }
            return Ok(Some(message));
        }
    }

    /// How the command ended, once its `end` item was read.
    pub fn end(&self) -> Option<&pb::ExecCommandEnd> {
        self.end.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_fill_exactly_one_field() {
        let argv = OperatorCommand::from(vec!["ls".to_owned(), "-la".to_owned()]);
        assert_eq!(
            argv.into_fields().unwrap(),
            (vec!["ls".to_owned(), "-la".to_owned()], String::new())
        );
        let line = OperatorCommand::Line("git status --short".into());
        assert_eq!(
            line.into_fields().unwrap(),
            (Vec::new(), "git status --short".to_owned())
        );
    }

    #[test]
    fn commands_without_a_program_are_refused_locally() {
        for command in [
            OperatorCommand::Argv(Vec::new()),
            OperatorCommand::Argv(vec![String::new()]),
            OperatorCommand::Line("  ".into()),
        ] {
            let error = command.into_fields().unwrap_err();
            assert!(matches!(error, ClientError::InvalidRequest(_)), "{error}");
        }
    }

    #[test]
    fn timeouts_become_milliseconds() {
        assert_eq!(timeout_ms(None), 0);
        assert_eq!(timeout_ms(Some(Duration::ZERO)), 0);
        assert_eq!(timeout_ms(Some(Duration::from_micros(10))), 1);
        assert_eq!(timeout_ms(Some(Duration::from_secs(3))), 3000);
        assert_eq!(timeout_ms(Some(Duration::MAX)), u64::MAX);
    }
}
