//! The storage seam: what the runtime keeps, as traits a store implements.
//!
//! - [`SessionRecords`]: sessions' creation records and totals (create, get, list, delete,
//!   quarantine).
//! - [`EventLogs`]: each session's append-only, gap-free event log (append a batch at an
//!   expected next sequence, sync, read after a sequence). Turn records are read from it.
//! - [`TurnJournal`]: the sessions with a turn in flight, repaired at startup.
//! - [`TurnQueue`]: the turns waiting for a worker, one running turn per session, in
//!   submission order within a session.
//! - [`Bundles`]: installed bundles, found by digest and verified on read.
//! - [`TurnSignals`] (a store several servers share): decisions, answers and cancels sent
//!   to the server running the turn they are for.
//!
//! A [`Store`] holds one implementation of each and is handed to the runtime when it is
//! built ([`crate::RuntimeBuilder::store`]). The runtime reaches what is stored through
//! them: creating, reading, listing and deleting sessions ([`SessionRecords`]), the
//! sessions with a turn in flight ([`TurnJournal`]), the queue ([`TurnQueue`]), installing
//! bundle archives and deleting bundles by digest ([`Bundles`]). Still on the file types:
//! the open session's appends and syncs (the handle below), the replay a subscriber
//! behind the live tail is served from (one reader streams through the log file; read a
//! batch at a time through [`EventLogs::read_events_after`], which seeks again for each
//! batch, replay from sequence 0 measured about a sixth slower), resolving bundle
//! references (the catalog and its cache) and forks.
//!
//! A store's method does not hold the calling task's thread for long: a store whose work
//! is blocking file I/O moves it to a blocking thread itself, as a database store awaits
//! the network. The methods are asynchronous for that reason.
//!
//! # Who owns a session's live state
//!
//! A session open in a process is a [`crate::session::SessionHandle`]: the tail of its log
//! in memory (the ring live subscribers read), their wake-up, the running totals, the
//! conversation history the next turn starts from, and the turn running on it. Exactly one
//! process owns that state for a session at a time, and only the owner appends to the
//! session's log:
//!
//! - With the file store there is one process, and the handle is the log's writer: the
//!   file store's [`EventLogs`] appends go through the open handle, so an append made
//!   through the trait and one the runtime makes on the handle are the same write, in the
//!   same sequence. The handle keeps the file store's fast paths: an append is a buffered
//!   write under the handle's lock, durability points are synced as a group on a second
//!   descriptor outside it (`append_after` runs the caller's work beside the sync), the
//!   totals are written once a second, not per event, and idle handles are evicted from
//!   the open-session cache.
//! - With several replicas on one database, the owner is the replica holding the
//!   session's lease (the one running its turn). Its handle keeps the ring and serves its
//!   own subscribers from it at once, as now, and writes what it appended since its last
//!   write as one batch through [`EventLogs::append_events`] at the next sequence it
//!   expects, at latest at each durability point, which [`EventLogs::sync_events`] makes
//!   durable (one transaction per group, where the file store has one `fsync`). A [`StoreError::SequenceConflict`] then means another
//!   replica wrote: the handle has lost the session and is dropped, never retried at a new
//!   sequence. The other replicas own no handle for the session: they answer from rows
//!   ([`SessionRecords::session`], [`EventLogs::read_events_after`]) and follow new rows
//!   through the store's wake-up.
//!
//! What that needs of the traits beyond today's, all additive: a way to follow a log
//! written elsewhere (a wake-up per session carrying the last sequence written, which a
//! subscriber on a non-owning replica waits on before reading rows), and a lease held
//! per session by the store, so that `append_events` is fenced without a lease argument.
//! Until a second store exists, the handle writes to its file directly (it is the file
//! store's writer) and subscriptions follow the owner's handle.
//!
//! [`suite`] is the behaviour every store must show, written once and run against each
//! store (see [`crate::store_suite`]).

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use uuid::Uuid;

