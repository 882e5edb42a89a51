//! Sessions on disk: `<home>/sessions/<id>/{session.json, events.jsonl, summary.json}`.
//!
//! Startup reads nothing but a small journal (`sessions/.open-turns`, see [`Journal`])
//! of the sessions with a turn in flight. Those sessions are opened (and so repaired) at startup;
//! every other session is opened, and repaired if needed, the first time it is used. An
//! unreadable session is moved to `<home>/quarantine/<id>/` with a `reason.txt`, reported,
//! and never stops the server.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use tokio::sync::OnceCell;
use uuid::Uuid;

use super::creation::{PendingCreation, is_unfinished_creation};
use super::handle::{ReplayState, SessionHandle};
use super::journal::Journal;
use super::log::{EventLog, LogError, scan_from};
use super::observer::EventObserver;
use super::record::{
    LOG_FILE, RECORD_FILE, RecordError, RecordFile, SUMMARY_FILE, SessionInfo, SessionRecord,
    SessionState, SessionStats, newer_format, parse_record, write_json_atomic,
};
use super::remote::Remote;
use super::summary::SummaryTasks;
use crate::error::{Result, RuntimeError};
use crate::events::now_ms;

const STAGING_PREFIX: &str = ".staging-";
const REASON_FILE: &str = "reason.txt";

/// A session that could not be read and was moved aside.
#[derive(Clone, Debug, PartialEq)]
pub struct QuarantinedSession {
    pub session_id: String,
    pub reason: String,
    pub quarantined_at_ms: u64,
}

pub struct SessionStore {
    root: PathBuf,
    quarantine_root: PathBuf,
    open: Arc<OpenSessions>,
    quarantined: Mutex<Vec<QuarantinedSession>>,
    /// Handed to every session opened, to see its events; set once.
    pub(super) observer: OnceLock<Arc<dyn EventObserver>>,
    /// Sessions' background summary writes.
    pub(super) summary_writes: SummaryTasks,
    journal: Journal,
    /// The store several servers share, when these folders are this server's copy of it
    /// (see [`super::remote`]); set once, before any session is opened.
    pub(super) remote: OnceLock<Remote>,
    /// See [`SessionStore::on_written_elsewhere`].
    pub(super) elsewhere: OnceLock<super::remote::WrittenElsewhere>,
}

impl SessionStore {
    /// Opens the store: creates its folders, clears half-created sessions, and lists the
    /// quarantine. Reads no session.
    pub fn open(root: PathBuf, quarantine_root: PathBuf) -> Result<Self> {
        for dir in [&root, &quarantine_root] {
            std::fs::create_dir_all(dir)
                .map_err(|e| RuntimeError::storage(format!("create {}", dir.display()), e))?;
        }
        for entry in read_dir(&root)? {
            let name = entry.file_name();
            if name.to_string_lossy().starts_with(STAGING_PREFIX) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        let mut quarantined = Vec::new();
        for entry in read_dir(&quarantine_root)? {
            let reason = std::fs::read_to_string(entry.path().join(REASON_FILE))
                .unwrap_or_else(|_| "unknown (reason file missing)".into());
            let at = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_millis() as u64);
            quarantined.push(QuarantinedSession {
                session_id: entry.file_name().to_string_lossy().into_owned(),
                reason: reason.trim().to_string(),
                quarantined_at_ms: at,
            });
        }
        let open = Arc::new(OpenSessions {
            map: Mutex::new(HashMap::new()),
            keep: AtomicUsize::new(usize::MAX),
        });
        let released = Arc::downgrade(&open);
        let summary_writes = SummaryTasks {
            released: Some(Arc::new(move || {
                if let Some(open) = released.upgrade() {
                    open.evict_idle(open.keep.load(Ordering::Relaxed));
                }
            })),
            ..SummaryTasks::default()
        };
        Ok(Self {
            journal: Journal::open(&root)?,
            root,
            quarantine_root,
            open,
            quarantined: Mutex::new(quarantined),
            observer: OnceLock::new(),
            summary_writes,
            remote: OnceLock::new(),
            elsewhere: OnceLock::new(),
        })
    }

