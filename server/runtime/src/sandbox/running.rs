//! The processes running now, by cell, so deleting a session can stop its processes
//! before its cell is removed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::error::SandboxError;

#[derive(Debug, Default)]
pub(crate) struct RunningSet {
    execs: Mutex<HashMap<String, Running>>,
    ended: Notify,
}

#[derive(Debug)]
struct Running {
    cell_root: PathBuf,
    cancel: CancellationToken,
    /// A long-lived process of the session (an MCP server), not one command of a turn.
    service: bool,
}

/// One registered process; unregisters when dropped.
#[derive(Debug)]
pub(crate) struct RunningGuard {
    set: Arc<RunningSet>,
    exec_id: String,
    cancel: CancellationToken,
}

impl RunningGuard {
    /// Fires when the caller cancels or the cell's processes are killed.
    pub(crate) fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        self.set.lock().remove(&self.exec_id);
        self.set.ended.notify_waiters();
    }
}

impl RunningSet {
    /// Locks the table; a panic elsewhere while holding it leaves a consistent map, so a
    /// poisoned lock is used as is.
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Running>> {
        crate::sync::lock(&self.execs)
    }

    /// Registers `exec_id` in `cell_root`; its token is a child of the caller's `cancel`.
    /// With `max_in_cell`, refuses a command beyond that many running in the cell.
    pub(crate) fn register(
        self: &Arc<Self>,
        exec_id: &str,
        cell_root: &Path,
        cancel: &CancellationToken,
        max_in_cell: Option<u64>,
    ) -> Result<RunningGuard, SandboxError> {
        let mut execs = self.lock();
        if execs.contains_key(exec_id) {
            return Err(SandboxError::AlreadyRunning {
                exec_id: exec_id.to_owned(),
            });
        }
        if let Some(limit) = max_in_cell {
            let running = execs.values().filter(|r| r.cell_root == cell_root).count();
            if u64::try_from(running).unwrap_or(u64::MAX) >= limit {
                return Err(SandboxError::TooManyCommands { limit });
            }
        }
        let token = cancel.child_token();
        execs.insert(
            exec_id.to_owned(),
            Running {
                cell_root: cell_root.to_path_buf(),
                cancel: token.clone(),
                service: false,
            },
        );
        Ok(RunningGuard {
            set: self.clone(),
            exec_id: exec_id.to_owned(),
            cancel: token,
        })
    }

    /// Kills every process running in `cell_root`; answers how many there were.
    pub(crate) fn cancel_cell(&self, cell_root: &Path) -> usize {
        let execs = self.lock();
        let mut count = 0;
        for running in execs.values().filter(|r| r.cell_root == cell_root) {
            running.cancel.cancel();
            count += 1;
        }
        count
    }

    /// Marks `exec_id` as a long-lived process of its session (an MCP server): the end of
    /// a turn does not stop it.
    pub(crate) fn mark_service(&self, exec_id: &str) {
        if let Some(running) = self.lock().get_mut(exec_id) {
            running.service = true;
        }
    }

    /// Kills the commands (not the services) running in `cell_root`; answers how many.
    pub(crate) fn cancel_commands(&self, cell_root: &Path) -> usize {
        let execs = self.lock();
        let mut count = 0;
        for running in execs
            .values()
            .filter(|r| r.cell_root == cell_root && !r.service)
        {
            running.cancel.cancel();
            count += 1;
        }
        count
    }

    fn has_cell(&self, cell_root: &Path, commands_only: bool) -> bool {
        self.lock()
            .values()
            .any(|r| r.cell_root == cell_root && !(commands_only && r.service))
    }

    /// Waits until nothing runs in `cell_root`; false if that took longer than `limit`.
    pub(crate) async fn wait_cell_idle(&self, cell_root: &Path, limit: Duration) -> bool {
        self.wait_idle(cell_root, limit, false).await
    }

    /// Waits until no command (services aside) runs in `cell_root`.
    pub(crate) async fn wait_commands_idle(&self, cell_root: &Path, limit: Duration) -> bool {
        self.wait_idle(cell_root, limit, true).await
    }

    async fn wait_idle(&self, cell_root: &Path, limit: Duration, commands_only: bool) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let ended = self.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if !self.has_cell(cell_root, commands_only) {
                return true;
            }
            if tokio::time::timeout_at(deadline, ended).await.is_err() {
                return !self.has_cell(cell_root, commands_only);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn cancelling_a_cell_fires_only_its_tokens() {
        let set = Arc::new(RunningSet::default());
        let parent = CancellationToken::new();
        let a = set
            .register("a", Path::new("/cells/a"), &parent, None)
            .expect("a");
        let b = set
            .register("b", Path::new("/cells/b"), &parent, Some(1))
            .expect("b");
        assert!(matches!(
            set.register("a", Path::new("/cells/a"), &parent, None),
            Err(SandboxError::AlreadyRunning { .. })
        ));
        // One command per cell: a second in cell b is refused, cell a is apart.
        assert!(matches!(
            set.register("b2", Path::new("/cells/b"), &parent, Some(1)),
            Err(SandboxError::TooManyCommands { limit: 1 })
        ));
        assert!(
            set.register("a2", Path::new("/cells/a"), &parent, Some(1))
                .is_err()
        );
        drop(
            set.register("c", Path::new("/cells/c"), &parent, Some(1))
                .expect("c"),
        );
        assert_eq!(set.cancel_cell(Path::new("/cells/a")), 1);
        assert!(a.cancel_token().is_cancelled());
        assert!(!b.cancel_token().is_cancelled());

        let token = a.cancel_token();
        let waiter = {
            let set = set.clone();
            tokio::spawn(async move {
                set.wait_cell_idle(Path::new("/cells/a"), Duration::from_secs(5))
                    .await
            })
        };
        drop(a);
        assert!(waiter.await.expect("joins"));
        assert!(token.is_cancelled());
        assert!(
            !set.wait_cell_idle(Path::new("/cells/b"), Duration::from_millis(10))
                .await
        );
    }
}
