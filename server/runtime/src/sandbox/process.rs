//! Starting one process and watching it to its end.
//!
//! The process leads its own process group, so one `killpg` reaches everything it started
//! (and, under bubblewrap, killing the group kills the namespace's init, which takes the
//! whole PID namespace with it). Its exit is watched through a pidfd, which becomes
//! readable when the process exits but before it is reaped: the group is killed while the
//! leader is still a zombie, so its pid, and with it the group id, cannot have been reused
//! by an unrelated process. Only then is it reaped.

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

use super::error::SandboxError;
use super::leftovers::GroupRecord;
use super::limits::RlimitValues;
use super::output::{CappedStream, Coalescer};
use super::types::ExecOutcome;
use crate::events::OutputStream;

/// After the process exits, how long output from stragglers that escaped the group (and
/// still hold the pipes) is awaited before the run is declared over.
const DRAIN_GRACE: Duration = Duration::from_millis(500);
const READ_CHUNK: usize = 16 * 1024;

/// What to start.
#[derive(Debug)]
pub(crate) struct Launch {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// The whole environment: nothing is inherited.
    pub env: Vec<(OsString, OsString)>,
    pub cwd: PathBuf,
    /// rlimits set before exec (when no helper sets them).
    pub rlimits: Option<RlimitValues>,
    /// A descriptor of the server's the process inherits (the lifeline's read end).
    pub inherit_fd: Option<RawFd>,
    /// The membership files of the session's groups (`tasks` on cgroup v1, `cgroup.procs`
    /// on v2), which the process writes itself into before anything else (so before it
    /// can fork).
    pub cgroup_files: Vec<OwnedFd>,
}

/// How to watch it.
pub(crate) struct Supervision<'a> {
    pub timeout: Duration,
    pub max_output_bytes: usize,
    pub cancel: CancellationToken,
    /// Where the group's record goes (`<sandbox root>`).
    pub sandbox_root: &'a Path,
    pub exec_id: &'a str,
}

/// Starts `launch` in its own process group with piped output and no stdin.
pub(crate) fn spawn(launch: Launch) -> io::Result<Child> {
    spawn_with(launch, Stdio::null())
}

/// Starts `launch` in its own process group with piped output and `stdin`.
pub(crate) fn spawn_with(launch: Launch, stdin: Stdio) -> io::Result<Child> {
    let mut command = Command::new(&launch.program);
    command
        .args(&launch.args)
        .env_clear()
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&launch.cwd)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let limits = launch.rlimits;
    let inherit_fd = launch.inherit_fd;
    let server = std::process::id();
    // The descriptors stay open (owned by `launch`) until `spawn` below has forked.
    let cgroup_files: Vec<RawFd> = launch
        .cgroup_files
        .iter()
        .map(|fd| fd.as_raw_fd())
        .collect();
    odyssey_sandbox::host::prepare_child(
        command.as_std_mut(),
        odyssey_sandbox::host::ChildSetup {
            cgroup_files,
            rlimits: limits,
            inherit_fd,
            server_pid: server,
        },
    );
    command.spawn()
}