use crate::bundle::{BundleError, BundleStore, InstallOptions, InstalledBundle};
use crate::config::RuntimeConfig;
use crate::error::RuntimeError;
use crate::events::Event;
use crate::paging::{Page, PageRequest};
use crate::session::{QuarantinedSession, SessionInfo, SessionRecord, SessionStore};

pub use crate::api::SessionFilter;
pub use crate::execution::{Job, Placed};

#[cfg(any(test, feature = "store-suite"))]
pub mod suite;

/// Why a store refused or failed an operation.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// An append was made for a next sequence the log is not at: another writer appended
    /// first, or the caller's view of the log is stale. Nothing was written.
    #[error(
        "session {session_id}: an append expected next sequence {expected}, but the log's next sequence is {actual}"
    )]
    SequenceConflict {
        session_id: Uuid,
        expected: u64,
        actual: u64,
    },
    /// The execution queue holds as many turns as it may.
    #[error("the execution queue is full ({capacity} turns waiting); retry later")]
    QueueFull { capacity: usize },
    /// The queue was closed (the server is shutting down).
    #[error("the execution queue is closed")]
    QueueClosed,
    /// No installed bundle has this digest.
    #[error("no installed bundle has digest {digest}")]
    UnknownDigest { digest: String },
    /// A store shared by several servers refused a write to a session this server may not
    /// write now: another server holds the session, or this server's hold on it lapsed and
    /// was taken over. Nothing was written.
    #[error("session {session_id} is not this server's to write: {reason}")]
    Fenced { session_id: Uuid, reason: String },
    /// The store cannot be reached right now (a database connection failed); nothing is
    /// known to have been written. The store reconnects by itself.
    #[error("the store is unavailable: {0}")]
    Unavailable(String),
    #[error(transparent)]
    Bundle(#[from] BundleError),
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

impl StoreError {
    /// Whether the store refused a session (or an event of one) it does not hold.
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            Self::Runtime(RuntimeError::NotFound { .. })
                | Self::Bundle(BundleError::NotFound { .. })
                | Self::UnknownDigest { .. }
        )
    }
}

impl From<StoreError> for RuntimeError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Runtime(e) => e,
            StoreError::Bundle(e) => e.into(),
            StoreError::QueueClosed => RuntimeError::ShuttingDown,
            StoreError::Unavailable(message) => RuntimeError::StoreUnavailable(message),
            e @ (StoreError::SequenceConflict { .. }
            | StoreError::QueueFull { .. }
            | StoreError::Fenced { .. }) => RuntimeError::FailedPrecondition(e.to_string()),
            StoreError::UnknownDigest { digest } => RuntimeError::not_found("bundle", digest),
        }
    }
}

pub type StoreResult<T> = std::result::Result<T, StoreError>;

/// Sessions' creation records, with the totals their logs add up to.
pub trait SessionRecords: Send + Sync {
    /// Persists a new session with an empty log, all or nothing.
    fn create_session(&self, record: SessionRecord) -> BoxFuture<'_, StoreResult<()>>;

    /// A session's record and totals; `None` when the store holds no such session. (The
    /// file store opens the session to answer, reading and repairing its log the first
    /// time, and quarantines it when the log cannot be read.)
    fn session(&self, id: Uuid) -> BoxFuture<'_, StoreResult<Option<SessionInfo>>>;

    /// Sessions newest first (ids are UUIDv7), those `filter` accepts, a page at a time.
    fn list_sessions(
        &self,
        filter: SessionFilter,
        page: PageRequest,
    ) -> BoxFuture<'_, StoreResult<Page<SessionInfo>>>;

    /// Removes a session and its log; `false` when there was none.
    fn delete_session(&self, id: Uuid) -> BoxFuture<'_, StoreResult<bool>>;

    /// Moves an unreadable session aside, with the reason, so that it never stops the
    /// server; it is then reported by [`SessionRecords::quarantined`].
    fn quarantine_session(&self, id: Uuid, reason: String) -> BoxFuture<'_, StoreResult<()>>;

