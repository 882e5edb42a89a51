//! An open session: its log writer, running totals, the recent-events ring that serves
//! live subscribers, and the conversation history that feeds the next turn.

use std::collections::VecDeque;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

use tokio::sync::watch;
use uuid::Uuid;

use super::creation::PendingCreation;
use super::history::{History, HistorySnapshot};
use super::log::EventLog;
use super::observer::EventObserver;
use super::record::{SessionInfo, SessionRecord, SessionState, SessionStats};
use super::remote::{self, RemoteLog};
use super::subscription::Subscription;
use super::summary::{SummaryTasks, SummaryWriter};
use super::unfinished::TurnSoFar;
use crate::chat::TokenUsage;
use crate::error::{Result, RuntimeError};
use crate::events::{
    ApprovalDecision, ApprovalResolution, Event, EventPayload, HumanInputAnswered, InputAction,
    TurnCompleted, TurnOutcome, now_ms,
};

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
    /// The runtime's view of every event (metrics, event hooks), if any.
    observer: Option<Arc<dyn EventObserver>>,
    /// The last sequence handed to the observer as published. Its own lock, taken before
    /// the state's, keeps hand-overs in sequence order when appends race.
    observed: Mutex<u64>,
    summary: SummaryWriter,
    /// The bundle digest this session's sandbox cell was prepared with by this process:
    /// later turns skip preparing it again (see [`SessionHandle::cell_prepared`]).
    prepared_cell: Mutex<Option<String>>,
    /// The syncs of the session's creation, when it was created without them: made with
    /// the log's first sync at the latest.
    creation: Option<PendingCreation>,
    /// The session's log in a store several servers share, of which this handle's log is
    /// the local copy (see [`super::remote`]).
    remote: OnceLock<Arc<RemoteLog>>,
}

/// Where one turn of the log ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TurnEndRef {
    /// The turn number: 1 for the session's first `turn_completed`.
    pub turn: u64,
    pub turn_id: Uuid,
    /// The sequence of its `turn_completed`.
    pub sequence: u64,
}

/// Turn ends in log order, as the log's `turn_completed` events give them.
#[derive(Clone, Debug, Default)]
pub(crate) struct TurnEnds(Vec<TurnEndRef>);

impl TurnEnds {
    fn observe(&mut self, event: &Event) {
        if let EventPayload::TurnCompleted(_) = &event.payload {
            let turn = self.0.len() as u64 + 1;
            self.0.push(TurnEndRef {
                turn,
                turn_id: event.turn_id.unwrap_or_default(),
                sequence: event.sequence,
            });
        }
    }
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
    turn_ends: TurnEnds,
    /// A turn the log shows as started but never ended, that nothing runs any more:
    /// found when opening the log after a crash, or left by a turn whose end could not
    /// be written. It is closed before the session's next turn starts.
    open_turn: Option<OpenTurn>,
    /// The turn the log shows started and not yet completed (whoever runs it).
    log_turn: Option<LogTurn>,
    pub(super) deleted: bool,
    /// Why this copy of a shared session may not be written any more (the store refused
    /// its push: another server holds the session).
    pub(super) lost: Option<String>,
}

/// A turn the log shows started and not yet completed.
#[derive(Clone, Debug, PartialEq)]
struct LogTurn {
    id: Uuid,
    /// The sequence of its `turn_started`.
    first_sequence: u64,
    /// Its approval requests (and requests for input) the log shows unresolved.
    pending_approvals: Vec<PendingRequest>,
}

/// A request of a turn waiting for a human, as the log shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PendingRequest {
    pub request_id: String,
    /// A request for input (`human_input_requested`), not an approval.
    pub input: bool,
}

impl PendingRequest {
    fn approval(request_id: &str) -> Self {
        Self {
            request_id: request_id.to_owned(),
            input: false,
        }
    }

    fn input(request_id: &str) -> Self {
        Self {
            request_id: request_id.to_owned(),
            input: true,
        }
    }
}

