//! Sessions kept in a store several servers share (a database), with this process's
//! session folders as its local copy.
//!
//! The store holds the truth: each session's record and its log as rows. A server keeps
//! a folder per session it has touched, laid out as the file store's, and serves from it
//! as the file store does (the ring, replay, history, the log file a subscriber far behind
//! reads). The copy follows the store:
//!
//! - **Writing.** Events a server appends are written to its copy at once and pushed to
//!   the store in order, a batch at a time, by one push per session at a time
//!   ([`RemoteLog`]): a durability point is durable once the store holds it (the copy's
//!   file is not synced: it is a cache). The store's appends are fenced: a push the store
//!   refuses (another server holds the session, or wrote first) loses the session for
//!   this copy: its appends fail from then on and the next use reads it again.
//! - **Following.** The store's wake-ups ([`crate::store::EventLogs::wake_ups`]) say which
//!   logs grew; a session open here that did not write them reads the new rows into its
//!   copy, where subscribers see them as they see any event. A turn starts only after its
//!   session has read what the store holds.
//! - **Opening.** A session is opened from its copy, checked against the store: its last
//!   event must be the store's event of that sequence (same id), and the store's later
//!   events are read in; a copy the store does not confirm (events a fenced or crashed
//!   server never got stored) is thrown away and read again from the rows.
//!
//! A store that cannot be reached is waited for, up to
//! [`crate::RuntimeConfig::store_outage_wait`]; an append whose
//! answer was lost in an outage is recognised when retried (the store then holds the same
//! events, by id), so nothing is doubled or lost.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tokio::sync::broadcast::error::RecvError;
use uuid::Uuid;

use super::handle::SessionHandle;
use super::record::SessionRecord;
use super::store::{LoadError, SessionStore, write_copy};
use crate::error::{Result, RuntimeError};
use crate::events::Event;
use crate::store::{EventLogs, LogWake, SessionRecords, StoreError, StoreResult};

/// Events pushed or read per round trip.
pub(crate) const BATCH: usize = 512;

/// The shared store behind a [`super::SessionStore`] that is its local copy.
#[derive(Clone)]
pub struct Remote {
    pub records: Arc<dyn SessionRecords>,
    pub logs: Arc<dyn EventLogs>,
    /// How long writes and reads wait for the store when it cannot be reached.
    pub outage_wait: Duration,
}

/// What an open session knows of its log in the shared store.
pub(crate) struct RemoteLog {
    pub(super) logs: Arc<dyn EventLogs>,
    /// The last sequence the store holds, as far as this copy knows: events after it
    /// are this server's, not pushed yet.
    pub(super) stored: AtomicU64,
    /// One push or read-in at a time, so batches reach the store in order.
    pub(super) turn: tokio::sync::Mutex<()>,
    /// Wakes the session's pusher when an event is written.
    pub(super) written: Notify,
    /// How long pushes and reads wait for a store that cannot be reached.
    pub(super) outage_wait: Duration,
    /// Told when this copy reads in events another server wrote: that server runs the
    /// session's turns now (see [`SessionStore::on_written_elsewhere`]).
    pub(super) elsewhere: Option<WrittenElsewhere>,
}

/// What a store calls when a session open here takes events another server wrote.
pub type WrittenElsewhere = Arc<dyn Fn(Uuid) + Send + Sync>;

impl RemoteLog {
    pub(super) fn new(
        logs: Arc<dyn EventLogs>,
        stored: u64,
        outage_wait: Duration,
        elsewhere: Option<WrittenElsewhere>,
    ) -> Self {
        Self {
            outage_wait,
            logs,
            stored: AtomicU64::new(stored),
            turn: tokio::sync::Mutex::new(()),
            written: Notify::new(),
            elsewhere,
        }
    }

    pub(super) fn stored(&self) -> u64 {
        self.stored.load(Ordering::Acquire)
    }

    pub(super) fn set_stored(&self, last: u64) {
        self.stored.fetch_max(last, Ordering::AcqRel);
    }
}

