//! [`Sandbox::start_service`]: a long-lived process of a session (an MCP stdio server),
//! started exactly as a command is (bubblewrap, the helper's Landlock and seccomp, the
//! session's network policy and cgroup, the unprivileged uid, rlimits), but with its
//! standard input and output left to the caller and no wall clock.
//!
//! It is registered with the cell's running processes, so deleting the session kills it,
//! and recorded like a command's group, so a crashed server's successor reaps it. Its
//! stderr goes to the server log, bounded.

use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use tokio_util::sync::CancellationToken;

use super::Sandbox;
use super::error::SandboxError;
use super::leftovers::GroupRecord;
use super::process::{self, GroupKiller};
use super::runner::session_name;
use super::types::{CellPaths, ExecRequest};
use crate::policy::SandboxMode;

/// A running service process. Dropping it kills the process group.
#[derive(Debug)]
pub struct ServiceProcess {
    /// The process's standard input and output; taken once by the caller.
    pub stdin: Option<ChildStdin>,
    pub stdout: Option<ChildStdout>,
    stop: CancellationToken,
    ended: CancellationToken,
    pid: u32,
}

impl ServiceProcess {
    /// Fires once the process has exited (or was killed) and was reaped.
    pub fn ended(&self) -> CancellationToken {
        self.ended.clone()
    }

    /// Kills the process group (the reaping happens in the background).
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// The process id of the group's leader (bubblewrap or the helper when sandboxed).
    pub fn pid(&self) -> u32 {
        self.pid
    }
}

impl Drop for ServiceProcess {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// What to log a service's stderr as, and how much of it.
#[derive(Clone, Debug)]
pub struct ServiceLog {
    /// Names the service in every line (`mcp server fs of session <id>`).
    pub label: String,
    /// The most bytes of stderr written to the log; a note says when more was dropped.
    pub max_bytes: usize,
    /// Values never written to the log (the service's credentials), masked where they
    /// appear.
    pub masked: Vec<String>,
}

impl Sandbox {
    /// Starts `request` in `cell` as a long-lived process (its `timeout` is not applied).
    pub async fn start_service(
        &self,
        cell: &CellPaths,
        request: ExecRequest,
        log: ServiceLog,
    ) -> Result<ServiceProcess, SandboxError> {
        let checked = self.check(cell, &request)?;
        let mut launch = match request.mode {
            SandboxMode::DangerFullAccess => self.direct_launch(&request, &checked),
            SandboxMode::ReadOnly | SandboxMode::WorkspaceWrite => {
                self.bwrap_launch(&request, &checked)?
            }
        };
        let max_in_cell =
            (!self.enforcement().pids_cgroup).then_some(self.settings.limits.commands_per_session);
        let stop = CancellationToken::new();
        let guard =
            self.running
                .register(&request.exec_id, &checked.cell.root, &stop, max_in_cell)?;
        self.running.mark_service(&request.exec_id);
        launch.cgroup_files = self.cgroups.enter(
            &checked.records_root,
            &session_name(&checked.cell)?,
            self.settings.limits.group(&request),
        )?;
        let program = launch.program.display().to_string();
        let mut child = process::spawn_with(launch, Stdio::piped())
            .map_err(|source| SandboxError::Spawn { program, source })?;
        let Some(pid) = child.id() else {
            return Err(SandboxError::io(
                "watching the started service",
                std::io::Error::other("the process has no pid"),
            ));
        };
        let pgid = i32::try_from(pid).map_err(|_| {
            SandboxError::io(
                "watching the started service",
                std::io::Error::other("the pid does not fit a process group id"),
            )
        })?;
        let killer = GroupKiller { pgid, armed: true };
        let exit = process::pidfd(pgid)
            .map_err(|e| SandboxError::io("watching the started service", e))?;
        let record = GroupRecord::create(&checked.records_root, &request.exec_id, pgid)?;
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(log_stderr(stderr, log));
        }
        let ended = CancellationToken::new();
        let service = ServiceProcess {
            stdin: child.stdin.take(),
            stdout: child.stdout.take(),
            stop: stop.clone(),
            ended: ended.clone(),
            pid,
        };
        let cancel = guard.cancel_token();
        let run_dir = checked.run_dir.clone();
        let exec_id = request.exec_id.clone();
        tokio::spawn(async move {
            let mut killer = killer;
            tokio::select! {
                _ = exit.readable() => {}
                () = cancel.cancelled() => {}
            }
            // The leader is not reaped yet, so its group id still names its group.
            killer.kill();
            match child.wait().await {
                Ok(status) => tracing::debug!(exec_id, %status, "service process ended"),
                Err(e) => tracing::warn!(exec_id, error = %e, "reaping a service process"),
            }
            killer.armed = false;
            drop(record);
            drop(guard);
            let _ = std::fs::remove_dir(&run_dir);
            ended.cancel();
        });
        Ok(service)
    }
}

/// The longest piece of stderr read at once.
const MAX_LINE_BYTES: u64 = 8 * 1024;

/// Writes a service's stderr to the log line by line, up to `log.max_bytes`, then reads
/// the rest without logging it (so the process never blocks on a full pipe).
async fn log_stderr(stderr: ChildStderr, log: ServiceLog) {
    let label = log.label.clone();
    read_lines(stderr, &log, |line| {
        tracing::info!(service = %label, "stderr: {line}");
    })
    .await;
}

/// Hands `emit` each line of `stream` (masked, without its end) while they fit in
/// `log.max_bytes`, then one note saying the rest is not logged; reads to the end.
async fn read_lines(
    stream: impl tokio::io::AsyncRead + Unpin,
    log: &ServiceLog,
    mut emit: impl FnMut(&str),
) {
    let mut lines = BufReader::new(stream);
    let mut logged = 0usize;
    let mut dropped = false;
    let mut line = Vec::new();
    loop {
        line.clear();
        // A line without an end is read in pieces, so memory stays bounded.
        match (&mut lines)
            .take(MAX_LINE_BYTES)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if logged + n <= log.max_bytes {
                    logged += n;
                    let mut text = String::from_utf8_lossy(&line).into_owned();
                    for secret in &log.masked {
                        text = text.replace(secret.as_str(), crate::secrets::MASK);
                    }
                    emit(text.trim_end());
                } else if !dropped {
                    dropped = true;
                    emit(&format!(
                        "(stderr past {} bytes is not logged)",
                        log.max_bytes
                    ));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn stderr_is_logged_masked_and_bounded() {
        let log = ServiceLog {
            label: "test".into(),
            max_bytes: 40,
            masked: vec!["sk-live-123456".into()],
        };
        let long = "x".repeat(20_000);
        let stderr = format!("starting\nkey is sk-live-123456\n{long}\nlast words\n");
        let mut lines = Vec::new();
        read_lines(stderr.as_bytes(), &log, |line| lines.push(line.to_owned())).await;
        assert_eq!(
            lines,
            [
                "starting",
                "key is ********",
                "(stderr past 40 bytes is not logged)"
            ]
        );
    }
}