    /// The sessions moved aside.
    fn quarantined(&self) -> Vec<QuarantinedSession>;
}

/// Each session's event log: per-session sequences from 1, without gaps.
pub trait EventLogs: Send + Sync {
    /// Appends `events` as sequences `expected_next`, `expected_next + 1`, … (their
    /// `session_id` and `sequence` are set here), only if the log's next sequence is
    /// `expected_next`: else nothing is written and the answer is
    /// [`StoreError::SequenceConflict`]. Answers the last sequence written.
    fn append_events(
        &self,
        session_id: Uuid,
        expected_next: u64,
        events: Vec<Event>,
    ) -> BoxFuture<'_, StoreResult<u64>>;

    /// Makes everything appended to the session's log so far durable.
    fn sync_events(&self, session_id: Uuid) -> BoxFuture<'_, StoreResult<()>>;

    /// Up to `limit` events after `after_sequence`, in sequence order.
    fn read_events_after(
        &self,
        session_id: Uuid,
        after_sequence: u64,
        limit: usize,
    ) -> BoxFuture<'_, StoreResult<Vec<Event>>>;

    /// The last sequence written (0 for an empty log).
    fn last_sequence(&self, session_id: Uuid) -> BoxFuture<'_, StoreResult<u64>>;

    /// Wake-ups telling that logs grew, written by whichever server shares the store:
    /// `None` for a store only this process writes (the file store). A wake-up only says
    /// "read the rows again" (the rows are the truth); [`LogWake::Resync`] says some may
    /// have been missed (a reconnect, a slow reader), so every followed log is read again.
    fn wake_ups(&self) -> Option<tokio::sync::broadcast::Receiver<LogWake>> {
        None
    }
}

/// A turn found by [`TurnQueue::locate`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located {
    pub session_id: Uuid,
    pub place: Placement,
}

/// Where a located turn is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    Queued,
    Running {
        replica: String,
    },
    /// Ran and ended: its session's log says how.
    Ended,
}

/// What [`EventLogs::wake_ups`] tells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogWake {
    /// The session's log now ends at `last_sequence` or later.
    Grew {
        session_id: Uuid,
        last_sequence: u64,
    },
    /// The session was deleted.
    Deleted { session_id: Uuid },
    /// Wake-ups may have been missed: read every followed log again.
    Resync,
}

/// The servers sharing a store, for a store several servers share.
pub trait Replicas: Send + Sync {
    /// This server's replica id.
    fn replica_id(&self) -> String;

    /// The replicas the store has seen, this one included, by id.
    fn replicas(&self) -> BoxFuture<'_, StoreResult<Vec<ReplicaSeen>>>;
}

/// A replica as the store last saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplicaSeen {
    pub id: String,
    /// When it last said it was alive (its heartbeat), in Unix milliseconds.
    pub last_seen_ms: u64,
    /// Whether that was within its lease time (a replica not seen since is presumed dead).
    pub alive: bool,
}

/// Decisions, answers and cancels for turns another server runs, for a store several
/// servers share.
///
/// A turn waits for a person in the memory of the server running it (its approval
/// request, its cancel signal): a client that reaches another server is answered by that
/// one, which checks what it can from the session's log (the request is pending, the
/// answer fits its schema), then hands the store a [`TurnSignal`]. The store delivers it
/// to the server running the turn, whose runtime applies it as if the call had come to it
/// (its [`TurnSignals::signals`]); the outcome shows in the session's log, as a local
/// decision's does. A signal is a request, not a command: the server running the turn
/// refuses one that no longer applies (the request was resolved meanwhile, the turn
/// ended), as it would a local call.
pub trait TurnSignals: Send + Sync {
    /// Delivers `signal` to the server running its turn (for a cancel, the server
    /// running the turn, or holding it queued). Answers where it went, or `None` when no
    /// server runs such a turn now (nothing is sent). A signal larger than
    /// [`MAX_SIGNAL_BYTES`] is refused (`InvalidArgument`).
    fn send(&self, signal: TurnSignal) -> BoxFuture<'_, StoreResult<Option<Delivery>>>;