    /// Keeps at most `sessions` idle sessions open in memory, however they were opened
    /// (a turn, a read, a subscription).
    pub fn with_open_cache(self, sessions: usize) -> Self {
        self.open.keep.store(sessions, Ordering::Relaxed);
        self
    }

    /// Lets `observer` see the events of every session this store opens.
    pub fn with_observer(self, observer: Arc<dyn EventObserver>) -> Self {
        let _ = self.observer.set(observer);
        self
    }

    /// Lets `observer` see the events of every session opened from now on. Fails when an
    /// observer was set already: the store then serves another runtime.
    pub(crate) fn set_observer(&self, observer: Arc<dyn EventObserver>) -> Result<()> {
        self.observer.set(observer).map_err(|_| {
            RuntimeError::FailedPrecondition(format!(
                "the session store at {} already serves a runtime",
                self.root.display()
            ))
        })
    }

    /// Sessions the open-turn journal names: they were running a turn when the server
    /// last stopped.
    pub fn journaled_open_sessions(&self) -> Vec<Uuid> {
        self.journal.open_sessions()
    }

    /// Records that a turn of this session is in flight, before it starts.
    pub fn journal_turn_start(&self, id: Uuid) -> Result<()> {
        self.journal.start(id)
    }

    /// Records that the turn's end is durable.
    pub fn journal_turn_end(&self, id: Uuid) {
        if let Err(e) = self.journal.end(id) {
            tracing::warn!(session = %id, error = %e, "cannot journal turn end");
        }
    }

    pub fn quarantined(&self) -> Vec<QuarantinedSession> {
        crate::sync::lock(&self.quarantined).clone()
    }

    pub(super) fn root(&self) -> &Path {
        &self.root
    }

    pub(super) fn dir_of(&self, id: Uuid) -> PathBuf {
        self.root.join(id.to_string())
    }

    /// Persists a new session: written in a staging folder, then renamed into place, so
    /// a crash never leaves half a session.
    pub fn create(&self, record: SessionRecord) -> Result<Arc<SessionHandle>> {
        self.write_new(record, true)
    }

    /// Like [`create`](Self::create), without waiting for a sync: the session's first
    /// sync (its first turn's end) makes the creation durable with it, or a call of
    /// [`SessionHandle::sync_creation`] sooner (see [`super::creation`]).
    pub fn create_deferred(&self, record: SessionRecord) -> Result<Arc<SessionHandle>> {
        self.write_new(record, false)
    }

