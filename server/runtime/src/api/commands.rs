//! Operator commands: one process run directly in a session's sandbox cell. Not a tool
//! call and not a turn: it writes exec-command events into the session's log and reports
//! the same to its caller as a stream ([`CommandEvents`]), ending with the exit code and
//! the (capped) output.

use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};
use uuid::Uuid;

use super::OdysseyRuntime;
use crate::error::{Result, RuntimeError};
use crate::events::{EventPayload, OutputStream};
use crate::permissions::split_command;
use crate::sandbox::{ExecOutcome, ExecRequest, NetworkGrant, ProcessView};
use crate::session::EventSink;

/// Longest argument, and longest argument list, a command may have: the kernel refuses
/// to start a program with an argument of 128 KiB or more (`MAX_ARG_STRLEN`), and the
/// list shares `ARG_MAX` with the environment.
const MAX_ARG_BYTES: usize = 128 * 1024 - 1;
const MAX_ARGV_BYTES: usize = 1024 * 1024;

/// The longest an operator command may run.
const MAX_COMMAND_TIMEOUT: Duration = Duration::from_secs(3600);

/// What to run.
#[derive(Clone, Debug)]
pub enum CommandLine {
    /// The program and its arguments, as they are.
    Argv(Vec<String>),
    /// One command, split into words with shell quoting rules; no shell runs it, so
    /// operators (`;`, `|`, `>`, `$( )`) are refused: use `Argv(["bash", "-c", …])`.
    Line(String),
}

#[derive(Clone, Debug)]
pub struct SessionCommand {
    pub session_id: Uuid,
    pub command: CommandLine,
    /// Relative to the session workspace.
    pub cwd: Option<String>,
    pub timeout: Option<Duration>,
}

/// How an operator command ended.
#[derive(Clone, Debug)]
pub struct CommandResult {
    pub exec_id: String,
    pub argv: Vec<String>,
    pub cwd: String,
    pub outcome: ExecOutcome,
}

/// What a running operator command reports, in order: [`CommandEvent::Began`] once,
/// [`CommandEvent::Output`] as output is produced, then [`CommandEvent::Ended`]; or an
/// error, last, when it could not run.
#[derive(Clone, Debug)]
pub enum CommandEvent {
    Began {
        exec_id: String,
        argv: Vec<String>,
        /// The working directory as the command sees it.
        cwd: String,
    },
    Output {
        exec_id: String,
        stream: OutputStream,
        text: String,
    },
    Ended(CommandResult),
}

/// The events of one running operator command. Dropping it stops the command (its whole
/// process group), so a caller that goes away leaves nothing running.
///
/// The channel is unbounded yet bounded in fact: the sandbox caps what one command may
/// output (1 MiB per stream by default), so a slow reader holds at most that much, and
/// output is never dropped.
pub struct CommandEvents {
    events: mpsc::UnboundedReceiver<Result<CommandEvent>>,
    _stop_on_drop: DropGuard,
}

impl CommandEvents {
    /// Waits for the command's end, dropping its output events (the result holds the
    /// captured output).
    pub async fn finish(mut self) -> Result<CommandResult> {
        while let Some(event) = self.events.recv().await {
            if let CommandEvent::Ended(result) = event? {
                return Ok(result);
            }
        }
        // The task that runs the command always sends a last item, unless the process is
        // stopping under it.
        Err(RuntimeError::ShuttingDown)
    }
}

impl Stream for CommandEvents {
    type Item = Result<CommandEvent>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.events.poll_recv(cx)
    }
}

impl OdysseyRuntime {
    /// Starts `command` in the session's cell and reports it as it runs (see
    /// [`CommandEvents`]); what is wrong with the request comes as the stream's only item.
    pub fn session_command(&self, command: SessionCommand) -> CommandEvents {
        let (tx, events) = mpsc::unbounded_channel();
        let cancel = CancellationToken::new();
        let runtime = self.clone();
        let stop = cancel.clone();
        tokio::spawn(async move {
            let result = runtime.run_command(command, &tx, stop).await;
            let _ = tx.send(result.map(CommandEvent::Ended));
        });
        CommandEvents {
            events,
            _stop_on_drop: cancel.drop_guard(),
        }
    }

