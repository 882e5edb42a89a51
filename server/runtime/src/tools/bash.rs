//! `Bash{command, cwd?, timeout_ms?}`: one shell command line in the session's sandbox.
//!
//! The command runs as `/bin/bash -c <command>` through [`Sandbox::run`], so the session's
//! sandbox mode decides how far it reaches; the permission rules decide whether it runs at
//! all (its subject is the command line). Output is streamed as exec-command events while
//! it arrives and returned to the model, capped, with the exit code.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rustix::fs::OFlags;
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use super::{Tool, ToolContext, ToolOutput};
use crate::events::{EventPayload, OutputStream};
use crate::provider::ToolSpec;
use crate::sandbox::beneath::{self, BeneathDir};
use crate::sandbox::{ExecOutcome, ExecRequest, NetworkGrant, Sandbox, paths};
use crate::session::EventSink;

/// The tool's name, as the model and the permission rules spell it.
pub const BASH_TOOL: &str = "Bash";
/// The wall clock of a call that sets none.
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// The longest wall clock a call may ask for.
pub const MAX_TIMEOUT_MS: u64 = 600_000;
const SHELL: &str = "/bin/bash";

/// The arguments, exactly: an unknown field is a mistake worth telling the model about.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BashArgs {
    command: String,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    timeout_ms: Option<u64>,
}

/// The Bash tool; one instance serves every turn.
#[derive(Clone, Debug)]
pub struct Bash {
    sandbox: Arc<Sandbox>,
}

impl Bash {
    pub fn new(sandbox: Arc<Sandbox>) -> Self {
        Self { sandbox }
    }
}

impl Tool for Bash {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: BASH_TOOL.to_owned(),
            description: format!(
                "Runs a bash command line in the session's sandbox and returns its exit code \
                 and output. The working directory defaults to the turn's directory inside \
                 the workspace; HOME is the workspace, TMPDIR a private temporary folder. \
                 Network access depends on the bundle's sandbox settings; when there is \
                 some, it goes through the HTTP proxy in HTTP_PROXY and HTTPS_PROXY (curl, \
                 pip, npm and git use it), to the hosts the bundle lists. Commands are \
                 killed after timeout_ms (default {DEFAULT_TIMEOUT_MS}, at most \
                 {MAX_TIMEOUT_MS})."
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "command": {
                        "type": "string",
                        "description": "The command line, run with `bash -c`."
                    },
                    "cwd": {
                        "type": "string",
                        "description": "Working directory, relative to the current one (or absolute); must stay inside the workspace."
                    },
                    "timeout_ms": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_TIMEOUT_MS,
                        "description": "Wall-clock limit in milliseconds."
                    }
                },
                "required": ["command"],
                "additionalProperties": false
            }),
        }
    }

    fn call(&self, ctx: ToolContext, arguments: Value) -> BoxFuture<'static, ToolOutput> {
        let sandbox = self.sandbox.clone();
        Box::pin(async move { run(&sandbox, ctx, arguments).await })
    }

    fn permission_subject(&self, _ctx: &ToolContext, arguments: &Value) -> Option<String> {
        arguments
            .get("command")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }
}

async fn run(sandbox: &Sandbox, ctx: ToolContext, arguments: Value) -> ToolOutput {
    let args = match parse(arguments) {
        Ok(args) => args,
        Err(message) => return ToolOutput::error(message),
    };
    let cwd = match resolve_cwd(&ctx, args.cwd.as_deref()) {
        Ok(cwd) => cwd,
        Err(message) => return ToolOutput::error(message),
    };
    let timeout_ms = args.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
    let exec_id = format!("bash-{}", Uuid::now_v7());
    let argv = vec![SHELL.to_owned(), "-c".to_owned(), args.command];
    let request = ExecRequest {
        exec_id: exec_id.clone(),
        argv: argv.clone(),
        cwd: cwd.clone(),
        mode: ctx.mode,
        env: ctx.env.clone(),
        network: ctx
            .network
            .clone()
            .map(|domains| NetworkGrant::new(domains, ctx.events.connection_reporter())),
        mounts_read: ctx.mounts_read.clone(),
        mounts_write: ctx.mounts_write.clone(),
        timeout: Duration::from_millis(timeout_ms),
        memory_mb: ctx.memory_mb,
        cpu_seconds: None,
    };

    emit(
        &ctx.events,
        EventPayload::ExecCommandBegin {
            exec_id: exec_id.clone(),
            argv,
            cwd: cwd.display().to_string(),
            call_id: Some(ctx.call_id.clone()),
        },
    );
    let events = ctx.events.clone();
    let delta_id = exec_id.clone();
    let on_output = move |stream: OutputStream, text: String| {
        emit(
            &events,
            EventPayload::ExecCommandOutputDelta {
                exec_id: delta_id.clone(),
                stream,
                text,
            },
        );
    };
    let result = sandbox
        .run(&ctx.cell, request, on_output, ctx.cancel.clone())
        .await;
    let (exit_code, duration, timed_out, truncated) = match &result {
        Ok(o) => (o.exit_code, o.duration, o.timed_out, o.truncated),
        // Never started: -1 closes the begin event without pretending to an exit status.
        Err(_) => (-1, Duration::ZERO, false, false),
    };
    emit(
        &ctx.events,
        EventPayload::ExecCommandEnd {
            exec_id,
            exit_code,
            duration_ms: u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
            timed_out,
            output_truncated: truncated,
        },
    );
    match result {
        Ok(outcome) => answer(&outcome, timeout_ms),
        Err(e) => ToolOutput::error(format!("the command could not be run: {e}")),
    }
}