    /// The signals sent to this server, from the moment this is called. A receiver that
    /// falls behind is told it lagged (the signals it missed are lost: their clients see
    /// nothing happen in the log, and may send again).
    fn signals(&self) -> tokio::sync::broadcast::Receiver<TurnSignal>;

    /// The sessions whose turn runs on another server now, most recently claimed first,
    /// at most `limit`, with the last sequence of each one's log: where a request another
    /// server waits on may be found, and whether this server's copy has read it.
    fn sessions_running_elsewhere(
        &self,
        limit: usize,
    ) -> BoxFuture<'_, StoreResult<Vec<RunningElsewhere>>>;

    /// What each of `sessions` is doing, whichever server runs or holds its turns, in one
    /// round trip: the sessions with a turn queued or running; one absent is idle.
    fn session_activity(
        &self,
        sessions: &[Uuid],
    ) -> BoxFuture<'_, StoreResult<HashMap<Uuid, SessionActivity>>>;
}

/// What a session is doing, as the store sees it (see [`TurnSignals::session_activity`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionActivity {
    /// A turn of it runs (on any server).
    pub running: bool,
    /// A turn of it waits for a worker.
    pub queued: bool,
    /// Its log shows a request of its running turn waiting for a person.
    pub asking: bool,
}

/// A session whose turn another server runs (see [`TurnSignals::sessions_running_elsewhere`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunningElsewhere {
    pub session_id: Uuid,
    /// The last sequence of its log in the store.
    pub last_sequence: u64,
}

/// The largest signal a store must carry, encoded: steered input at its largest (a
/// prompt's 1 MiB, more than an answer to a request for input with a reason), each byte
/// escaped in JSON at worst as six (`\u0001`), and room for the rest.
pub const MAX_SIGNAL_BYTES: usize = 6 * 1024 * 1024 + 16 * 1024;

/// What a server asks of the server running a turn.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TurnSignal {
    /// A person's decision on a tool call waiting for approval.
    Decide {
        session_id: Uuid,
        request_id: String,
        decision: crate::events::ApprovalDecision,
        reason: String,
    },
    /// A person's answer to a request for input.
    Answer {
        session_id: Uuid,
        request_id: String,
        action: crate::events::InputAction,
        answer: Option<serde_json::Value>,
    },
    /// Text for turn `execution_id`'s next model call (input sent in steer mode), taken
    /// only by that turn: the server running it records it in the session's log
    /// (`user_input_added`), or does nothing when the turn takes no more input.
    Steer {
        session_id: Uuid,
        execution_id: Uuid,
        text: String,
    },
    /// Stop a queued or running turn.
    Cancel {
        execution_id: Uuid,
        reason: String,
        /// Stopped for input sent in interrupt mode: the turn's end says so
        /// ([`crate::events::INTERRUPTED_BY_INPUT`]), as when the input came to the
        /// server running it.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        for_input: bool,
    },
}

/// Where [`TurnSignals::send`] delivered a signal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// The session of the turn.
    pub session_id: Uuid,
    /// The server it went to.
    pub replica: String,
}

/// The sessions with a turn in flight, so that startup repairs exactly those.
pub trait TurnJournal: Send + Sync {
    /// Records that a turn of the session is in flight, before it starts.
    fn turn_started(&self, session_id: Uuid) -> BoxFuture<'_, StoreResult<()>>;

    /// Records that the session's turn ended, its end durable in the log.
    fn turn_ended(&self, session_id: Uuid) -> BoxFuture<'_, StoreResult<()>>;

    /// The sessions whose turn started and did not end.
    fn open_turns(&self) -> BoxFuture<'_, StoreResult<Vec<Uuid>>>;
}

