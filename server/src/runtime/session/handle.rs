//! An open session: its log writer, running totals, the recent-events ring that serves
//! live subscribers, and the conversation history that feeds the next turn.

use std::collections::VecDeque;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use uuid::Uuid;

use super::history::{History, HistorySnapshot};
use super::log::EventLog;
use super::record::{SUMMARY_FILE, SessionInfo, SessionRecord, SessionStats, write_json_atomic};
use crate::runtime::error::{Result, RuntimeError};
use crate::runtime::events::{Event, EventPayload, now_ms};

/// How many recent events stay in memory for live subscribers. A subscriber further
/// behind reads the log file instead, so memory stays bounded whatever it does.
const RECENT_EVENTS: usize = 512;

/// Events handed to a subscriber per batch.
const BATCH: usize = 256;

/// How long a durability point written by [`SessionHandle::append_now`] (a turn's start)
/// waits for a later sync to share: a turn that ends sooner costs one sync, not two.
const GROUP_SYNC_DELAY: std::time::Duration = std::time::Duration::from_millis(10);

pub struct SessionHandle {
    record: SessionRecord,
    dir: PathBuf,
    state: Mutex<LiveState>,
    /// A second descriptor of the log file, so syncing happens outside the state lock.
    sync_file: File,
    /// The last sequence subscribers may see; they wait on it.
    published: watch::Sender<u64>,
    /// The last sequence known to be on stable storage.
    synced_sequence: AtomicU64,
    summary: SummaryWriter,
}

/// Rewrites of `summary.json`, off the async threads (replacing a file can wait on the
/// disk), at most one per [`SUMMARY_DELAY`] per session: readers fold in the events a
/// summary does not cover, so a busy session need not rewrite it after every turn.
struct SummaryWriter {
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
}

struct LiveState {
    log: EventLog,
    /// Durability points written and not yet synced, oldest first, and whether their
    /// writer holds them back until it has acted on the sync. Nothing from the first of
    /// them on is visible to subscribers.
    unsynced: VecDeque<(u64, bool)>,
    stats: SessionStats,
    recent: VecDeque<Arc<Event>>,
    history: History,
    /// A turn the log shows as started but never ended (found when opening it).
    open_turn: Option<(Uuid, Vec<String>)>,
    deleted: bool,
}

/// What replaying the log found about the turn that was running, if any.
#[derive(Default)]
pub(crate) struct ReplayState {
    pub stats: SessionStats,
    pub recent: VecDeque<Arc<Event>>,
    pub history: History,
    /// A turn started but never completed, and its approvals still pending.
    pub open_turn: Option<(Uuid, Vec<String>)>,
}

impl ReplayState {
    pub fn observe(&mut self, event: Event) {
        self.stats.observe(&event);
        match &event.payload {
            EventPayload::TurnStarted(_) => {
                self.open_turn = event.turn_id.map(|id| (id, Vec::new()));
            }
            EventPayload::PermissionRequested { request_id, .. } => {
                if let Some((_, pending)) = &mut self.open_turn {
                    pending.push(request_id.clone());
                }
            }
            EventPayload::ApprovalResolved { request_id, .. } => {
                if let Some((_, pending)) = &mut self.open_turn {
                    pending.retain(|r| r != request_id);
                }
            }
            EventPayload::TurnCompleted(_) => self.open_turn = None,
            _ => {}
        }
        self.history.observe(&event);
        if self.recent.len() == RECENT_EVENTS {
            self.recent.pop_front();
        }
        self.recent.push_back(Arc::new(event));
    }
}

/// A random (version 4) id for an event, from the thread's generator: `Uuid::new_v4`
/// makes a system call per id, and a busy turn writes thousands of events a second.
fn event_id() -> Uuid {
    uuid::Builder::from_random_bytes(rand::random()).into_uuid()
}