fn parse(arguments: Value) -> Result<BashArgs, String> {
    let args: BashArgs = serde_json::from_value(arguments)
        .map_err(|e| format!("invalid arguments for {BASH_TOOL}: {e}"))?;
    if args.command.trim().is_empty() {
        return Err(format!(
            "invalid arguments for {BASH_TOOL}: `command` is empty"
        ));
    }
    if let Some(ms) = args.timeout_ms
        && !(1..=MAX_TIMEOUT_MS).contains(&ms)
    {
        return Err(format!(
            "invalid arguments for {BASH_TOOL}: `timeout_ms` must be between 1 and \
             {MAX_TIMEOUT_MS}, got {ms}"
        ));
    }
    Ok(args)
}

/// The working directory as the command sees it: `cwd` relative to the turn's directory
/// (or absolute), `.` and `..` applied, inside the workspace, and a folder there (links
/// followed only while they stay inside).
fn resolve_cwd(ctx: &ToolContext, cwd: Option<&str>) -> Result<PathBuf, String> {
    let given = cwd.unwrap_or(".");
    let target = paths::normalize(&ctx.cwd.join(given));
    let invalid = |why: &str| format!("invalid arguments for {BASH_TOOL}: cwd `{given}` {why}");
    let Ok(rel) = target.strip_prefix(&ctx.view.workspace) else {
        return Err(invalid(&format!(
            "is outside the workspace {}",
            ctx.view.workspace.display()
        )));
    };
    let workspace = BeneathDir::open(&ctx.cell.data)
        .map_err(|e| format!("the session's workspace is not available: {e}"))?;
    match workspace.open_at(rel, OFlags::PATH | OFlags::DIRECTORY) {
        Ok(_) => Ok(target),
        Err(e) if beneath::is_escape(&e) => Err(invalid(
            "goes through a symbolic link that leads outside the workspace",
        )),
        Err(_) => Err(invalid("is not a folder of the workspace")),
    }
}

/// What the model reads: the exit code and how the run ended, then each non-empty stream.
fn answer(outcome: &ExecOutcome, timeout_ms: u64) -> ToolOutput {
    let mut notes = Vec::new();
    if outcome.timed_out {
        notes.push(format!("killed after the {timeout_ms} ms timeout"));
    }
    if outcome.cancelled {
        notes.push("killed: the turn was cancelled".to_owned());
    }
    if outcome.truncated {
        notes.push("output truncated at the sandbox's cap".to_owned());
    }
    let mut content = format!("exit code: {}", outcome.exit_code);
    if !notes.is_empty() {
        content.push_str(&format!(" ({})", notes.join("; ")));
    }
    for (name, text) in [("stdout", &outcome.stdout), ("stderr", &outcome.stderr)] {
        if !text.is_empty() {
            content.push_str(&format!("\n--- {name} ---\n{text}"));
        }
    }
    if outcome.stdout.is_empty() && outcome.stderr.is_empty() {
        content.push_str("\n(no output)");
    }
    if outcome.exit_code == 0 && !outcome.timed_out && !outcome.cancelled {
        ToolOutput::ok(content)
    } else {
        ToolOutput::error(content)
    }
}

/// Records a command event; a failure to record is logged and does not stop the command.
fn emit(events: &EventSink, payload: EventPayload) {
    if let Err(e) = events.emit(payload) {
        tracing::warn!(session = %events.session().id(), error = %e, "recording a command event");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked_before_anything_runs() {
        let ok = parse(json!({"command": "ls", "cwd": "sub", "timeout_ms": 5})).expect("ok");
        assert_eq!(
            (ok.command.as_str(), ok.cwd.as_deref(), ok.timeout_ms),
            ("ls", Some("sub"), Some(5))
        );
        for (bad, expected) in [
            (json!({}), "missing field `command`"),
            (
                json!({"command": "ls", "shell": "zsh"}),
                "unknown field `shell`",
            ),
            (json!({"command": 3}), "invalid type"),
            (json!({"command": "  "}), "`command` is empty"),
            (json!({"command": "ls", "timeout_ms": 0}), "between 1 and"),
            (
                json!({"command": "ls", "timeout_ms": MAX_TIMEOUT_MS + 1}),
                "between 1 and",
            ),
            (json!({"command": "ls", "timeout_ms": -1}), "invalid value"),
        ] {
            let err = parse(bad.clone()).expect_err("refused");
            assert!(err.contains(expected), "{bad}: {err}");
        }
    }

    #[test]
    fn answers_carry_exit_code_notes_and_streams() {
        let outcome = ExecOutcome {
            exit_code: 137,
            stdout: "partial".into(),
            timed_out: true,
            truncated: true,
            ..ExecOutcome::default()
        };
        let out = answer(&outcome, 50);
        assert!(out.is_error);
        assert!(
            out.content
                .starts_with("exit code: 137 (killed after the 50 ms timeout; output truncated")
        );
        assert!(out.content.contains("--- stdout ---\npartial"));
        assert!(!out.content.contains("stderr"));
        let quiet = answer(&ExecOutcome::default(), 50);
        assert!(!quiet.is_error);
        assert_eq!(quiet.content, "exit code: 0\n(no output)");
    }
}