    fn write_new(&self, mut record: SessionRecord, durable: bool) -> Result<Arc<SessionHandle>> {
        if record.model.mask_secrets() {
            tracing::warn!(session = %record.id, "masked a credential in the model config before writing the session");
        }
        // A shared store holds it first: the folder written below is this server's copy.
        let durable = match self.remote.get() {
            Some(remote) => {
                remote.create_blocking(record.clone(), Vec::new())?;
                false
            }
            None => durable,
        };
        let staging = self.root.join(format!("{STAGING_PREFIX}{}", record.id));
        let io = |what: &str, e| RuntimeError::storage(format!("{what} {}", staging.display()), e);
        std::fs::create_dir(&staging).map_err(|e| io("create", e))?;
        let result = (|| {
            write_json_atomic(
                &staging.join(RECORD_FILE),
                &RecordFile::new(&record),
                durable,
            )
            .map_err(|e| io("write record in", e))?;
            let log = EventLog::create(&staging.join(LOG_FILE)).map_err(RuntimeError::from)?;
            if durable {
                log.sync().map_err(RuntimeError::from)?;
            }
            drop(log);
            let dir = self.dir_of(record.id);
            std::fs::rename(&staging, &dir).map_err(|e| io("rename", e))?;
            if durable {
                sync_dir(&self.root);
            }
            let replay = ReplayState::default();
            let log = EventLog::open(&dir.join(LOG_FILE), |_| {})
                .map_err(RuntimeError::from)?
                .log;
            let handle = SessionHandle::new(
                record.clone(),
                dir.clone(),
                log,
                replay,
                self.observer.get().cloned(),
                self.summary_writes.clone(),
            )?;
            Ok(if durable {
                handle
            } else {
                handle.owing_creation(PendingCreation::new(
                    dir.join(RECORD_FILE),
                    dir,
                    self.root.clone(),
                ))
            })
        })();
        let handle = match result {
            Ok(handle) => Arc::new(handle),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&staging);
                return Err(e);
            }
        };
        if let Some(remote) = self.remote.get() {
            handle.attach_remote(remote, 0, self.elsewhere.get().cloned());
        }
        let cell = Arc::new(OnceCell::new_with(Some(handle.clone())));
        self.lock_open().insert(record.id, cell);
        Ok(handle)
    }

    /// Persists a fork: its record, `events` (the source's, up to the fork point) as its
    /// own log, and what `populate` writes into its folder (its snapshots), all in a
    /// staging folder renamed into place, so a crash never leaves half a fork. The fork is
    /// opened, like any session, on first use.
    pub fn create_fork(
        &self,
        mut record: SessionRecord,
        events: Vec<crate::events::Event>,
        populate: impl FnOnce(&Path) -> Result<()>,
    ) -> Result<()> {
        record.model.mask_secrets();
        let events: Vec<_> = events
            .into_iter()
            .map(|mut event| {
                event.session_id = record.id;
                event.id = Uuid::new_v4();
                event
            })
            .collect();
        if let Some(remote) = self.remote.get() {
            remote.create_blocking(record.clone(), events.clone())?;
        }
        let staging = self.root.join(format!("{STAGING_PREFIX}{}", record.id));
        let io = |what: &str, e| RuntimeError::storage(format!("{what} {}", staging.display()), e);
        std::fs::create_dir(&staging).map_err(|e| io("create", e))?;
        let result = (|| {
            write_json_atomic(&staging.join(RECORD_FILE), &RecordFile::new(&record), true)
                .map_err(|e| io("write record in", e))?;
            let mut log = EventLog::create(&staging.join(LOG_FILE)).map_err(RuntimeError::from)?;
            for event in events {
                log.append(&event).map_err(RuntimeError::from)?;
            }
            log.sync().map_err(RuntimeError::from)?;
            drop(log);
            populate(&staging)?;
            std::fs::rename(&staging, self.dir_of(record.id)).map_err(|e| io("rename", e))?;
            sync_dir(&self.root);
            Ok(())
        })();
        if result.is_err() {
            let _ = std::fs::remove_dir_all(&staging);
        }
        result
    }

    /// Opens a session (reading and repairing its log the first time).
    pub async fn get(&self, id: Uuid) -> Result<Arc<SessionHandle>> {
        let cell = {
            let mut open = self.lock_open();
            // A copy of a shared store's session that lost it is read again.
            if open
                .get(&id)
                .and_then(|cell| cell.get())
                .is_some_and(|handle| handle.is_remote() && handle.is_gone())
            {
                open.remove(&id);
            }
            open.entry(id).or_default().clone()
        };
        let handle = cell
            .get_or_try_init(|| async {
                if let Some(remote) = self.remote.get() {
                    return self.open_copy(remote, id).await;
                }
                self.load_local(id).await
            })
            .await;
        match handle {
            Ok(handle) => {
                let handle = handle.clone();
                if !handle.is_remote() {
                    // With a shared store, a turn the log shows open may be running on
                    // another server: it is closed when this server takes the session.
                    self.repair_open_turn(&handle).await;
                }
                self.evict_idle(self.open.keep.load(Ordering::Relaxed));
                Ok(handle)
            }
            Err(LoadError::Missing) => {
                self.lock_open().remove(&id);
                Err(RuntimeError::not_found("session", id.to_string()))
            }
            Err(LoadError::Unreadable(reason)) => {
                self.lock_open().remove(&id);
                self.quarantine(id, &reason);
                Err(RuntimeError::Quarantined {
                    session_id: id.to_string(),
                    reason,
                })
            }
            Err(LoadError::Runtime(e)) => {
                self.lock_open().remove(&id);
                Err(e)
            }
        }
    }

    /// Reads the session's folder (this store's, or the copy of a shared store's).
    pub(super) async fn load_local(
        &self,
        id: Uuid,
    ) -> std::result::Result<Arc<SessionHandle>, LoadError> {
        let dir = self.dir_of(id);
        let observer = self.observer.get().cloned();
        let summaries = self.summary_writes.clone();
        tokio::task::spawn_blocking(move || load(id, &dir, observer, summaries))
            .await
            .map_err(|e| RuntimeError::storage("load session", std::io::Error::other(e)))?
    }

    /// Records the end of a turn the log leaves open (a crash's, as interrupted; one whose
    /// end could not be written, as it ended), so that the session's next turn starts
    /// after it. Fails while the log cannot be written; the turn then stays open.
    ///
    /// A copy of a shared store's session is first brought up to the store, and a turn
    /// another server left open in it is closed as interrupted: the caller holds the
    /// session (it claimed one of its turns).
    pub async fn close_open_turn(&self, handle: &Arc<SessionHandle>) -> Result<()> {
        if handle.is_remote() {
            handle.catch_up().await?;
            handle.adopt_abandoned_turn();
        }
        if let Some(closed) = handle.close_open_turn().await? {
            handle.write_summary();
            self.journal_turn_end(handle.id());
            if let Some(observer) = self.observer.get() {
                observer.turn_closed(handle.id(), &closed);
            }
            tracing::info!(session = %handle.id(), turn = %closed.turn_id, "recorded the end of an open turn");
        }
        Ok(())
    }

    /// [`SessionStore::close_open_turn`] when a session is opened: a log that cannot be
    /// written yet (a full or read-only disk) still serves reads.
    async fn repair_open_turn(&self, handle: &Arc<SessionHandle>) {
        if let Err(e) = self.close_open_turn(handle).await {
            tracing::warn!(session = %handle.id(), error = %e, "cannot record the end of an open turn yet");
        }
    }

    /// The session ids on disk, newest first (ids are UUIDv7, ordered by creation time).
    pub fn list_ids(&self) -> Result<Vec<Uuid>> {
        let mut ids: Vec<Uuid> = read_dir(&self.root)?
            .into_iter()
            .filter_map(|e| e.file_name().to_str().and_then(|n| Uuid::parse_str(n).ok()))
            .collect();
        ids.sort_unstable_by(|a, b| b.cmp(a));
        Ok(ids)
    }

    /// A page of sessions, newest first, those `filter` accepts. Blocks on disk reads.
    pub(crate) fn list_page(
        &self,
        filter: &crate::api::SessionFilter,
        page: &crate::paging::PageRequest,
    ) -> Result<crate::paging::Page<SessionInfo>> {
        let infos = self.list_ids()?.into_iter().filter_map(|id| self.peek(id));
        crate::paging::paginate(
            infos,
            page,
            |info| info.record.id.to_string(),
            |key| Uuid::parse_str(key).ok(),
            |info, key| info.record.id < *key,
            |info| filter.matches(info),
        )
    }

    /// Whether the session exists, without reading its files (one `stat` at most): for
    /// checks made on async workers, where [`SessionStore::peek`] could scan a log.
    pub fn exists(&self, id: Uuid) -> bool {
        self.lock_open().contains_key(&id) || self.dir_of(id).join(RECORD_FILE).is_file()
    }

    /// A session's record and totals without opening its log: from memory when it is
    /// open, else from its files. `None` when it vanished meanwhile.
    pub fn peek(&self, id: Uuid) -> Option<SessionInfo> {
        let open = self.lock_open().get(&id).and_then(|c| c.get().cloned());
        if let Some(handle) = open {
            return Some(handle.info());
        }
        let dir = self.dir_of(id);
        let record = match read_record(&dir.join(RECORD_FILE)) {
            Ok(record) => record,
            Err(RecordError::Newer(version)) => {
                tracing::warn!(session = %id, version, "{}", newer_format(id, version));
                return None;
            }
            Err(RecordError::Unreadable(_)) => return None,
        };
        let mut stats: SessionStats = read_json(&dir.join(SUMMARY_FILE)).unwrap_or_default();
        catch_up(&dir.join(LOG_FILE), &mut stats);
        Some(SessionInfo {
            record,
            stats,
            state: SessionState::Idle,
        })
    }

    /// Removes a session's files. The caller has stopped its turns.
    pub fn remove(&self, handle: &SessionHandle) -> Result<()> {
        handle.mark_deleted();
        self.lock_open().remove(&handle.id());
        self.journal_turn_end(handle.id());
        let trash = self
            .root
            .join(format!("{STAGING_PREFIX}deleted-{}", handle.id()));
        match std::fs::rename(handle.dir(), &trash) {
            Ok(()) => {}
            // Removed meanwhile: by a second deletion, or (a store several servers share)
            // by this server's follower, told of the deletion by the store.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                return Err(RuntimeError::storage(
                    format!("remove {}", handle.dir().display()),
                    e,
                ));
            }
        }
        sync_dir(&self.root);
        if let Err(e) = std::fs::remove_dir_all(&trash) {
            tracing::warn!(path = %trash.display(), error = %e, "cannot remove deleted session files");
        }
        Ok(())
    }

    /// Sessions held open in memory.
    pub fn open_count(&self) -> usize {
        self.lock_open()
            .values()
            .filter(|cell| cell.initialized())
            .count()
    }

    /// Writes the summaries waiting to be written and waits until they are (at shutdown;
    /// later ones are written at once).
    pub async fn flush_summaries(&self) {
        let tasks = &self.summary_writes;
        tasks.flush.cancel();
        tasks.tracker.close();
        tasks.tracker.wait().await;
        tasks.tracker.reopen();
    }

    /// Forgets open sessions nobody uses, so memory follows activity, not history.
    pub fn evict_idle(&self, keep: usize) {
        self.open.evict_idle(keep);
    }

    pub(super) fn quarantine(&self, id: Uuid, reason: &str) {
        let from = self.dir_of(id);
        let to = self.quarantine_root.join(id.to_string());
        tracing::error!(session = %id, reason, "session is unreadable; moving it to quarantine");
        let moved = std::fs::rename(&from, &to)
            .and_then(|()| std::fs::write(to.join(REASON_FILE), format!("{reason}\n")));
        if let Err(e) = moved {
            tracing::error!(session = %id, error = %e, "cannot quarantine session");
        }
        self.journal_turn_end(id);
        crate::sync::lock(&self.quarantined).push(QuarantinedSession {
            session_id: id.to_string(),
            reason: reason.to_string(),
            quarantined_at_ms: now_ms(),
        });
    }

    pub(super) fn lock_open(&self) -> MutexGuard<'_, OpenMap> {
        self.open.lock()
    }
}