/// The turns waiting for a worker: at most one running turn per session, a session's
/// turns in submission order, sessions served in the order they became ready.
pub trait TurnQueue: Send + Sync {
    /// Queues a turn after (or, `first`, ahead of) the session's waiting turns, and tells
    /// what of the session was ahead of it.
    fn push(&self, turn: Job, first: bool) -> BoxFuture<'_, StoreResult<Placed>>;

    /// Takes the oldest turn of the first session that has one waiting and none running,
    /// and marks that session running; `None` when no session is ready.
    fn claim_next(&self) -> BoxFuture<'_, StoreResult<Option<Job>>>;

    /// The session's running turn ended; its next turn, if any, becomes ready.
    fn finish(&self, session_id: Uuid) -> BoxFuture<'_, StoreResult<()>>;

    /// Takes a waiting turn out (cancelled before it started).
    fn remove(&self, execution_id: Uuid) -> BoxFuture<'_, StoreResult<Option<Job>>>;

    /// Takes every waiting turn of a session out.
    fn remove_session(&self, session_id: Uuid) -> BoxFuture<'_, StoreResult<Vec<Job>>>;

    /// Refuses new turns and hands back every waiting one.
    fn close(&self) -> BoxFuture<'_, StoreResult<Vec<Job>>>;

    /// Records as interrupted the running turns of servers that stopped (a store several
    /// servers share: one not heard from within its lease time) and answers their
    /// sessions, once each, so that this server closes those turns in their logs. Their
    /// waiting turns may then be claimed by any server. Nothing for a store only this
    /// process uses.
    fn take_abandoned(&self) -> BoxFuture<'_, StoreResult<Vec<Uuid>>> {
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    /// Where a turn is, for a store several servers share: its session, and whether it
    /// waits, runs (on which server) or ended (kept a while after its end). `None` when
    /// the store does not know it (a store only this process uses answers `None`: the
    /// runtime knows its own turns).
    fn locate(&self, _execution_id: Uuid) -> BoxFuture<'_, StoreResult<Option<Located>>> {
        Box::pin(std::future::ready(Ok(None)))
    }

    /// Turns waiting (not running).
    fn queued(&self) -> usize;

    /// Turns that may wait at once.
    fn capacity(&self) -> usize;
}

/// Installed bundles, found by content digest; what is read is checked against it.
pub trait Bundles: Send + Sync {
    /// Installs a built bundle archive (as an export writes it).
    fn install_archive(
        &self,
        archive: Vec<u8>,
        options: InstallOptions,
    ) -> BoxFuture<'_, StoreResult<Arc<InstalledBundle>>>;

    /// The installed bundle with this digest, once its content is checked against it: a
    /// bundle whose files changed since install is refused.
    fn bundle_by_digest(&self, digest: String) -> BoxFuture<'_, StoreResult<Arc<InstalledBundle>>>;

    /// The archive of the installed bundle with this digest, checked against it.
    fn bundle_archive(&self, digest: String) -> BoxFuture<'_, StoreResult<Vec<u8>>>;

    /// Removes the installed bundle with this digest.
    fn delete_bundle(&self, digest: String) -> BoxFuture<'_, StoreResult<Arc<InstalledBundle>>>;

    /// Brings this process's bundle catalog (see [`Store::with_bundle_catalog`]) up to
    /// what the store holds: bundles another server installed are unpacked, those it
    /// deleted removed. Nothing to do for a store only this process writes.
    fn refresh_catalog(&self) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(std::future::ready(Ok(())))
    }
}

/// Where the runtime keeps what it keeps: one implementation of each storage trait,
/// chosen when the runtime is built.
pub struct Store {
    kind: StoreKind,
    queue: Arc<dyn TurnQueue>,
    /// The servers sharing the store, when several may.
    replicas: Option<Arc<dyn Replicas>>,
    /// Long-term memory kept by the store (several servers then recall what any of them
    /// captured); `None`: the runtime's own file memory under the home.
    memory: Option<Arc<dyn crate::memory::MemoryProvider>>,
    /// How a server reaches the turns another server runs, when several may.
    turn_signals: Option<Arc<dyn TurnSignals>>,
}