impl SessionHandle {
    pub(crate) fn new(
        record: SessionRecord,
        dir: PathBuf,
        log: EventLog,
        replay: ReplayState,
        summary_tasks: SummaryTasks,
    ) -> Result<Self> {
        let sync_file = File::open(log.path())
            .map_err(|e| RuntimeError::storage(format!("open {}", log.path().display()), e))?;
        let (published, _) = watch::channel(log.last_sequence());
        let synced_sequence = AtomicU64::new(log.last_sequence());
        let mut replay = replay;
        replay.stats.log_bytes = log.size();
        Ok(Self {
            synced_sequence,
            summary: SummaryWriter {
                dirty: AtomicBool::new(false),
                running: AtomicBool::new(false),
                tasks: summary_tasks,
            },
            record,
            dir,
            sync_file,
            published,
            state: Mutex::new(LiveState {
                unsynced: VecDeque::new(),
                log,
                stats: replay.stats,
                recent: replay.recent,
                history: replay.history,
                open_turn: replay.open_turn,
                deleted: false,
            }),
        })
    }

    pub fn id(&self) -> Uuid {
        self.record.id
    }

    pub fn record(&self) -> &SessionRecord {
        &self.record
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn info(&self) -> SessionInfo {
        SessionInfo {
            record: self.record.clone(),
            stats: self.lock().stats.clone(),
        }
    }

    pub fn stats(&self) -> SessionStats {
        self.lock().stats.clone()
    }

    /// What the next turn starts from: the latest summary, the completed turns after it
    /// (oldest first) and the recalled memory section.
    pub fn history(&self) -> HistorySnapshot {
        self.lock().history.snapshot()
    }

    fn lock(&self) -> MutexGuard<'_, LiveState> {
        // A panic while holding the lock leaves plain data behind; keep serving it.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Appends an event and wakes subscribers. Durability points are synced first, so a
    /// subscriber never sees a turn end or an approval request that a crash could lose.
    pub async fn append(&self, turn_id: Option<Uuid>, payload: EventPayload) -> Result<Arc<Event>> {
        self.append_then(turn_id, payload, |_| {}).await
    }

    /// Like [`append`](Self::append), running `before_publish` once the event is written
    /// (and synced, at durability points) but before any subscriber can see it: state
    /// that callers read after seeing the event (an execution's status) is updated there.
    pub async fn append_then(
        &self,
        turn_id: Option<Uuid>,
        payload: EventPayload,
        before_publish: impl FnOnce(&Event),
    ) -> Result<Arc<Event>> {
        let durable = payload.is_durability_point();
        let event = self.write(turn_id, payload, durable)?;
        if durable {
            let synced = self.sync().await;
            if synced.is_ok() {
                before_publish(&event);
            }
            self.release(event.sequence);
            synced?;
        } else {
            before_publish(&event);
        }
        self.publish();
        Ok(event)
    }

    /// Appends without waiting; subscribers see it at once, except a durability point
    /// (and what follows it), which they see once it is synced: by the next durable
    /// append, or within [`GROUP_SYNC_DELAY`]. So a turn that ends sooner than that is
    /// made durable, its start with its end, by one sync.
    pub fn append_now(
        self: &Arc<Self>,
        turn_id: Option<Uuid>,
        payload: EventPayload,
    ) -> Result<Arc<Event>> {
        let durable = payload.is_durability_point();
        let event = self.write(turn_id, payload, false)?;
        if durable {
            self.sync_soon();
        }
        self.publish();
        Ok(event)
    }

    /// Writes an event to the log and the ring without telling subscribers. A durability
    /// point is remembered as unsynced, `held` when its writer releases it itself.
    fn write(
        &self,
        turn_id: Option<Uuid>,
        payload: EventPayload,
        held: bool,
    ) -> Result<Arc<Event>> {
        let mut state = self.lock();
        if state.deleted {
            return Err(RuntimeError::not_found(
                "session",
                self.record.id.to_string(),
            ));
        }
        let event = Event {
            id: event_id(),
            session_id: self.record.id,
            sequence: state.log.last_sequence() + 1,
            created_at_ms: now_ms(),
            turn_id,
            payload,
        };
        state.log.append(&event).map_err(RuntimeError::from)?;
        if event.payload.is_durability_point() {
            state.unsynced.push_back((event.sequence, held));
        }
        state.stats.observe(&event);
        state.stats.log_bytes = state.log.size();
        state.history.observe(&event);
        let event = Arc::new(event);
        if state.recent.len() == RECENT_EVENTS {
            state.recent.pop_front();
        }
        state.recent.push_back(event.clone());
        Ok(event)
    }

    /// Lets subscribers see every event before the first unsynced durability point.
    /// `send_if_modified` keeps the published sequence monotonic.
    fn publish(&self) {
        let visible = {
            let state = self.lock();
            state
                .unsynced
                .front()
                .map_or(state.log.last_sequence(), |(first, _)| first - 1)
        };
        self.published.send_if_modified(|last| {
            if visible > *last {
                *last = visible;
                true
            } else {
                false
            }
        });
    }

    /// A held durability point is no longer held (its writer has acted on its sync).
    fn release(&self, sequence: u64) {
        let mut state = self.lock();
        let synced = self.synced_sequence.load(Ordering::Acquire);
        state
            .unsynced
            .retain(|(s, held)| *s != sequence && (*held || *s > synced));
    }

    /// Syncs after [`GROUP_SYNC_DELAY`], unless another sync covered everything by then,
    /// and publishes what it made durable.
    fn sync_soon(self: &Arc<Self>) {
        let handle = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(GROUP_SYNC_DELAY).await;
            if let Err(e) = handle.sync().await {
                tracing::warn!(session = %handle.id(), error = %e, "cannot sync the event log");
            }
            handle.publish();
        });
    }

    /// Makes everything appended so far durable. Concurrent callers each wait for their
    /// own sync; a call with nothing new to sync returns at once.
    pub async fn sync(&self) -> Result<()> {
        let target = self.lock().log.last_sequence();
        if self.synced_sequence.load(Ordering::Acquire) < target {
            let file = self
                .sync_file
                .try_clone()
                .map_err(|e| RuntimeError::storage("duplicate log descriptor", e))?;
            let path = self.dir.clone();
            tokio::task::spawn_blocking(move || file.sync_data())
                .await
                .map_err(|e| RuntimeError::storage("sync log", std::io::Error::other(e)))?
                .map_err(|e| RuntimeError::storage(format!("sync {}", path.display()), e))?;
            self.synced_sequence.fetch_max(target, Ordering::AcqRel);
        }
        let synced = self.synced_sequence.load(Ordering::Acquire);
        self.lock()
            .unsynced
            .retain(|(s, held)| *held || *s > synced);
        Ok(())
    }

    /// Rewrites `summary.json` (a cache) in the background, after [`SUMMARY_DELAY`], with
    /// the totals as they are then.
    pub fn write_summary(self: &Arc<Self>) {
        let summary = &self.summary;
        summary.dirty.store(true, Ordering::SeqCst);
        if summary.running.swap(true, Ordering::SeqCst) {
            return;
        }
        let handle = self.clone();
        summary.tasks.tracker.spawn(async move {
            let summary = &handle.summary;
            loop {
                let flush = summary.tasks.flush.clone();
                tokio::select! {
                    () = tokio::time::sleep(SUMMARY_DELAY) => {}
                    () = flush.cancelled() => {}
                }
                while summary.dirty.swap(false, Ordering::SeqCst) {
                    let writer = handle.clone();
                    let _ = tokio::task::spawn_blocking(move || writer.write_summary_now()).await;
                }
                summary.running.store(false, Ordering::SeqCst);
                // A request that came after the last swap saw a running writer and left
                // its write to it: take it over, unless another writer already has.
                if !summary.dirty.load(Ordering::SeqCst)
                    || summary.running.swap(true, Ordering::SeqCst)
                {
                    break;
                }
            }
        });
    }

    fn write_summary_now(&self) {
        let (stats, deleted) = {
            let state = self.lock();
            (state.stats.clone(), state.deleted)
        };
        if deleted {
            return;
        }
        if let Err(e) = write_json_atomic(&self.dir.join(SUMMARY_FILE), &stats, false) {
            tracing::warn!(session = %self.record.id, error = %e, "cannot write session summary");
        }
    }

    /// The turn a crash left open, with its pending approval ids; handed out once.
    pub(crate) fn take_open_turn(&self) -> Option<(Uuid, Vec<String>)> {
        self.lock().open_turn.take()
    }

    /// Marks the session deleted: appends fail and subscribers end.
    pub(crate) fn mark_deleted(&self) {
        self.lock().deleted = true;
        self.published.send_modify(|_| {});
    }

    /// Follows the log from after `after_sequence`.
    pub fn subscribe(self: &Arc<Self>, after_sequence: u64) -> Subscription {
        Subscription {
            handle: self.clone(),
            cursor: after_sequence,
            wake: self.published.subscribe(),
            file: None,
        }
    }
}