/// Appends `events` at `from` in the store, waiting out an outage up to `wait`. An append retried after an outage that finds the log already moved
/// checks whether the store holds these very events (an earlier try committed, its answer
/// lost): then they are stored, not refused.
pub(super) async fn store_batch(
    logs: &dyn EventLogs,
    session_id: Uuid,
    from: u64,
    events: Vec<Event>,
    wait: Duration,
) -> StoreResult<u64> {
    let count = events.len() as u64;
    let ids: Vec<Uuid> = events.iter().map(|e| e.id).collect();
    let deadline = Instant::now() + wait;
    let mut delay = Duration::from_millis(50);
    let mut retried = false;
    loop {
        match logs.append_events(session_id, from, events.clone()).await {
            Ok(last) => return Ok(last),
            Err(StoreError::Unavailable(message)) => {
                if Instant::now() + delay > deadline {
                    return Err(StoreError::Unavailable(message));
                }
                tracing::warn!(session = %session_id, error = %message, "the store is unavailable; the session's events wait for it");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(2));
                retried = true;
            }
            Err(conflict @ StoreError::SequenceConflict { .. }) if retried => {
                let held = logs
                    .read_events_after(session_id, from - 1, ids.len())
                    .await?;
                let ours =
                    held.len() == ids.len() && held.iter().zip(&ids).all(|(e, id)| e.id == *id);
                return if ours {
                    Ok(from + count - 1)
                } else {
                    Err(conflict)
                };
            }
            Err(e) => return Err(e),
        }
    }
}

/// Reads the store's events after `after`, waiting out an outage like [`store_batch`].
pub(super) async fn read_batch(
    logs: &dyn EventLogs,
    session_id: Uuid,
    after: u64,
    wait: Duration,
) -> StoreResult<Vec<Event>> {
    let deadline = Instant::now() + wait;
    let mut delay = Duration::from_millis(50);
    loop {
        match logs.read_events_after(session_id, after, BATCH).await {
            Err(StoreError::Unavailable(message)) if Instant::now() + delay <= deadline => {
                tracing::warn!(session = %session_id, error = %message, "the store is unavailable; reading the session waits for it");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(2));
            }
            other => return other,
        }
    }
}

/// Why a copy lost its session: the store refused its push.
pub(super) fn lost_reason(session_id: Uuid, e: &StoreError) -> String {
    format!(
        "this server no longer holds session {session_id} ({e}); retry, and the session is read again from the store"
    )
}

impl Remote {
    /// Creates the session in the store, with `events` as its log (a fork's), from a
    /// blocking thread (the file store's creation runs on one).
    pub(super) fn create_blocking(&self, record: SessionRecord, events: Vec<Event>) -> Result<()> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            RuntimeError::FailedPrecondition(
                "a session of a shared store is created on the server's runtime".into(),
            )
        })?;
        runtime.block_on(self.create(record, events))
    }

    async fn create(&self, record: SessionRecord, events: Vec<Event>) -> Result<()> {
        let id = record.id;
        self.records.create_session(record).await?;
        for (i, chunk) in events.chunks(BATCH).enumerate() {
            let from = (i * BATCH) as u64 + 1;
            if let Err(e) = store_batch(
                self.logs.as_ref(),
                id,
                from,
                chunk.to_vec(),
                self.outage_wait,
            )
            .await
            {
                // All or nothing: a fork whose log could not be stored is not left behind.
                let _ = self.records.delete_session(id).await;
                return Err(e.into());
            }
        }
        Ok(())
    }
}

impl SessionStore {
    /// Calls `elsewhere` with a session's id whenever a session open here reads in events
    /// another server wrote: that server runs the session's turns now, and what this one
    /// keeps running for the session (its MCP servers) should stop. Set once.
    pub(crate) fn on_written_elsewhere(&self, elsewhere: WrittenElsewhere) {
        let _ = self.elsewhere.set(elsewhere);
    }

    /// Makes this store the local copy of `remote`'s sessions (before any is opened).
    pub(crate) fn shared(self, remote: Remote) -> Self {
        let _ = self.remote.set(remote);
        self
    }

    /// Opens the session from this server's copy, checked against the store and brought
    /// up to it; a copy the store does not confirm is read again from the rows.
    pub(super) async fn open_copy(
        &self,
        remote: &Remote,
        id: Uuid,
    ) -> std::result::Result<Arc<SessionHandle>, LoadError> {
        let dir = self.dir_of(id);
        let Some(info) = remote
            .records
            .session(id)
            .await
            .map_err(RuntimeError::from)?
        else {
            // Deleted through another server (or never created): the copy goes too.
            if dir.exists() {
                remove_copy(dir).await;
            }
            return Err(LoadError::Missing);
        };
        let stored = info.stats.last_sequence;
        let local = match self.load_local(id).await {
            Ok(handle) => Some(handle),
            Err(LoadError::Missing) => None,
            Err(LoadError::Unreadable(reason)) => {
                tracing::warn!(session = %id, reason = %reason, "this server's copy of the session is unreadable; reading it again from the store");
                None
            }
            Err(e) => return Err(e),
        };
        let confirmed = match &local {
            Some(handle) => self.confirms(remote, handle, stored).await?,
            None => false,
        };
        let handle = match (local, confirmed) {
            (Some(handle), true) => handle,
            (local, _) => {
                if let Some(handle) = local {
                    tracing::info!(session = %id, "this server's copy of the session is not the store's; reading it again from the store");
                    handle.mark_deleted();
                }
                self.copy_from_store(remote, info.record).await?;
                self.load_local(id).await?
            }
        };
        let last = handle.last_sequence();
        handle.attach_remote(remote, last, self.elsewhere.get().cloned());
        handle.catch_up().await?;
        Ok(handle)
    }