/// A turn left open in the log, and how its end is to be recorded.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct OpenTurn {
    pub turn_id: Uuid,
    /// Approval requests (and requests for input) of the turn that have no resolution in
    /// the log.
    pub pending_approvals: Vec<PendingRequest>,
    pub outcome: TurnOutcome,
    pub error: String,
    /// What it did and spent, as far as the log (or its runner) knows: its end records it.
    pub so_far: TurnSoFar,
}

/// The end recorded for a turn left open: what its execution status is from now on.
#[derive(Clone, Debug, PartialEq)]
pub struct ClosedTurn {
    pub turn_id: Uuid,
    pub outcome: TurnOutcome,
    pub error: String,
    pub usage: TokenUsage,
    pub first_sequence: u64,
    pub last_sequence: u64,
}

/// Why a turn found open when its log was read is closed as interrupted.
const CRASHED_TURN: &str = "the server stopped while this turn was running";

/// Why a turn another server left open is closed as interrupted by the server taking the
/// session over.
const STOPPED_ELSEWHERE: &str =
    "the server running this turn stopped (or lost the session) while it was running";

/// What replaying the log found about the turn that was running, if any.
#[derive(Default)]
pub(crate) struct ReplayState {
    pub stats: SessionStats,
    pub recent: VecDeque<Arc<Event>>,
    pub history: History,
    pub turn_ends: TurnEnds,
    /// The log replayed, which a rewind's history is read back from.
    pub log_path: Option<PathBuf>,
    /// A turn started but never completed, and its approvals still pending.
    pub open_turn: Option<OpenTurn>,
}