/// A cursor over a session's events: stored ones first, then live ones as they are
/// appended, with no gap and no duplicate. Holds at most one batch in memory.
pub struct Subscription {
    handle: Arc<SessionHandle>,
    cursor: u64,
    wake: watch::Receiver<u64>,
    file: Option<super::log::LogReader>,
}

impl Subscription {
    /// The sequence of the last event handed out.
    pub fn cursor(&self) -> u64 {
        self.cursor
    }

    pub fn session(&self) -> &Arc<SessionHandle> {
        &self.handle
    }

    /// The next events, waiting for new ones when caught up. `Ok(None)` when the session
    /// was deleted.
    pub async fn next_batch(&mut self) -> Result<Option<Vec<Arc<Event>>>> {
        loop {
            let last = *self.wake.borrow_and_update();
            if self.cursor < last {
                let batch = self.read_batch(last).await?;
                if !batch.is_empty() {
                    self.cursor = batch[batch.len() - 1].sequence;
                    return Ok(Some(batch));
                }
            }
            if self.handle.lock().deleted {
                return Ok(None);
            }
            if self.wake.changed().await.is_err() {
                return Ok(None);
            }
        }
    }

    /// Up to [`BATCH`] events after the cursor, none past `last` (the published end).
    async fn read_batch(&mut self, last: u64) -> Result<Vec<Arc<Event>>> {
        {
            let state = self.handle.lock();
            if state.deleted {
                return Ok(Vec::new());
            }
            let in_ring = state
                .recent
                .front()
                .is_some_and(|first| first.sequence <= self.cursor + 1);
            if in_ring {
                self.file = None;
                let skip = (self.cursor + 1 - state.recent[0].sequence) as usize;
                return Ok(state
                    .recent
                    .iter()
                    .skip(skip)
                    .take_while(|e| e.sequence <= last)
                    .take(BATCH)
                    .cloned()
                    .collect());
            }
            if self.file.is_none() {
                self.file = Some(
                    state
                        .log
                        .reader_after(self.cursor)
                        .map_err(RuntimeError::from)?,
                );
            }
        }
        // Behind the ring: read the log file, off the async threads.
        let Some(mut reader) = self.file.take() else {
            return Ok(Vec::new());
        };
        let (reader, batch) = tokio::task::spawn_blocking(move || {
            let mut batch = Vec::with_capacity(BATCH);
            while batch.len() < BATCH {
                match reader.next_event() {
                    Ok(Some(event)) if event.sequence > last => return (None, Ok(batch)),
                    Ok(Some(event)) => batch.push(Arc::new(event)),
                    Ok(None) => return (None, Ok(batch)),
                    Err(e) => return (None, Err(e)),
                }
            }
            (Some(reader), Ok(batch))
        })
        .await
        .map_err(|e| RuntimeError::storage("read log", std::io::Error::other(e)))?;
        self.file = reader;
        batch.map_err(RuntimeError::from)
    }
}