/// Open sessions by id; a cell is filled once the session has been read.
pub(super) type OpenMap = HashMap<Uuid, Arc<OnceCell<Arc<SessionHandle>>>>;

/// The sessions held open in memory, shared with the sessions' summary writers, which let
/// go of a session after the store last looked at it.
struct OpenSessions {
    map: Mutex<OpenMap>,
    /// Open sessions kept while idle; more are dropped once idle.
    keep: AtomicUsize,
}

impl OpenSessions {
    fn lock(&self) -> MutexGuard<'_, OpenMap> {
        crate::sync::lock(&self.map)
    }

    fn evict_idle(&self, keep: usize) {
        let mut open = self.lock();
        if open.len() <= keep {
            return;
        }
        // A session is in use while anyone holds its handle, or its cell: a `get` that
        // found the cell has not cloned the handle out of it yet, and dropping the cell
        // then would let the next `get` open a second writer on the same log.
        open.retain(|_, cell| match cell.get() {
            Some(handle) => Arc::strong_count(handle) > 1 || Arc::strong_count(cell) > 1,
            None => true,
        });
    }
}

pub(super) enum LoadError {
    Missing,
    Unreadable(String),
    Runtime(RuntimeError),
}

impl From<RuntimeError> for LoadError {
    fn from(e: RuntimeError) -> Self {
        Self::Runtime(e)
    }
}