enum StoreKind {
    /// Files under the home folder; the queue in memory.
    Files {
        sessions: Arc<SessionStore>,
        bundles: Arc<BundleStore>,
    },
    /// Another store's implementations of the traits ([`Store::from_parts`]).
    Parts {
        name: &'static str,
        sessions: Arc<dyn SessionRecords>,
        logs: Arc<dyn EventLogs>,
        journal: Arc<dyn TurnJournal>,
        bundles: Arc<dyn Bundles>,
        /// This process's unpacked copies of the store's bundles, which the runtime
        /// resolves names and versions in ([`Store::with_bundle_catalog`]).
        catalog: Option<Arc<BundleStore>>,
    },
}

impl Store {
    /// The store the configuration names. Today that is always the file store
    /// ([`Store::files`]).
    pub fn open(config: &RuntimeConfig) -> crate::Result<Self> {
        Self::files(config)
    }

    /// The file store under `config.home`: sessions in `sessions/`, unreadable ones moved
    /// to `quarantine/`, bundles in `bundles/`, the queue in memory.
    pub fn files(config: &RuntimeConfig) -> crate::Result<Self> {
        let bundles = BundleStore::open(config.bundles_dir())?.with_limits(config.archive_limits);
        let sessions = SessionStore::open(config.sessions_dir(), config.quarantine_dir())?
            .with_open_cache(config.open_session_cache);
        Ok(Self {
            kind: StoreKind::Files {
                sessions: Arc::new(sessions),
                bundles: Arc::new(bundles),
            },
            queue: Arc::new(crate::execution::Queue::new(config.queue_capacity)),
            replicas: None,
            memory: None,
            turn_signals: None,
        })
    }

    /// A store made of another crate's implementations of the traits (the PostgreSQL
    /// store, for one); `kind` names it as an operator reads it (`postgres`).
    ///
    /// The runtime keeps a copy of such a store's sessions in its home and pushes to it
    /// and follows it (see [`Store::runtime_parts`]); it needs the store's bundle catalog
    /// ([`Store::with_bundle_catalog`]).
    pub fn from_parts(
        kind: &'static str,
        sessions: Arc<dyn SessionRecords>,
        logs: Arc<dyn EventLogs>,
        journal: Arc<dyn TurnJournal>,
        queue: Arc<dyn TurnQueue>,
        bundles: Arc<dyn Bundles>,
    ) -> Self {
        Self {
            kind: StoreKind::Parts {
                name: kind,
                sessions,
                logs,
                journal,
                bundles,
                catalog: None,
            },
            queue,
            replicas: None,
            memory: None,
            turn_signals: None,
        }
    }

    /// The folder where this process unpacks the store's bundles, in which bundle names
    /// and versions are resolved; [`Bundles::refresh_catalog`] keeps it up to date.
    pub fn with_bundle_catalog(mut self, catalog: Arc<BundleStore>) -> Self {
        if let StoreKind::Parts { catalog: slot, .. } = &mut self.kind {
            *slot = Some(catalog);
        }
        self
    }

    /// Long-term memory kept by the store. An embedder's own provider
    /// ([`crate::memory::MemorySettings::provider`]) still wins over it.
    pub fn with_memory(mut self, memory: Arc<dyn crate::memory::MemoryProvider>) -> Self {
        self.memory = Some(memory);
        self
    }

    /// The long-term memory the store keeps, if it keeps one.
    pub fn memory(&self) -> Option<Arc<dyn crate::memory::MemoryProvider>> {
        self.memory.clone()
    }

    /// The servers sharing this store.
    pub fn with_replicas(mut self, replicas: Arc<dyn Replicas>) -> Self {
        self.replicas = Some(replicas);
        self
    }

    /// The servers sharing this store, when several may.
    pub fn replicas(&self) -> Option<Arc<dyn Replicas>> {
        self.replicas.clone()
    }

