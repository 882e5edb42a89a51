//! Operator commands: one process run directly in a session's sandbox cell. Not a tool
//! call and not a turn: it streams exec-command events into the session's log and
//! returns the exit code and (capped) output.

use std::path::Path;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
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

impl OdysseyRuntime {
    /// Runs `command` in the session's cell. `on_output` sees output as it is produced;
    /// `cancel` stops the process group.
    pub async fn run_session_command(
        &self,
        command: SessionCommand,
        mut on_output: impl FnMut(OutputStream, &str) + Send,
        on_begin: impl FnOnce(&str, &[String], &str) + Send,
        cancel: CancellationToken,
    ) -> Result<CommandResult> {
        self.ensure_running()?;
        let argv = argv_of(&command.command)?;
        let cwd = relative_cwd(command.cwd.as_deref())?;
        let session = self.inner.sessions.get(command.session_id).await?;
        let record = session.record().clone();
        let bundle = self.resolve_bundle(record.bundle.reference()).await?;
        let access = self.inner.config.access.grant(&bundle.manifest.sandbox)?;
        let cell = self.prepare_cell(record.id, &bundle).await?;
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
        on_begin(&exec_id, &argv, &shown_cwd);
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
        let result = self
            .inner
            .sandbox
            .run(
                &cell,
                request,
                move |stream, text| {
                    on_output(stream, &text);
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