    async fn run_command(
        &self,
        command: SessionCommand,
        report: &mpsc::UnboundedSender<Result<CommandEvent>>,
        cancel: CancellationToken,
    ) -> Result<CommandResult> {
        self.ensure_running()?;
        let argv = argv_of(&command.command)?;
        let cwd = relative_cwd(command.cwd.as_deref())?;
        let session = self.inner.sessions.get(command.session_id).await?;
        let record = session.record().clone();
        let bundle = self.pinned_bundle(&record.bundle).await?;
        let access = self.inner.config.access.grant(&bundle.manifest.sandbox)?;
        let cell = self.prepare_cell(&session, &bundle).await?;
        let exec_id = format!("cmd-{}", Uuid::now_v7());
        super::overrides::workspace_dir(&cell.data, cwd)?;
        let work_dir = ProcessView::new(record.sandbox_mode, &cell).in_workspace(Path::new(cwd));
        let events = EventSink::new(session, None);
        let shown_cwd = work_dir.display().to_string();
        events.emit(EventPayload::ExecCommandBegin {
            exec_id: exec_id.clone(),
            argv: argv.clone(),
            cwd: shown_cwd.clone(),
            call_id: None,
        })?;
        let _ = report.send(Ok(CommandEvent::Began {
            exec_id: exec_id.clone(),
            argv: argv.clone(),
            cwd: shown_cwd.clone(),
        }));
        let request = ExecRequest {
            exec_id: exec_id.clone(),
            argv: argv.clone(),
            cwd: work_dir,
            mode: record.sandbox_mode,
            env: access.env,
            network: access
                .network
                .map(|domains| NetworkGrant::new(domains, events.connection_reporter())),
            mounts_read: access.mounts_read,
            mounts_write: access.mounts_write,
            timeout: command
                .timeout
                .unwrap_or(self.inner.config.sandbox.default_timeout)
                .min(MAX_COMMAND_TIMEOUT),
            memory_mb: access.memory_mb,
            cpu_seconds: None,
        };
        let output_events = events.clone();
        let exec = exec_id.clone();
        let report = report.clone();
        let result = self
            .inner
            .sandbox
            .run(
                &cell,
                request,
                move |stream, text| {
                    let _ = report.send(Ok(CommandEvent::Output {
                        exec_id: exec.clone(),
                        stream,
                        text: text.clone(),
                    }));
                    let _ = output_events.emit(EventPayload::ExecCommandOutputDelta {
                        exec_id: exec.clone(),
                        stream,
                        text,
                    });
                },
                cancel,
            )
            .await;
        let outcome = match result {
            Ok(outcome) => outcome,
            Err(e) => {
                let _ = events.emit(EventPayload::ExecCommandEnd {
                    exec_id: exec_id.clone(),
                    exit_code: -1,
                    duration_ms: 0,
                    timed_out: false,
                    output_truncated: false,
                });
                return Err(e.into());
            }
        };
        events.emit(EventPayload::ExecCommandEnd {
            exec_id: exec_id.clone(),
            exit_code: outcome.exit_code,
            duration_ms: outcome.duration.as_millis() as u64,
            timed_out: outcome.timed_out,
            output_truncated: outcome.truncated,
        })?;
        Ok(CommandResult {
            exec_id,
            argv,
            cwd: shown_cwd,
            outcome,
        })
    }
}

fn argv_of(command: &CommandLine) -> Result<Vec<String>> {
    let argv = match command {
        CommandLine::Argv(argv) => argv.clone(),
        CommandLine::Line(line) if line.len() > MAX_ARG_BYTES => {
            return Err(RuntimeError::invalid(
                "command_line",
                format!("must be at most {MAX_ARG_BYTES} bytes"),
            ));
        }
        CommandLine::Line(line) => {
            let split = split_command(line);
            let single = match split.commands.as_slice() {
                [only]
                    if split.opaque.is_empty()
                        && only.redirects.is_empty()
                        && only.assignments.is_empty() =>
                {
                    only.wrapped_by
                        .first()
                        .unwrap_or(&only.words)
                        .iter()
                        .map(|w| w.as_literal().map(str::to_owned))
                        .collect::<Option<Vec<_>>>()
                }
                _ => None,
            };
            single.ok_or_else(|| {
                RuntimeError::invalid(
                    "command_line",
                    "must be one plain command (no `;`, `|`, `&&`, redirections, substitutions or variables); to run a shell line, send argv [\"bash\", \"-c\", LINE]",
                )
            })?
        }
    };
    if argv.first().is_none_or(|program| program.is_empty()) {
        return Err(RuntimeError::invalid("argv", "the command is empty"));
    }
    let total: usize = argv.iter().map(|a| a.len() + 1).sum();
    if argv.iter().any(|a| a.len() > MAX_ARG_BYTES) || total > MAX_ARGV_BYTES {
        return Err(RuntimeError::invalid(
            "argv",
            format!(
                "each argument must be at most {MAX_ARG_BYTES} bytes, all of them at most \
                 {MAX_ARGV_BYTES}"
            ),
        ));
    }
    Ok(argv)
}

fn relative_cwd(cwd: Option<&str>) -> Result<&str> {
    let cwd = cwd.filter(|c| !c.is_empty()).unwrap_or(".");
    super::overrides::check_cwd(cwd)?;
    Ok(cwd)
}