    /// How this server reaches the turns other servers sharing the store run.
    pub fn with_turn_signals(mut self, signals: Arc<dyn TurnSignals>) -> Self {
        self.turn_signals = Some(signals);
        self
    }

    /// How this server reaches the turns other servers run, when several share the store.
    pub fn turn_signals(&self) -> Option<Arc<dyn TurnSignals>> {
        self.turn_signals.clone()
    }

    /// What kind of store this is, as an operator reads it: `files`, or the name given to
    /// [`Store::from_parts`].
    pub fn kind(&self) -> &'static str {
        match self.kind {
            StoreKind::Files { .. } => "files",
            StoreKind::Parts { name, .. } => name,
        }
    }

    pub fn session_records(&self) -> Arc<dyn SessionRecords> {
        match &self.kind {
            StoreKind::Files { sessions, .. } => Arc::new(sessions.clone()),
            StoreKind::Parts { sessions, .. } => sessions.clone(),
        }
    }

    pub fn event_logs(&self) -> Arc<dyn EventLogs> {
        match &self.kind {
            StoreKind::Files { sessions, .. } => Arc::new(sessions.clone()),
            StoreKind::Parts { logs, .. } => logs.clone(),
        }
    }

    pub fn turn_journal(&self) -> Arc<dyn TurnJournal> {
        match &self.kind {
            StoreKind::Files { sessions, .. } => Arc::new(sessions.clone()),
            StoreKind::Parts { journal, .. } => journal.clone(),
        }
    }

    pub fn turn_queue(&self) -> Arc<dyn TurnQueue> {
        self.queue.clone()
    }

    pub fn bundles(&self) -> Arc<dyn Bundles> {
        match &self.kind {
            StoreKind::Files { bundles, .. } => Arc::new(bundles.clone()),
            StoreKind::Parts { bundles, .. } => bundles.clone(),
        }
    }

    /// What the runtime serves from: the open sessions (their live state, see the module
    /// note) and the bundle catalog with its cache, which its fast paths use, and the
    /// records and journal it reaches through the traits.
    ///
    /// On the file store those are the store's own. On a store made [`Store::from_parts`],
    /// the sessions are this server's copy of the store's, in the file store's layout under
    /// `config.sessions_dir()` (see [`crate::session`]'s `remote` module), and the bundles
    /// the catalog given with [`Store::with_bundle_catalog`], which such a store needs.
    pub(crate) fn runtime_parts(&self, config: &RuntimeConfig) -> crate::Result<RuntimeParts> {
        match &self.kind {
            StoreKind::Files { sessions, bundles } => Ok(RuntimeParts {
                sessions: sessions.clone(),
                bundles: bundles.clone(),
                records: Arc::new(sessions.clone()),
                journal: Arc::new(sessions.clone()),
            }),
            StoreKind::Parts {
                name,
                sessions: records,
                logs,
                journal,
                catalog,
                ..
            } => {
                let bundles = catalog.clone().ok_or_else(|| {
                    RuntimeError::FailedPrecondition(format!(
                        "the {name} store gives the runtime no bundle catalog (Store::with_bundle_catalog)"
                    ))
                })?;
                let copies = SessionStore::open(config.sessions_dir(), config.quarantine_dir())?
                    .with_open_cache(config.open_session_cache)
                    .shared(crate::session::SharedStore {
                        records: records.clone(),
                        logs: logs.clone(),
                        outage_wait: config.store_outage_wait,
                    });
                let copies = Arc::new(copies);
                Ok(RuntimeParts {
                    records: Arc::new(copies.clone()),
                    sessions: copies,
                    bundles,
                    journal: journal.clone(),
                })
            }
        }
    }
}

/// What [`Store::runtime_parts`] hands the runtime.
pub(crate) struct RuntimeParts {
    pub sessions: Arc<SessionStore>,
    pub bundles: Arc<BundleStore>,
    pub records: Arc<dyn SessionRecords>,
    pub journal: Arc<dyn TurnJournal>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("kind", &self.kind()).finish()
    }
}

#[cfg(test)]
mod tests;