/// Watches `child` until it ends, is timed out or is cancelled, forwarding its output.
pub(crate) async fn supervise(
    mut child: Child,
    watch: Supervision<'_>,
    on_output: &mut (dyn FnMut(OutputStream, String) + Send),
) -> Result<ExecOutcome, SandboxError> {
    let started = Instant::now();
    let Some(pid) = child.id().and_then(|id| i32::try_from(id).ok()) else {
        return Err(SandboxError::io(
            "watching the started process",
            io::Error::other("the process has no pid"),
        ));
    };
    let mut killer = GroupKiller {
        pgid: pid,
        armed: true,
    };
    let exit = pidfd(pid).map_err(|e| SandboxError::io("watching the started process", e))?;
    let _record = GroupRecord::create(watch.sandbox_root, watch.exec_id, pid)?;

    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let mut out = CappedStream::new(watch.max_output_bytes);
    let mut err = CappedStream::new(watch.max_output_bytes);
    // The log gets at most what is kept of both streams (twice over for escapes).
    let mut chunks = Coalescer::new(watch.max_output_bytes.saturating_mul(4));
    let (mut out_buf, mut err_buf) = (vec![0u8; READ_CHUNK], vec![0u8; READ_CHUNK]);
    let deadline = tokio::time::sleep(watch.timeout);
    tokio::pin!(deadline);
    let mut exited = false;
    let mut timed_out = false;
    let mut cancelled = false;
    let mut drain_until: Option<tokio::time::Instant> = None;

    while !(exited && stdout.is_none() && stderr.is_none()) {
        let killed = timed_out || cancelled;
        let event = tokio::select! {
            read = read_some(&mut stdout, &mut out_buf), if stdout.is_some() => Event::Stdout(read),
            read = read_some(&mut stderr, &mut err_buf), if stderr.is_some() => Event::Stderr(read),
            _ = exit.readable(), if !exited => Event::Exited,
            () = &mut deadline, if !exited && !killed => Event::TimedOut,
            () = watch.cancel.cancelled(), if !exited && !killed => Event::Cancelled,
            () = sleep_until(drain_until), if drain_until.is_some() => Event::DrainOver,
            () = sleep_until(chunks.due()), if chunks.due().is_some() => Event::ChunkDue,
        };
        match event {
            Event::Stdout(Ok(n)) if n > 0 => {
                if let Some(text) = out.push(&out_buf[..n]) {
                    chunks.push(OutputStream::Stdout, &text, on_output);
                }
            }
            Event::Stderr(Ok(n)) if n > 0 => {
                if let Some(text) = err.push(&err_buf[..n]) {
                    chunks.push(OutputStream::Stderr, &text, on_output);
                }
            }
            Event::Stdout(_) => stdout = None,
            Event::Stderr(_) => stderr = None,
            Event::Exited => {
                exited = true;
                // Whatever the leader left behind in its group goes with it.
                killer.kill();
                drain_until = Some(tokio::time::Instant::now() + DRAIN_GRACE);
            }
            Event::TimedOut => {
                timed_out = true;
                killer.kill();
            }
            Event::Cancelled => {
                cancelled = true;
                killer.kill();
            }
            Event::ChunkDue => chunks.on_due(on_output),
            Event::DrainOver => break,
        }
    }
    for (stream, kind) in [
        (&mut out, OutputStream::Stdout),
        (&mut err, OutputStream::Stderr),
    ] {
        if let Some(text) = stream.finish() {
            chunks.push(kind, &text, on_output);
        }
    }
    chunks.finish(on_output);
    let status = child
        .wait()
        .await
        .map_err(|e| SandboxError::io("reaping the process", e))?;
    killer.armed = false;
    let exit_code = status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    let truncated = out.truncated() || err.truncated();
    if chunks.capped() {
        tracing::debug!(
            exec_id = watch.exec_id,
            "output past the log cap was not recorded as events"
        );
    }
    Ok(ExecOutcome {
        exit_code,
        stdout: out.into_text(),
        stderr: err.into_text(),
        truncated,
        timed_out,
        cancelled,
        duration: started.elapsed(),
    })
}

enum Event {
    Stdout(io::Result<usize>),
    Stderr(io::Result<usize>),
    Exited,
    TimedOut,
    Cancelled,
    ChunkDue,
    DrainOver,
}

async fn read_some<R: AsyncRead + Unpin>(
    stream: &mut Option<R>,
    buf: &mut [u8],
) -> io::Result<usize> {
    match stream {
        Some(stream) => stream.read(buf).await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// A pidfd of `pid`, readable once the process has exited.
pub(crate) fn pidfd(pid: i32) -> io::Result<AsyncFd<OwnedFd>> {
    odyssey_sandbox::host::pidfd(pid)
}

/// Kills the process group; also when the run is abandoned (its future dropped) before
/// the leader was reaped, so nothing outlives a caller that went away.
pub(crate) struct GroupKiller {
    pub(crate) pgid: i32,
    pub(crate) armed: bool,
}

impl GroupKiller {
    pub(crate) fn kill(&self) {
        // The leader has not been reaped yet, so the group id still names this group.
        if let Some(group) = rustix::process::Pid::from_raw(self.pgid) {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        if self.armed {
            self.kill();
        }
    }
}