fn load(
    id: Uuid,
    dir: &Path,
    observer: Option<Arc<dyn EventObserver>>,
    summary_writes: SummaryTasks,
) -> std::result::Result<Arc<SessionHandle>, LoadError> {
    let record_path = dir.join(RECORD_FILE);
    if !record_path.exists() {
        return Err(LoadError::Missing);
    }
    if is_unfinished_creation(&record_path, &dir.join(LOG_FILE)) {
        tracing::warn!(session = %id, "clearing a session whose creation a crash cut short (its record was never written, its log holds nothing)");
        let _ = std::fs::remove_dir_all(dir);
        return Err(LoadError::Missing);
    }
    let record = read_record(&record_path).map_err(|e| match e {
        RecordError::Unreadable(e) => LoadError::Unreadable(format!("{RECORD_FILE}: {e}")),
        RecordError::Newer(version) => LoadError::Runtime(newer_format(id, version)),
    })?;
    if record.id != id {
        return Err(LoadError::Unreadable(format!(
            "{RECORD_FILE}: id {} does not match folder {id}",
            record.id
        )));
    }
    let mut replay = ReplayState {
        log_path: Some(dir.join(LOG_FILE)),
        ..ReplayState::default()
    };
    let recovered = match EventLog::open(&dir.join(LOG_FILE), |event| replay.observe(event)) {
        Ok(recovered) => recovered,
        Err(LogError::Corrupt { line, message, .. }) => {
            return Err(LoadError::Unreadable(format!(
                "{LOG_FILE}: line {line}: {message}"
            )));
        }
        Err(LogError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Err(LoadError::Unreadable(format!("{LOG_FILE} is missing")));
        }
        Err(e) => return Err(RuntimeError::from(e).into()),
    };
    if recovered.truncated_bytes > 0 {
        tracing::warn!(session = %id, bytes = recovered.truncated_bytes, "cut a torn last event off the log");
    }
    Ok(Arc::new(SessionHandle::new(
        record,
        dir.to_path_buf(),
        recovered.log,
        replay,
        observer,
        summary_writes,
    )?))
}