    /// Whether the store holds the copy's log as it is (its last event, by id), so that
    /// only the store's later events are missing from it.
    async fn confirms(
        &self,
        remote: &Remote,
        handle: &SessionHandle,
        stored: u64,
    ) -> std::result::Result<bool, LoadError> {
        let last = handle.last_sequence();
        if last > stored {
            return Ok(false);
        }
        let Some(event_id) = handle.last_event_id() else {
            return Ok(true);
        };
        let held = remote
            .logs
            .read_events_after(handle.id(), last - 1, 1)
            .await
            .map_err(RuntimeError::from)?;
        Ok(held.first().is_some_and(|e| e.id == event_id))
    }

    /// Writes the session's folder from the store: its record and every event, in place
    /// of whatever copy was there (built beside it and renamed over it).
    async fn copy_from_store(&self, remote: &Remote, record: SessionRecord) -> Result<()> {
        let id = record.id;
        let mut events = Vec::new();
        loop {
            let after = events.last().map_or(0, |e: &Event| e.sequence);
            let batch = read_batch(remote.logs.as_ref(), id, after, remote.outage_wait)
                .await
                .map_err(RuntimeError::from)?;
            if batch.is_empty() {
                break;
            }
            events.extend(batch);
        }
        let root = self.root().to_path_buf();
        tokio::task::spawn_blocking(move || write_copy(&root, &record, &events))
            .await
            .map_err(|e| RuntimeError::storage("copy session", std::io::Error::other(e)))?
    }

    /// Brings an open session up to what the store holds (before this server runs a turn
    /// on it, which the store's wake-ups alone do not promise).
    pub async fn refresh(&self, handle: &SessionHandle) -> Result<()> {
        handle.catch_up().await
    }

    /// Follows the store's wake-ups for as long as the store lives: sessions open here
    /// read what other servers wrote to them; sessions deleted elsewhere are dropped.
    pub(crate) fn follow(self: &Arc<Self>) {
        let Some(mut wakes) = self.remote.get().and_then(|r| r.logs.wake_ups()) else {
            return;
        };
        let store = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let wake = wakes.recv().await;
                let Some(store) = store.upgrade() else {
                    return;
                };
                match wake {
                    Ok(LogWake::Grew {
                        session_id,
                        last_sequence,
                    }) => {
                        if let Some(handle) = store.open_handle(session_id)
                            && handle.last_sequence() < last_sequence
                        {
                            read_in(&handle).await;
                        }
                    }
                    Ok(LogWake::Deleted { session_id }) => {
                        let open = store.lock_open().remove(&session_id);
                        if let Some(handle) = open.as_ref().and_then(|cell| cell.get()) {
                            handle.mark_deleted();
                        }
                        let dir = store.dir_of(session_id);
                        if dir.exists() {
                            remove_copy(dir).await;
                        }
                    }
                    Ok(LogWake::Resync) | Err(RecvError::Lagged(_)) => {
                        for handle in store.open_handles() {
                            read_in(&handle).await;
                        }
                    }
                    Err(RecvError::Closed) => return,
                }
            }
        });
    }

    /// The session's handle, if it is open here.
    fn open_handle(&self, id: Uuid) -> Option<Arc<SessionHandle>> {
        self.lock_open()
            .get(&id)
            .and_then(|cell| cell.get().cloned())
    }

    /// The sessions open here.
    pub(crate) fn open_handles(&self) -> Vec<Arc<SessionHandle>> {
        self.lock_open()
            .values()
            .filter_map(|cell| cell.get().cloned())
            .collect()
    }
}

/// Reads what the store holds beyond a session's copy; a copy that lost its session is
/// dropped from the open sessions by its next use.
async fn read_in(handle: &SessionHandle) {
    if let Err(e) = handle.catch_up().await {
        tracing::warn!(session = %handle.id(), error = %e, "cannot read the session's new events from the store");
    }
}

/// Removes a session's folder (a copy the store no longer has) off the async workers.
async fn remove_copy(dir: PathBuf) {
    let removed = tokio::task::spawn_blocking(move || std::fs::remove_dir_all(&dir)).await;
    if let Ok(Err(e)) = removed
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(error = %e, "cannot remove a deleted session's copy");
    }
}
