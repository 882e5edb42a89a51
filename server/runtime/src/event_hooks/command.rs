//! A command hook: one long-running process per hook, fed one JSON event per line on its
//! stdin (events that queued up meanwhile go in one write). It is started with the first event and started again after it exits; a start
//! that fails, or a process that fails, holds the next start back (1 s, doubling to
//! 30 s) so a broken hook does not fork once per event. A write that does not finish
//! within the timeout (the process stopped reading) ends the process. When the runtime
//! stops, the process gets EOF after the last queued event and a moment to finish.

use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::{Control, EventEncoder, Failure, HookStats};
use crate::events::Event;

/// The environment a hook command gets: enough to find programs and print text, nothing
/// that could hold a secret (provider keys live in the server's environment).
const PASSED_ENV: [&str; 3] = ["PATH", "LANG", "TZ"];

const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Most events written at once: a burst of events (a streamed answer) costs the hook's
/// task one wake-up and the pipe one write per batch, not per event.
const BATCH: usize = 256;
/// How long a process whose stdin broke may take to report its exit.
const REAP_WAIT: Duration = Duration::from_millis(200);
/// A process that ran this long before failing starts again without waiting.
const STABLE_AFTER: Duration = Duration::from_secs(30);

struct Running {
    child: Child,
    stdin: ChildStdin,
    started: Instant,
}

pub(super) struct CommandHook {
    argv: Vec<String>,
    timeout: Duration,
    encoder: EventEncoder,
    stats: Arc<HookStats>,
    running: Option<Running>,
    /// No start before this.
    next_start: Option<Instant>,
    backoff: Duration,
}

impl CommandHook {
    pub(super) fn new(
        argv: Vec<String>,
        timeout: Duration,
        encoder: EventEncoder,
        stats: Arc<HookStats>,
    ) -> Self {
        Self {
            argv,
            timeout,
            encoder,
            stats,
            running: None,
            next_start: None,
            backoff: FIRST_BACKOFF,
        }
    }

    /// Delivers events until the runtime closes the hooks; the process is killed when
    /// this ends.
    pub(super) async fn run(mut self, mut events: mpsc::Receiver<Arc<Event>>, control: Control) {
        let mut stopping = false;
        let mut batch = Vec::with_capacity(BATCH);
        loop {
            let received = tokio::select! {
                biased;
                () = control.abort.cancelled() => return,
                () = control.stop.cancelled(), if !stopping => {
                    stopping = true;
                    events.close();
                    continue;
                }
                status = exited(&mut self.running) => {
                    self.ended(status);
                    continue;
                }
                received = events.recv_many(&mut batch, BATCH) => received,
            };
            if received == 0 {
                self.finish(&control).await;
                return;
            }
            tokio::select! {
                () = control.abort.cancelled() => return,
                () = self.deliver(&batch) => {}
            }
            batch.clear();
        }
    }

    /// Writes `events` as lines, in one write when the pipe takes them.
    async fn deliver(&mut self, events: &[Arc<Event>]) {
        let count = events.len() as u64;
        let timeout = self.timeout;
        let mut lines = Vec::new();
        for event in events {
            lines.extend_from_slice(&self.encoder.encode(event));
            lines.push(b'\n');
        }
        let Some(running) = self.ensure_running() else {
            self.stats.events_failed(count);
            return;
        };
        let written = tokio::time::timeout(timeout, running.stdin.write_all(&lines)).await;
        match written {
            Ok(Ok(())) => self.stats.delivered(count),
            Ok(Err(e)) => {
                self.stats.events_failed(count);
                // A broken pipe usually means the process ended: say how, if it did.
                match self.reap().await {
                    Some(status) => self.ended(Ok(status)),
                    None => {
                        self.stats
                            .error(Failure::Write, &format_args!("writing to the command: {e}"));
                        self.stop_process().await;
                    }
                }
            }
            Err(_) => {
                self.stats.events_failed(count);
                self.stats.error(
                    Failure::Timeout,
                    &format_args!(
                        "the command read no event for {} ms; it is stopped and started again",
                        self.timeout.as_millis()
                    ),
                );
                self.stop_process().await;
            }
        }
    }

    /// The running process, started if needed (unless a failed start holds it back).
    fn ensure_running(&mut self) -> Option<&mut Running> {
        if self.running.is_none() {
            if self.next_start.is_some_and(|at| Instant::now() < at) {
                return None;
            }
            match self.spawn() {
                Ok(running) => self.running = Some(running),
                Err(e) => {
                    self.stats.error(
                        Failure::Start,
                        &format_args!("cannot start `{}`: {e}", self.argv[0]),
                    );
                    self.hold_back(Duration::ZERO);
                    return None;
                }
            }
        }
        self.running.as_mut()
    }

    fn spawn(&self) -> std::io::Result<Running> {
        let (program, args) = self
            .argv
            .split_first()
            .ok_or_else(|| std::io::Error::other("no program configured"))?;
        let mut command = Command::new(program);
        command
            .args(args)
            .env_clear()
            .envs(
                PASSED_ENV
                    .iter()
                    .filter_map(|k| Some((k, std::env::var_os(k)?))),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let mut child = command.spawn()?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("the command has no stdin"))?;
        Ok(Running {
            child,
            stdin,
            started: Instant::now(),
        })
    }

    /// The process ended on its own.
    fn ended(&mut self, status: std::io::Result<ExitStatus>) {
        let Some(running) = self.running.take() else {
            return;
        };
        let ran = running.started.elapsed();
        match status {
            Ok(status) if status.success() => {
                tracing::debug!(hook = %self.stats.name, "event hook command exited; it starts again with the next event");
            }
            Ok(status) => {
                self.stats
                    .error(Failure::Exit, &format_args!("the command ended: {status}"));
                self.hold_back(ran);
            }
            Err(e) => {
                self.stats.error(
                    Failure::Exit,
                    &format_args!("cannot wait for the command: {e}"),
                );
                self.hold_back(ran);
            }
        }
    }

    /// The hooks are closing and every queued event was written: the process gets EOF
    /// on its stdin and may finish its work, until the runtime stops waiting.
    async fn finish(&mut self, control: &Control) {
        let Some(Running {
            mut child, stdin, ..
        }) = self.running.take()
        else {
            return;
        };
        drop(stdin);
        tokio::select! {
            () = control.abort.cancelled() => {
                let _ = child.kill().await;
            }
            _ = child.wait() => {}
        }
    }

    /// The exit status of a process that is ending on its own, if it ends at once.
    async fn reap(&mut self) -> Option<ExitStatus> {
        let running = self.running.as_mut()?;
        tokio::time::timeout(REAP_WAIT, running.child.wait())
            .await
            .ok()?
            .ok()
    }

    async fn stop_process(&mut self) {
        if let Some(mut running) = self.running.take() {
            let _ = running.child.kill().await;
            self.hold_back(running.started.elapsed());
        }
    }

    /// After a failure, the next start waits; a process that had run a while resets the
    /// wait.
    fn hold_back(&mut self, ran: Duration) {
        if ran >= STABLE_AFTER {
            self.backoff = FIRST_BACKOFF;
        }
        self.next_start = Some(Instant::now() + self.backoff);
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
    }
}

/// Resolves when the running process exits; never without one.
async fn exited(running: &mut Option<Running>) -> std::io::Result<ExitStatus> {
    match running {
        Some(running) => running.child.wait().await,
        None => std::future::pending().await,
    }
}