/// Folds into `stats` the events the log holds beyond what they cover: one `stat` when the
/// summary is current.
fn catch_up(log: &Path, stats: &mut SessionStats) {
    let Ok(len) = std::fs::metadata(log).map(|m| m.len()) else {
        return;
    };
    if len == stats.log_bytes {
        return;
    }
    if len < stats.log_bytes {
        // The log was cut since (a torn tail repaired): count it all again.
        *stats = SessionStats::default();
    }
    let from = stats.log_bytes;
    match scan_from(log, from, |event| stats.observe(&event)) {
        Ok(end) => stats.log_bytes = end,
        Err(e) => tracing::warn!(log = %log.display(), error = %e, "cannot read a session's log"),
    }
}

/// A session's record, with any credential a record written before they were refused
/// masked, so it is never echoed.
fn read_record(path: &Path) -> std::result::Result<SessionRecord, RecordError> {
    let bytes = std::fs::read(path).map_err(|e| RecordError::Unreadable(e.to_string()))?;
    let mut record = parse_record(&bytes)?;
    record.model.mask_secrets();
    Ok(record)
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> std::result::Result<T, String> {
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    serde_json::from_slice(&bytes).map_err(|e| crate::quoted::json_error(&e))
}

fn read_dir(dir: &Path) -> Result<Vec<std::fs::DirEntry>> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| RuntimeError::storage(format!("list {}", dir.display()), e))?;
    Ok(entries.filter_map(|e| e.ok()).collect())
}

/// Makes a rename inside `dir` durable.
fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Writes a session's folder under `root` as a copy of a shared store's session: built in
/// a staging folder and renamed into place over any previous copy. Nothing is synced (the
/// store holds the truth; a copy a crash cut short is read again from it).
pub(super) fn write_copy(
    root: &Path,
    record: &SessionRecord,
    events: &[crate::events::Event],
) -> Result<()> {
    let staging = root.join(format!("{STAGING_PREFIX}{}", record.id));
    let io = |what: &str, e| RuntimeError::storage(format!("{what} {}", staging.display()), e);
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir(&staging).map_err(|e| io("create", e))?;
    let result = (|| {
        write_json_atomic(&staging.join(RECORD_FILE), &RecordFile::new(record), false)
            .map_err(|e| io("write record in", e))?;
        let mut log = EventLog::create(&staging.join(LOG_FILE)).map_err(RuntimeError::from)?;
        for event in events {
            log.append(event).map_err(RuntimeError::from)?;
        }
        drop(log);
        let dir = root.join(record.id.to_string());
        let trash = root.join(format!("{STAGING_PREFIX}replaced-{}", record.id));
        if dir.exists() {
            std::fs::rename(&dir, &trash).map_err(|e| io("move aside", e))?;
        }
        std::fs::rename(&staging, &dir).map_err(|e| io("rename", e))?;
        let _ = std::fs::remove_dir_all(&trash);
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    result
}
