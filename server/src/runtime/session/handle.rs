//! An open session: its log writer, running totals, the recent-events ring that serves
//! live subscribers, and the conversation history that feeds the next turn.

use std::collections::VecDeque;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::watch;
use uuid::Uuid;

use super::history::{History, HistorySnapshot};
use super::log::EventLog;
use super::record::{SessionInfo, SessionRecord, SessionStats};
use super::subscription::Subscription;
use super::summary::{SummaryTasks, SummaryWriter};
use crate::runtime::error::{Result, RuntimeError};
use crate::runtime::events::{Event, EventPayload, now_ms};

/// How many recent events stay in memory for live subscribers. A subscriber further
/// behind reads the log file instead, so memory stays bounded whatever it does.
const RECENT_EVENTS: usize = 512;

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
    pub(super) published: watch::Sender<u64>,
    /// The last sequence known to be on stable storage.
    synced_sequence: AtomicU64,
    summary: SummaryWriter,
}

pub(super) struct LiveState {
    pub(super) log: EventLog,
    /// Durability points written and not yet synced, oldest first, and whether their
    /// writer holds them back until it has acted on the sync. Nothing from the first of
    /// them on is visible to subscribers.
    unsynced: VecDeque<(u64, bool)>,
    stats: SessionStats,
    pub(super) recent: VecDeque<Arc<Event>>,
    history: History,
    /// A turn the log shows as started but never ended (found when opening it).
    open_turn: Option<(Uuid, Vec<String>)>,
    pub(super) deleted: bool,
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
            summary: SummaryWriter::new(summary_tasks),
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

    pub(super) fn lock(&self) -> MutexGuard<'_, LiveState> {
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
    /// and publishes what it made durable. Outside a tokio runtime (an embedder's plain
    /// thread) there is nothing to wait in: it syncs at once.
    fn sync_soon(self: &Arc<Self>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            if let Err(e) = self.sync_blocking() {
                tracing::warn!(session = %self.id(), error = %e, "cannot sync the event log");
            }
            return;
        };
        let handle = self.clone();
        runtime.spawn(async move {
            tokio::time::sleep(GROUP_SYNC_DELAY).await;
            if let Err(e) = handle.sync().await {
                tracing::warn!(session = %handle.id(), error = %e, "cannot sync the event log");
            }
            handle.publish();
        });
    }

    /// [`sync`](Self::sync) on the calling thread.
    fn sync_blocking(&self) -> Result<()> {
        let target = self.lock().log.last_sequence();
        self.sync_file
            .sync_data()
            .map_err(|e| RuntimeError::storage(format!("sync {}", self.dir.display()), e))?;
        self.synced(target);
        Ok(())
    }

    /// Everything up to `target` is on stable storage.
    fn synced(&self, target: u64) {
        self.synced_sequence.fetch_max(target, Ordering::AcqRel);
        let synced = self.synced_sequence.load(Ordering::Acquire);
        self.lock()
            .unsynced
            .retain(|(s, held)| *held || *s > synced);
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
        }
        self.synced(target);
        Ok(())
    }

    /// The last sequence subscribers can see (events after it wait for a sync).
    pub fn visible_sequence(&self) -> u64 {
        *self.published.borrow()
    }

    pub(super) fn summary(&self) -> &SummaryWriter {
        &self.summary
    }

    /// The totals, unless the session was deleted.
    pub(super) fn live_stats(&self) -> Option<SessionStats> {
        let state = self.lock();
        (!state.deleted).then(|| state.stats.clone())
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