impl ReplayState {
    pub fn observe(&mut self, event: Event) {
        self.stats.observe(&event);
        match &event.payload {
            EventPayload::TurnStarted(started) => {
                self.open_turn = event.turn_id.map(|turn_id| OpenTurn {
                    turn_id,
                    pending_approvals: Vec::new(),
                    outcome: TurnOutcome::Interrupted,
                    error: CRASHED_TURN.into(),
                    so_far: TurnSoFar::new(&started.prompt, event.sequence),
                });
            }
            EventPayload::PermissionRequested { request_id, .. } => {
                if let Some(open) = &mut self.open_turn {
                    open.pending_approvals
                        .push(PendingRequest::approval(request_id));
                }
            }
            EventPayload::HumanInputRequested(requested) => {
                if let Some(open) = &mut self.open_turn {
                    open.pending_approvals
                        .push(PendingRequest::input(&requested.request_id));
                }
            }
            EventPayload::ApprovalResolved { request_id, .. } => {
                if let Some(open) = &mut self.open_turn {
                    open.pending_approvals
                        .retain(|r| &r.request_id != request_id);
                }
            }
            EventPayload::HumanInputAnswered(answered) => {
                if let Some(open) = &mut self.open_turn {
                    open.pending_approvals
                        .retain(|r| r.request_id != answered.request_id);
                }
            }
            EventPayload::TurnCompleted(_) => self.open_turn = None,
            _ => {}
        }
        if let Some(open) = &mut self.open_turn {
            open.so_far.observe(&event);
        }
        self.turn_ends.observe(&event);
        match (&event.payload, &self.log_path) {
            (EventPayload::SessionRewound(rewound), Some(log)) => {
                match History::until(log, rewound.to_sequence) {
                    Ok(history) => self.history = history,
                    Err(e) => {
                        tracing::warn!(session = %event.session_id, error = %e, "cannot read back the history a rewind goes back to");
                    }
                }
            }
            _ => self.history.observe(&event),
        }
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
        observer: Option<Arc<dyn EventObserver>>,
        summary_tasks: SummaryTasks,
    ) -> Result<Self> {
        let sync_file = File::open(log.path())
            .map_err(|e| RuntimeError::storage(format!("open {}", log.path().display()), e))?;
        let (published, _) = watch::channel(log.last_sequence());
        let synced_sequence = AtomicU64::new(log.last_sequence());
        let mut replay = replay;
        replay.stats.log_bytes = log.size();
        Ok(Self {
            observed: Mutex::new(log.last_sequence()),
            observer,
            synced_sequence,
            summary: SummaryWriter::new(summary_tasks),
            prepared_cell: Mutex::new(None),
            creation: None,
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
                turn_ends: replay.turn_ends,
                log_turn: replay.open_turn.as_ref().map(|open| LogTurn {
                    id: open.turn_id,
                    first_sequence: open.so_far.first_sequence,
                    pending_approvals: open.pending_approvals.clone(),
                }),
                open_turn: replay.open_turn,
                deleted: false,
                lost: None,
            }),
            remote: OnceLock::new(),
        })
    }

    /// A session whose creation is not durable yet: `creation` runs with its first sync.
    pub(super) fn owing_creation(mut self, creation: PendingCreation) -> Self {
        self.creation = Some(creation);
        self
    }

    /// Makes the session's creation durable, if it is not yet (no sync of the log).
    pub async fn sync_creation(&self) -> Result<()> {
        match &self.creation {
            Some(creation) => creation.sync().await,
            None => Ok(()),
        }
    }

    /// Whether the session's creation is durable (it was created durably, or its
    /// deferred syncs have run).
    pub fn creation_is_durable(&self) -> bool {
        self.creation
            .as_ref()
            .is_none_or(PendingCreation::is_durable)
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
            state: SessionState::Idle,
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

    /// Whether this process prepared the session's cell with the bundle of `digest`. The
    /// cell's folders belong to the server and only the server changes them (a sandboxed
    /// process sees `data/`, `cache/` and `tmp/` from inside, never the cell itself), so
    /// what was prepared once stays prepared until the session is deleted.
    pub fn cell_prepared(&self, digest: &str) -> bool {
        crate::sync::lock(&self.prepared_cell)
            .as_deref()
            .is_some_and(|d| d == digest)
    }

    /// Records that the session's cell is prepared with the bundle of `digest`.
    pub fn mark_cell_prepared(&self, digest: &str) {
        *crate::sync::lock(&self.prepared_cell) = Some(digest.to_owned());
    }

    /// Forgets that the cell was prepared: its workspace was replaced (a rewind), so the
    /// next turn prepares it again.
    pub fn forget_cell_prepared(&self) {
        *crate::sync::lock(&self.prepared_cell) = None;
    }

    /// Where turn `turn` (1 for the first) ended, if the log has that many.
    pub fn turn_end(&self, turn: u64) -> Option<TurnEndRef> {
        let index = usize::try_from(turn.checked_sub(1)?).ok()?;
        self.lock().turn_ends.0.get(index).copied()
    }

    /// The turn whose `turn_completed` has sequence `sequence`, if one has.
    pub fn turn_ending_at(&self, sequence: u64) -> Option<TurnEndRef> {
        let state = self.lock();
        let ends = &state.turn_ends.0;
        ends.binary_search_by_key(&sequence, |end| end.sequence)
            .ok()
            .map(|i| ends[i])
    }

    /// The turn number of `turn_id`, if it ended.
    pub fn turn_number(&self, turn_id: Uuid) -> Option<u64> {
        self.lock()
            .turn_ends
            .0
            .iter()
            .rev()
            .find(|end| end.turn_id == turn_id)
            .map(|end| end.turn)
    }

    /// The turn ends up to `sequence`, in log order.
    pub fn turn_ends_until(&self, sequence: u64) -> Vec<TurnEndRef> {
        self.lock()
            .turn_ends
            .0
            .iter()
            .take_while(|end| end.sequence <= sequence)
            .copied()
            .collect()
    }

    /// The events up to `to_sequence`, read from the log.
    pub(crate) fn events_until(&self, to_sequence: u64) -> Result<Vec<Event>> {
        let mut reader = self
            .lock()
            .log
            .reader_after(0)
            .map_err(RuntimeError::from)?;
        let mut events = Vec::new();
        while let Some(event) = reader.next_event().map_err(RuntimeError::from)? {
            if event.sequence > to_sequence {
                break;
            }
            events.push(event);
        }
        Ok(events)
    }

    /// The history as it was at `to_sequence` (rewinds before it included).
    pub(crate) fn history_until(&self, to_sequence: u64) -> Result<History> {
        let path = self.lock().log.path().to_path_buf();
        History::until(&path, to_sequence).map_err(RuntimeError::from)
    }

    /// Appends a `session_rewound` and puts `history` in place as one step, so no turn
    /// starts from the history of before it; durable before anyone sees it.
    pub(crate) async fn append_rewind(
        &self,
        payload: EventPayload,
        history: History,
    ) -> Result<Arc<Event>> {
        let event = {
            let mut state = self.lock();
            let event = self.write_locked(&mut state, None, payload, true)?;
            state.history = history;
            event
        };
        let synced = self.sync().await;
        self.release(event.sequence);
        synced?;
        self.publish();
        Ok(event)
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, LiveState> {
        // A panic while holding the lock leaves plain data behind; keep serving it.
        crate::sync::lock(&self.state)
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
        self.append_after(turn_id, payload, std::future::ready(()), before_publish)
            .await
    }

    /// Like [`append_then`](Self::append_then), also waiting for `alongside` (work the
    /// event's readers count on, done while the event is synced) before `before_publish`.
    pub async fn append_after(
        &self,
        turn_id: Option<Uuid>,
        payload: EventPayload,
        alongside: impl Future<Output = ()>,
        before_publish: impl FnOnce(&Event),
    ) -> Result<Arc<Event>> {
        let durable = payload.is_durability_point();
        let event = self.write(turn_id, payload, durable);
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                alongside.await;
                return Err(e);
            }
        };
        if durable {
            let (synced, ()) = tokio::join!(self.sync(), alongside);
            if synced.is_ok() {
                before_publish(&event);
            }
            self.release(event.sequence);
            synced?;
        } else {
            alongside.await;
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
        self.write_locked(&mut state, turn_id, payload, held)
    }

    fn write_locked(
        &self,
        state: &mut LiveState,
        turn_id: Option<Uuid>,
        mut payload: EventPayload,
        held: bool,
    ) -> Result<Arc<Event>> {
        self.prepare(&mut payload);
        if let Some(reason) = &state.lost {
            return Err(RuntimeError::FailedPrecondition(reason.clone()));
        }
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
        self.record_locked(state, event, held, true)
    }

    /// What every event passes before it is written or streamed.
    fn prepare(&self, payload: &mut EventPayload) {
        crate::event_bounds::bound(payload);
        if let EventPayload::TurnStarted(started) = payload
            && started.context.model.mask_secrets()
        {
            tracing::warn!(session = %self.record.id, "masked a credential in the model config before writing the event");
        }
    }

    /// Appends `event`, whose sequence is the log's next, and updates what follows the log.
    /// `observed`: the runtime's observer counts it (not for events another server wrote,
    /// which it counted).
    fn record_locked(
        &self,
        state: &mut LiveState,
        event: Event,
        held: bool,
        observed: bool,
    ) -> Result<Arc<Event>> {
        state.log.append(&event).map_err(RuntimeError::from)?;
        match (&event.payload, &mut state.log_turn) {
            (EventPayload::TurnStarted(_), _) => {
                state.log_turn = event.turn_id.map(|id| LogTurn {
                    id,
                    first_sequence: event.sequence,
                    pending_approvals: Vec::new(),
                });
            }
            (EventPayload::TurnCompleted(_), _) => {
                state.log_turn = None;
                // Another server recorded the end of the turn this copy found open.
                if state.open_turn.as_ref().map(|t| t.turn_id) == event.turn_id {
                    state.open_turn = None;
                }
            }
            (EventPayload::PermissionRequested { request_id, .. }, Some(turn)) => {
                turn.pending_approvals
                    .push(PendingRequest::approval(request_id));
            }
            (EventPayload::HumanInputRequested(requested), Some(turn)) => {
                turn.pending_approvals
                    .push(PendingRequest::input(&requested.request_id));
            }
            (EventPayload::ApprovalResolved { request_id, .. }, Some(turn)) => {
                turn.pending_approvals
                    .retain(|r| &r.request_id != request_id);
            }
            (EventPayload::HumanInputAnswered(answered), Some(turn)) => {
                turn.pending_approvals
                    .retain(|r| r.request_id != answered.request_id);
            }
            _ => {}
        }
        if observed && let Some(observer) = &self.observer {
            observer.appended(&event);
        }
        if let Some(remote) = self.remote.get()
            && observed
        {
            remote.written.notify_one();
        }
        if event.payload.is_durability_point() {
            state.unsynced.push_back((event.sequence, held));
        }
        state.stats.observe(&event);
        state.stats.log_bytes = state.log.size();
        state.history.observe(&event);
        state.turn_ends.observe(&event);
        let event = Arc::new(event);
        if state.recent.len() == RECENT_EVENTS {
            state.recent.pop_front();
        }
        state.recent.push_back(event.clone());
        Ok(event)
    }

    /// Appends events made elsewhere as sequences `expected_next`, `expected_next + 1`, …,
    /// only if that is where the log is; subscribers see them as they see any event (a
    /// durability point once it is synced). A failure midway keeps the events before it.
    pub(crate) fn append_batch(
        &self,
        expected_next: u64,
        events: Vec<Event>,
    ) -> std::result::Result<u64, crate::store::StoreError> {
        let last = {
            let mut state = self.lock();
            if state.deleted {
                return Err(RuntimeError::not_found("session", self.record.id.to_string()).into());
            }
            let actual = state.log.last_sequence() + 1;
            if actual != expected_next {
                return Err(crate::store::StoreError::SequenceConflict {
                    session_id: self.record.id,
                    expected: expected_next,
                    actual,
                });
            }
            for mut event in events {
                self.prepare(&mut event.payload);
                event.session_id = self.record.id;
                event.sequence = state.log.last_sequence() + 1;
                self.record_locked(&mut state, event, false, true)?;
            }
            state.log.last_sequence()
        };
        self.publish();
        Ok(last)
    }

    /// Up to `limit` events after `after_sequence`, read from the log.
    pub(crate) fn read_after(&self, after_sequence: u64, limit: usize) -> Result<Vec<Event>> {
        let mut reader = self
            .lock()
            .log
            .reader_after(after_sequence)
            .map_err(RuntimeError::from)?;
        let mut events = Vec::new();
        while events.len() < limit {
            match reader.next_event().map_err(RuntimeError::from)? {
                Some(event) => events.push(event),
                None => break,
            }
        }
        Ok(events)
    }

    /// The last sequence written to the log (synced or not).
    pub(crate) fn last_sequence(&self) -> u64 {
        self.lock().log.last_sequence()
    }

    /// [`sync`](Self::sync), then lets subscribers see what it made durable.
    pub(crate) async fn sync_and_publish(&self) -> Result<()> {
        let synced = self.sync().await;
        self.publish();
        synced
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
        if let Some(observer) = &self.observer
            && observer.follows_published()
        {
            self.hand_over(observer.as_ref(), visible);
        }
    }

    /// Hands the observer every event after the last one it got, up to `sequence`, from
    /// the ring.
    fn hand_over(&self, observer: &dyn EventObserver, sequence: u64) {
        let mut observed = crate::sync::lock(&self.observed);
        if sequence <= *observed {
            return;
        }
        let state = self.lock();
        let first = state.recent.front().map_or(sequence + 1, |e| e.sequence);
        if first > *observed + 1 {
            observer.missed(first.min(sequence + 1) - *observed - 1);
        }
        let skip = (*observed + 1).saturating_sub(first) as usize;
        for event in state
            .recent
            .iter()
            .skip(skip)
            .take_while(|e| e.sequence <= sequence)
        {
            observer.published(event);
        }
        *observed = sequence;
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
        if let Some(creation) = &self.creation {
            creation.sync_blocking()?;
        }
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
    ///
    /// A session created without syncs (see [`SessionHandle::sync_creation`]) has its
    /// creation made durable together with this sync.
    pub async fn sync(&self) -> Result<()> {
        let target = self.lock().log.last_sequence();
        if let Some(remote) = self.remote.get() {
            // The store is what is durable; this log is its copy.
            let (pushed, creation) = tokio::join!(self.push(remote), self.sync_creation());
            pushed?;
            creation?;
            if remote.stored() < target {
                return Err(self.lost_error());
            }
            self.synced(target);
            return Ok(());
        }
        let log = async {
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
            Ok::<(), RuntimeError>(())
        };
        let (log, creation) = tokio::join!(log, self.sync_creation());
        log?;
        creation?;
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

    /// Records the end of the turn left open in the log, if any: its pending approvals
    /// are resolved (denied) and the turn completed with the outcome its
    /// [`OpenTurn`] says, with the tokens, model calls and completed steps it shows. All of
    /// it is written under one lock, so no other event slips in between; what could not be
    /// written stays open for the next attempt. Returns the turn closed.
    pub(crate) async fn close_open_turn(&self) -> Result<Option<ClosedTurn>> {
        let mut wrote = false;
        let closed = self.write_open_turn_end(&mut wrote);
        if wrote {
            if closed.is_ok() {
                self.sync().await?;
            }
            self.publish();
        }
        closed
    }

    /// Writes what [`close_open_turn`](Self::close_open_turn) records; `wrote` tells
    /// whether any of it reached the log, even when the rest failed.
    fn write_open_turn_end(&self, wrote: &mut bool) -> Result<Option<ClosedTurn>> {
        let mut state = self.lock();
        let Some(open) = state.open_turn.clone() else {
            return Ok(None);
        };
        for pending in &open.pending_approvals {
            let request_id = &pending.request_id;
            let (resolution, reason) = match open.outcome {
                TurnOutcome::Interrupted => (
                    ApprovalResolution::Interrupted,
                    "the server stopped while this approval was pending",
                ),
                _ => (
                    ApprovalResolution::Cancelled,
                    "the turn ended while this approval was pending",
                ),
            };
            let resolved = if pending.input {
                EventPayload::HumanInputAnswered(HumanInputAnswered {
                    request_id: request_id.clone(),
                    action: InputAction::Cancel,
                    resolution,
                    answer: None,
                    reason: reason.replace("approval", "request for input"),
                })
            } else {
                EventPayload::ApprovalResolved {
                    request_id: request_id.clone(),
                    decision: ApprovalDecision::Deny,
                    resolution,
                    reason: reason.into(),
                }
            };
            self.write_locked(&mut state, Some(open.turn_id), resolved, false)?;
            *wrote = true;
            if let Some(left) = &mut state.open_turn {
                left.pending_approvals
                    .retain(|r| &r.request_id != request_id);
            }
        }
        let completed = EventPayload::TurnCompleted(TurnCompleted {
            outcome: open.outcome,
            response: String::new(),
            error: open.error.clone(),
            usage: open.so_far.usage,
            messages: open.so_far.messages(),
            model_calls: open.so_far.model_calls,
            reason: String::new(),
        });
        let end = self.write_locked(&mut state, Some(open.turn_id), completed, false)?;
        *wrote = true;
        state.open_turn = None;
        Ok(Some(ClosedTurn {
            turn_id: open.turn_id,
            outcome: open.outcome,
            error: open.error,
            usage: open.so_far.usage,
            first_sequence: open.so_far.first_sequence,
            last_sequence: end.sequence,
        }))
    }

    /// Gives up on a turn whose end could not be written (a full or read-only disk): if
    /// the log shows it open, it is closed with `outcome`, `error` and what it `spent` (and
    /// its approval requests the log shows unresolved, denied) before the session's next
    /// turn. Returns whether the log shows it open.
    pub(crate) fn abandon_turn(
        &self,
        turn_id: Uuid,
        outcome: TurnOutcome,
        error: String,
        spent: (TokenUsage, u32),
    ) -> bool {
        let mut state = self.lock();
        let (pending_approvals, first_sequence) = match &state.log_turn {
            Some(open) if open.id == turn_id => {
                (open.pending_approvals.clone(), open.first_sequence)
            }
            _ => return false,
        };
        state.open_turn = Some(OpenTurn {
            turn_id,
            pending_approvals,
            outcome,
            error,
            so_far: TurnSoFar::spent(first_sequence, spent.0, spent.1),
        });
        true
    }

    /// The turn the log shows running (its id and the sequence of its start) and the ids
    /// of its requests the log shows waiting for a person, oldest first; `None` when the
    /// log shows no turn running.
    pub(crate) fn waiting_requests(&self) -> Option<(Uuid, u64, Vec<String>)> {
        let state = self.lock();
        state.log_turn.as_ref().map(|turn| {
            let ids = turn
                .pending_approvals
                .iter()
                .map(|r| r.request_id.clone())
                .collect();
            (turn.id, turn.first_sequence, ids)
        })
    }

    /// Whether a turn is left open in the log (see [`SessionHandle::close_open_turn`]).
    pub(crate) fn has_open_turn(&self) -> bool {
        self.lock().open_turn.is_some()
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
            counted: None,
        }
    }
}

/// The handle as the local copy of a session kept in a shared store (see
/// [`super::remote`]).
impl SessionHandle {
    /// Makes this handle the copy of the session's log in `logs`, which holds it up to
    /// `stored`: events written from now on are pushed there, by a task that lives as long
    /// as the handle.
    pub(super) fn attach_remote(
        self: &Arc<Self>,
        store: &remote::Remote,
        stored: u64,
        elsewhere: Option<remote::WrittenElsewhere>,
    ) {
        let remote = Arc::new(RemoteLog::new(
            store.logs.clone(),
            stored,
            store.outage_wait,
            elsewhere,
        ));
        if self.remote.set(remote.clone()).is_err() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let handle: Weak<Self> = Arc::downgrade(self);
        runtime.spawn(async move {
            loop {
                remote.written.notified().await;
                let Some(handle) = handle.upgrade() else {
                    return;
                };
                if let Err(e) = handle.push(&remote).await {
                    tracing::warn!(session = %handle.id(), error = %e, "cannot push the session's events to the store");
                }
                if handle.lock().deleted {
                    return;
                }
            }
        });
    }

    /// The id of the log's last event (`None` for an empty log).
    pub(super) fn last_event_id(&self) -> Option<Uuid> {
        self.lock().recent.back().map(|e| e.id)
    }

    /// Whether this handle is the copy of a session in a shared store.
    pub(crate) fn is_remote(&self) -> bool {
        self.remote.get().is_some()
    }

    /// Pushes the events written here that the store does not hold yet, in batches, in
    /// order. A refusal loses the session for this copy (see [`super::remote`]).
    async fn push(&self, remote: &RemoteLog) -> Result<()> {
        let _turn = remote.turn.lock().await;
        loop {
            let stored = remote.stored();
            let batch = self.unpushed_after(stored)?;
            let Some(last) = batch.last().map(|e| e.sequence) else {
                return Ok(());
            };
            let stored_now = remote::store_batch(
                remote.logs.as_ref(),
                self.record.id,
                stored + 1,
                batch,
                remote.outage_wait,
            )
            .await;
            match stored_now {
                Ok(written) => remote.set_stored(written.max(last)),
                Err(crate::store::StoreError::Unavailable(message)) => {
                    return Err(RuntimeError::StoreUnavailable(message));
                }
                Err(e) => {
                    self.lose(remote::lost_reason(self.record.id, &e));
                    return Err(self.lost_error());
                }
            }
        }
    }

    /// Up to a batch of the events after `after`, from the ring when it holds them.
    fn unpushed_after(&self, after: u64) -> Result<Vec<Event>> {
        {
            let state = self.lock();
            if state.log.last_sequence() <= after {
                return Ok(Vec::new());
            }
            if state
                .recent
                .front()
                .is_some_and(|e| e.sequence <= after + 1)
            {
                return Ok(state
                    .recent
                    .iter()
                    .filter(|e| e.sequence > after)
                    .take(remote::BATCH)
                    .map(|e| Event::clone(e))
                    .collect());
            }
        }
        self.read_after(after, remote::BATCH)
    }

    /// Reads into this copy the events the store holds after it (written by another
    /// server). A copy holding events the store does not (never pushed) while the store
    /// moved on has lost the session.
    pub(crate) async fn catch_up(&self) -> Result<()> {
        let Some(remote) = self.remote.get() else {
            return Ok(());
        };
        let _turn = remote.turn.lock().await;
        loop {
            let stored = remote.stored();
            let rows = remote::read_batch(
                remote.logs.as_ref(),
                self.record.id,
                stored,
                remote.outage_wait,
            )
            .await
            .map_err(RuntimeError::from)?;
            let Some(last) = rows.last().map(|e| e.sequence) else {
                return Ok(());
            };
            let (local, deleted) = {
                let state = self.lock();
                (state.log.last_sequence(), state.deleted)
            };
            if deleted {
                return Ok(());
            }
            if local != stored {
                self.lose(format!(
                    "session {}: another server wrote to it while this server's events {}..={local} were not stored; retry, and the session is read again from the store",
                    self.record.id,
                    stored + 1
                ));
                return Err(self.lost_error());
            }
            self.ingest(rows)?;
            remote.set_stored(last);
            if let Some(elsewhere) = &remote.elsewhere {
                elsewhere(self.record.id);
            }
        }
    }

    /// Appends events another server wrote (sequenced already, next in this log); the
    /// runtime's observer does not count them again.
    fn ingest(&self, events: Vec<Event>) -> Result<()> {
        // What this server published is handed over before what it did not write.
        self.publish();
        {
            let mut state = self.lock();
            for event in events {
                if event.sequence != state.log.last_sequence() + 1 {
                    return Err(RuntimeError::storage(
                        format!("session {}", self.record.id),
                        std::io::Error::new(
                            std::io::ErrorKind::InvalidData,
                            format!(
                                "the store's event {} does not follow this copy's {}",
                                event.sequence,
                                state.log.last_sequence()
                            ),
                        ),
                    ));
                }
                self.record_locked(&mut state, event, false, false)?;
            }
        }
        let visible = self.lock().log.last_sequence();
        *crate::sync::lock(&self.observed) = visible;
        self.synced(visible);
        self.publish();
        Ok(())
    }

    /// The turn the log shows started and not ended becomes a turn to close as
    /// interrupted: this server now holds the session (it claimed a turn of it), so the
    /// server that ran that turn stopped.
    pub(crate) fn adopt_abandoned_turn(&self) {
        let mut state = self.lock();
        if state.open_turn.is_some() {
            return;
        }
        if let Some(turn) = state.log_turn.clone() {
            state.open_turn = Some(OpenTurn {
                turn_id: turn.id,
                pending_approvals: turn.pending_approvals,
                outcome: TurnOutcome::Interrupted,
                error: STOPPED_ELSEWHERE.into(),
                so_far: TurnSoFar::spent(turn.first_sequence, TokenUsage::default(), 0),
            });
        }
    }

    /// This copy may not be written any more; its subscribers end, and the next use of
    /// the session reads it again from the store.
    pub(crate) fn lose(&self, reason: String) {
        tracing::warn!(session = %self.record.id, reason = %reason, "lost the session to another server");
        let mut state = self.lock();
        if state.lost.is_none() {
            state.lost = Some(reason);
        }
        state.deleted = true;
        drop(state);
        self.published.send_modify(|_| {});
    }

    /// Whether this copy lost its session (or the session was deleted).
    pub(crate) fn is_gone(&self) -> bool {
        self.lock().deleted
    }

    fn lost_error(&self) -> RuntimeError {
        let state = self.lock();
        match &state.lost {
            Some(reason) => RuntimeError::FailedPrecondition(reason.clone()),
            None => RuntimeError::not_found("session", self.record.id.to_string()),
        }
    }
}
