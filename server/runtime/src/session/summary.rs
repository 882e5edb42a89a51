//! Rewriting a session's `summary.json` (its totals, a cache of what the log says) off
//! the async threads and at most once per [`SUMMARY_DELAY`]: replacing a file can wait on
//! the disk, and readers fold in the events a summary does not cover (see
//! `store::catch_up`), so a busy session need not rewrite it after every turn.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::handle::SessionHandle;
use super::record::{SUMMARY_FILE, write_json_atomic};

/// Rewrites of `summary.json`, off the async threads (replacing a file can wait on the
/// disk), at most one per [`SUMMARY_DELAY`] per session: readers fold in the events a
/// summary does not cover, so a busy session need not rewrite it after every turn.
pub(super) struct SummaryWriter {
    /// A rewrite was asked for since the last one started.
    dirty: AtomicBool,
    /// A writer task is running.
    running: AtomicBool,
    /// The store's writer tasks, so that shutdown can wait for them.
    tasks: SummaryTasks,
}

/// How long a summary rewrite waits for further turns to fold in.
const SUMMARY_DELAY: std::time::Duration = std::time::Duration::from_secs(1);

/// The summary writers of a store: shutdown ends their waits and waits for them.
#[derive(Clone, Default)]
pub(crate) struct SummaryTasks {
    pub tracker: TaskTracker,
    /// Cancelled at shutdown: writers write at once from then on.
    pub flush: CancellationToken,
    /// Called when a writer task has let go of its session: the store can then drop a
    /// session it kept open only because the write held it.
    pub released: Option<Arc<dyn Fn() + Send + Sync>>,
}

impl SummaryWriter {
    pub fn new(tasks: SummaryTasks) -> Self {
        Self {
            dirty: AtomicBool::new(false),
            running: AtomicBool::new(false),
            tasks,
        }
    }
}

impl SessionHandle {
    /// Rewrites `summary.json` (a cache) in the background, after [`SUMMARY_DELAY`], with
    /// the totals as they are then.
    pub fn write_summary(self: &Arc<Self>) {
        let summary = self.summary();
        summary.dirty.store(true, Ordering::SeqCst);
        if summary.running.swap(true, Ordering::SeqCst) {
            return;
        }
        if tokio::runtime::Handle::try_current().is_err() {
            // An embedder's plain thread: nothing to wait in, so write now.
            summary.dirty.store(false, Ordering::SeqCst);
            self.write_summary_now();
            summary.running.store(false, Ordering::SeqCst);
            return;
        }
        let handle = self.clone();
        let tasks = summary.tasks.clone();
        summary.tasks.tracker.spawn(async move {
            handle.write_summaries().await;
            drop(handle);
            if let Some(released) = &tasks.released {
                released();
            }
        });
    }

    /// The writer task's work: a write per [`SUMMARY_DELAY`] while rewrites are asked for.
    async fn write_summaries(self: &Arc<Self>) {
        let summary = self.summary();
        loop {
            let flush = summary.tasks.flush.clone();
            tokio::select! {
                () = tokio::time::sleep(SUMMARY_DELAY) => {}
                () = flush.cancelled() => {}
            }
            while summary.dirty.swap(false, Ordering::SeqCst) {
                let writer = self.clone();
                let _ = tokio::task::spawn_blocking(move || writer.write_summary_now()).await;
            }
            summary.running.store(false, Ordering::SeqCst);
            // A request that came after the last swap saw a running writer and left
            // its write to it: take it over, unless another writer already has.
            if !summary.dirty.load(Ordering::SeqCst) || summary.running.swap(true, Ordering::SeqCst)
            {
                break;
            }
        }
    }

    fn write_summary_now(&self) {
        let Some(stats) = self.live_stats() else {
            return;
        };
        if let Err(e) = write_json_atomic(&self.dir().join(SUMMARY_FILE), &stats, false) {
            tracing::warn!(session = %self.id(), error = %e, "cannot write session summary");
        }
    }
}
