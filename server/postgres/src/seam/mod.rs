//! The runtime's storage traits ([`odyssey_runtime::store`]) over this crate's tables:
//! [`open_store`] hands the runtime a [`odyssey_runtime::store::Store`] whose parts all
//! work on one database, as one replica.
//!
//! # One store, one replica
//!
//! A store opened here is one replica (its id is given to [`open_store`]). What it does
//! as that replica:
//!
//! - **Events and fencing.** An append is one statement that checks the session's lease,
//!   moves the session's last sequence only if it is the one the caller expected, and
//!   writes the rows (primary key (session, sequence)), so the per-session sequence stays
//!   gap-free across replicas. A replica holds a session's lease from the moment it claims
//!   one of its turns until the turn finishes (renewed by a heartbeat every third of
//!   [`StoreConfig::lease_ttl`]). The rule, checked by the database in the append itself:
//!   - while this replica holds the session's lease, it appends only under that very lease
//!     (same holder, same epoch): once another replica took the lease over, the lease is
//!     lost for good;
//!   - holding no lease, it appends only if no other replica holds a live lease on the
//!     session.
//!
//!   Either refusal writes nothing and answers
//!   [`odyssey_runtime::store::StoreError::Fenced`], saying who holds the session. A stale
//!   expected sequence is [`odyssey_runtime::store::StoreError::SequenceConflict`].
//!
//!   A lease that expired and that nobody took over stays its holder's (its heartbeat
//!   renews it again): the database going away for longer than a lease stops no turn.
//!   Whoever wrote to the session meanwhile (a replica recording the turn of a replica it
//!   found stopped as interrupted, holding no lease) moved its last sequence, so the
//!   holder's next append is refused as a [`odyssey_runtime::store::StoreError::SequenceConflict`]
//!   and lands nothing either.
//! - **The queue.** Turns are rows; a claim takes the oldest turn that heads its session's
//!   waiting turns, in a session with no running turn and no live lease of another
//!   replica, with `FOR UPDATE SKIP LOCKED`, and takes the session's lease in the same
//!   statement; a unique index keeps one running turn per session whatever races.
//!   Pushes are counted against [`StoreConfig::queue_capacity`] (the turns this replica
//!   submitted that wait: exact, as a replica makes its pushes one at a time) and
//!   [`StoreConfig::cluster_queue_limit`] (all that wait: replicas pushing at the same
//!   moment each count the others' committed pushes only, so with N replicas the queue
//!   can pass the limit by at most N − 1 turns).
//! - **Who runs a turn.** A replica claims the turns submitted through it, and those of
//!   a replica not heard from within the lease time (it stopped): any replica may finish
//!   a stopped replica's queue. A [`odyssey_runtime::store::Job`] is plain data (the
//!   execution id and its request), stored whole, so the claiming replica rebuilds it. The
//!   running turns of a stopped replica are recorded as interrupted by
//!   [`odyssey_runtime::store::TurnQueue::take_abandoned`], which the runtime of every
//!   replica calls now and then, and closes in their sessions' logs. (What the runtime
//!   keeps in memory per execution, its status and waiters, stays on the replica that
//!   accepted it; another replica answers for the turn from its session's log.)
//! - **Bundles** are stored whole in the database by digest (visible to every replica) and
//!   unpacked into this replica's own bundle folder on first use, where the runtime's
//!   checks of an installed bundle apply as in the file store. The folder is the catalog
//!   the runtime resolves names in; [`odyssey_runtime::store::Bundles::refresh_catalog`]
//!   makes it match the database (done once at open, then when the runtime asks).
//! - **Wake-ups.** One connection per store listens for the schema's notifications; a
//!   task owned by the store turns them into [`odyssey_runtime::store::LogWake`]s
//!   (`Grew`, `Deleted`) for every receiver of
//!   [`odyssey_runtime::store::EventLogs::wake_ups`]. When that connection is lost, the
//!   task connects again (100 ms, doubling to 5 s) and then sends `Resync`: what was
//!   notified meanwhile is lost, the rows are not.
//! - **Signals.** A decision, an answer for input or a cancel reaching a replica that
//!   does not hold the turn it is for is a row of `turn_signals`
//!   ([`odyssey_runtime::store::TurnSignals`]), addressed by the statement writing it to
//!   the replica running the turn (or holding it queued) and notified to it; that
//!   replica's listening connection reads the row and hands it to its runtime (see
//!   `signals.rs`). Heartbeats delete rows older than five minutes.
//! - **Outages.** A call that cannot reach the database (no connection within
//!   [`crate::CONNECT_PATIENCE`], a connection lost or shut down) answers
//!   [`odyssey_runtime::store::StoreError::Unavailable`]; the pool connects again on the
//!   next call.

mod bundles;
mod journal;
mod logs;
mod memory;
mod queue;
mod records;
mod replicas;
mod signals;
mod wakes;

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use odyssey_runtime::RuntimeConfig;
use odyssey_runtime::bundle::{ArchiveLimits, BundleStore};
use odyssey_runtime::session::QuarantinedSession;
use odyssey_runtime::store::{LogWake, StoreError as SeamError, TurnSignal};
use tokio::sync::{broadcast, oneshot};
use uuid::Uuid;

pub use self::memory::MemoryLimits;
use crate::leases::millis;
use crate::{DatabaseConfig, Store, StoreError};

/// How long a lease lasts unless renewed, when not told otherwise.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(10);

/// Turns that may wait across all replicas, when not told otherwise.
pub const DEFAULT_CLUSTER_QUEUE_LIMIT: usize = 10_000;

/// Longest replica id accepted.
const MAX_REPLICA_ID_LEN: usize = 128;

/// What [`open_store`] needs.
#[derive(Clone, Debug)]
pub struct StoreConfig {
    pub database: DatabaseConfig,
    /// This replica's own folder of unpacked bundles (the runtime's `<home>/bundles`).
    pub bundles_dir: PathBuf,
    pub archive_limits: ArchiveLimits,
    /// Turns submitted through this replica that may wait at once.
    pub queue_capacity: usize,
    /// Turns that may wait at once across every replica (passed by at most one turn per
    /// other replica pushing at the same moment).
    pub cluster_queue_limit: usize,
    /// How long a session's lease lasts unless renewed.
    pub lease_ttl: Duration,
    /// What long-term memory keeps per scope (one agent of one bundle).
    pub memory: MemoryLimits,
}

impl StoreConfig {
    /// The database, with the rest taken from the runtime's configuration.
    pub fn new(database: DatabaseConfig, runtime: &RuntimeConfig) -> Self {
        // Each running turn may hold a connection at a time (a push, a read), besides the
        // RPCs and the heartbeat: a pool smaller than the workers makes turns wait for
        // connections under load.
        let wanted = runtime.worker_count * 2 + 8;
        let database = if database.max_connections() < wanted {
            database.with_max_connections(wanted)
        } else {
            database
        };
        Self {
            database,
            bundles_dir: runtime.bundles_dir(),
            archive_limits: runtime.archive_limits,
            queue_capacity: runtime.queue_capacity,
            cluster_queue_limit: DEFAULT_CLUSTER_QUEUE_LIMIT,
            lease_ttl: DEFAULT_LEASE_TTL,
            memory: MemoryLimits {
                max_records: runtime.memory.max_records,
                max_bytes: runtime.memory.max_bytes,
            },
        }
    }
}

/// Opens the PostgreSQL store as replica `replica`: migrates the schema (under the
/// migration lock, so replicas starting together migrate once), records the replica as
/// alive, and starts its heartbeat (replica liveness, lease renewals), which stops when
/// the store is dropped.
pub async fn open_store(
    config: StoreConfig,
    replica: &str,
) -> Result<odyssey_runtime::store::Store, StoreError> {
    check_replica_id(replica)?;
    millis(config.lease_ttl)?;
    let db = Store::new(config.database.clone())?;
    db.migrate().await?;
    db.replica_alive(replica).await?;
    let bundles = BundleStore::open(config.bundles_dir.clone())
        .map_err(|e| StoreError::InvalidArgument(format!("the bundle folder: {e}")))?
        .with_limits(config.archive_limits);
    let bundles = Arc::new(bundles);
    // Listening before anything else is read: what is appended from now on wakes.
    let listener = db
        .listen_for_events_as(&wakes::application_name(replica))
        .await?;
    let (wakes_sender, _) = broadcast::channel(wakes::CAPACITY);
    let (signals_sender, _) = broadcast::channel(signals::CAPACITY);
    let (stop_following, stopped) = oneshot::channel();
    let store = Arc::new(ReplicaStore {
        db,
        replica: replica.to_owned(),
        lease_ttl: config.lease_ttl,
        queue_capacity: config.queue_capacity,
        cluster_queue_limit: config.cluster_queue_limit,
        queued: AtomicUsize::new(0),
        closed: AtomicBool::new(false),
        leases: Mutex::new(HashMap::new()),
        pushing: tokio::sync::Mutex::new(()),
        claims: Mutex::new(HashMap::new()),
        quarantined: Mutex::new(Vec::new()),
        bundles: bundles.clone(),
        catalog: tokio::sync::Mutex::new(()),
        wakes: wakes_sender,
        signals: signals_sender,
        first_signal: AtomicI64::new(0),
        delivered: Mutex::new(BTreeSet::new()),
        _stop_following: stop_following,
        healthy_since: Mutex::new(Some(std::time::Instant::now())),
        left_running: Mutex::new(Vec::new()),
    });
    // Signals written before this replica listened are not for this process.
    let newest = store
        .newest_signal()
        .await
        .map_err(|e| StoreError::Open(e.to_string()))?;
    store.first_signal.store(newest, Ordering::Release);
    store
        .refresh()
        .await
        .map_err(|e| StoreError::Open(e.to_string()))?;
    store
        .take_left_running()
        .await
        .map_err(|e| StoreError::Open(format!("the turns left running: {e}")))?;
    odyssey_runtime::store::Bundles::refresh_catalog(&*store)
        .await
        .map_err(|e| StoreError::Open(format!("the bundle catalog: {e}")))?;
    spawn_heartbeat(&store);
    wakes::spawn_follower(&store, listener, stopped);
    Ok(odyssey_runtime::store::Store::from_parts(
        "postgres",
        store.clone(),
        store.clone(),
        store.clone(),
        store.clone(),
        store.clone(),
    )
    .with_bundle_catalog(bundles)
    .with_memory(Arc::new(memory::Memory {
        store: store.clone(),
        limits: config.memory,
    }))
    .with_replicas(store.clone())
    .with_turn_signals(store))
}

fn check_replica_id(replica: &str) -> Result<(), StoreError> {
    let fine = !replica.is_empty()
        && replica.len() <= MAX_REPLICA_ID_LEN
        && replica
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if fine {
        Ok(())
    } else {
        Err(StoreError::InvalidArgument(format!(
            "`{replica}` is not a replica id: 1 to {MAX_REPLICA_ID_LEN} letters, digits, `-`, `_` or `.`"
        )))
    }
}

/// A turn this replica claimed, until the runtime finishes it.
struct Claim {
    /// The turn's id (its execution's).
    turn: String,
    /// The epoch of the session's lease the claim took.
    epoch: i64,
    /// The append that stored the turn's end also ended the turn and gave the lease back:
    /// finishing it has nothing left to do.
    ended: bool,
}

/// One replica's view of the database: what the traits are implemented on.
pub(crate) struct ReplicaStore {
    db: Store,
    replica: String,
    lease_ttl: Duration,
    queue_capacity: usize,
    cluster_queue_limit: usize,
    /// Turns this replica submitted that wait, as of its last queue operation or
    /// heartbeat (another replica may have taken one out since).
    queued: AtomicUsize,
    closed: AtomicBool,
    /// The sessions whose lease this replica took when it claimed a turn, by epoch.
    leases: Mutex<HashMap<Uuid, i64>>,
    /// Held while this replica pushes a turn: its pushes are counted one after another,
    /// so its own limit holds exactly (see `queue.rs`).
    pushing: tokio::sync::Mutex<()>,
    /// The turns this replica claimed and has not finished, per session, oldest first
    /// (see `queue.rs`).
    claims: Mutex<HashMap<Uuid, VecDeque<Claim>>>,
    /// The quarantined sessions, as of the last write of this replica or heartbeat.
    quarantined: Mutex<Vec<QuarantinedSession>>,
    bundles: Arc<BundleStore>,
    /// Held while this replica's bundle folder is changed (an install, a deletion, a
    /// refresh), so that a refresh never removes a bundle being installed here.
    catalog: tokio::sync::Mutex<()>,
    /// The wake-ups of logs, sent by the follower task (see `wakes.rs`).
    wakes: broadcast::Sender<LogWake>,
    /// The signals sent to this replica, read by the follower task (see `signals.rs`).
    signals: broadcast::Sender<TurnSignal>,
    /// The newest signal written before this replica listened: later ones may be for it.
    first_signal: AtomicI64,
    /// The signals handed on lately (see `signals.rs`).
    delivered: Mutex<BTreeSet<i64>>,
    /// Dropped with the store, which stops the follower task.
    _stop_following: oneshot::Sender<()>,
    /// Since when this replica's heartbeats have all reached the database (`None` after
    /// one failed). Only a replica that has been heard from for a whole lease time judges
    /// others stopped: after an outage every replica looks silent for a while.
    healthy_since: Mutex<Option<std::time::Instant>>,
    /// Sessions whose turn a previous process of this replica left running (it stopped
    /// with them): recorded as interrupted in the queue at open, handed to the runtime by
    /// the first [`odyssey_runtime::store::TurnQueue::take_abandoned`] to be closed in the
    /// sessions' logs.
    left_running: Mutex<Vec<Uuid>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl ReplicaStore {
    async fn client(&self) -> Result<deadpool_postgres::Object, SeamError> {
        self.db.client().await.map_err(seam_error)
    }

    fn held_epoch(&self, session_id: Uuid) -> Option<i64> {
        lock(&self.leases).get(&session_id).copied()
    }

    /// Records as interrupted the turns a previous process of this replica left running
    /// (no one else may claim their sessions while they are), keeping their sessions for
    /// the runtime to close.
    async fn take_left_running(&self) -> Result<(), SeamError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "UPDATE turns SET state = 'interrupted', finished_at = clock_timestamp()
                 WHERE state = 'running' AND claimed_by = $1
                 RETURNING session_id",
                &[&self.replica],
            )
            .await
            .map_err(query("interrupt the turns a previous start left running"))?;
        let sessions = rows
            .iter()
            .filter_map(|row| Uuid::parse_str(row.get::<_, &str>(0)).ok())
            .collect();
        *lock(&self.left_running) = sessions;
        Ok(())
    }

    /// Whether this replica's heartbeats have reached the database for a whole lease time,
    /// so that another replica's silence means that one stopped, not that the database
    /// (or this replica's way to it) was away.
    fn heard_for_a_lease(&self) -> bool {
        lock(&self.healthy_since).is_some_and(|since| since.elapsed() >= self.lease_ttl)
    }

    /// One beat: the replica is alive, its leases are renewed, and the counts that the
    /// traits answer synchronously are read again. A lease given back (its turn finished)
    /// expires at `-infinity`, which no beat renews: a beat racing the finish (the lease
    /// still listed here) cannot keep a session from the next claimer.
    async fn heartbeat(&self) -> Result<(), SeamError> {
        self.db
            .replica_alive(&self.replica)
            .await
            .map_err(seam_error)?;
        let (sessions, epochs): (Vec<String>, Vec<i64>) = lock(&self.leases)
            .iter()
            .map(|(s, e)| (s.to_string(), *e))
            .unzip();
        if !sessions.is_empty() {
            let ttl = millis(self.lease_ttl).map_err(seam_error)?;
            let client = self.client().await?;
            client
                .execute(
                    "UPDATE session_leases l
                     SET expires_at = clock_timestamp() + $2::bigint * interval '1 millisecond'
                     FROM unnest($3::text[], $4::bigint[]) AS h (session_id, epoch)
                     WHERE l.session_id = h.session_id AND l.epoch = h.epoch AND l.holder = $1
                       AND l.expires_at <> '-infinity'",
                    &[&self.replica, &ttl, &sessions, &epochs],
                )
                .await
                .map_err(query("renew leases"))?;
        }
        self.delete_old_signals().await?;
        self.refresh().await
    }

    /// Reads again what the traits answer without waiting: the turns this replica
    /// submitted that wait, and the quarantined sessions. Forgets the turns that ended
    /// more than an hour ago (their sessions' logs say how they ended; until then any
    /// replica finds a turn's session by its id).
    async fn refresh(&self) -> Result<(), SeamError> {
        let client = self.client().await?;
        client
            .execute(
                "DELETE FROM turns WHERE state IN ('completed', 'interrupted')
                 AND finished_at < clock_timestamp() - interval '1 hour'",
                &[],
            )
            .await
            .map_err(query("forget old interrupted turns"))?;
        let queued: i64 = client
            .query_one(
                "SELECT count(*) FROM turns WHERE state = 'queued' AND submitted_by = $1",
                &[&self.replica],
            )
            .await
            .map_err(query("count queued turns"))?
            .get(0);
        self.queued
            .store(usize::try_from(queued).unwrap_or(0), Ordering::Relaxed);
        let rows = client
            .query(
                "SELECT id, coalesce(quarantine_reason, ''),
                        (extract(epoch FROM quarantined_at) * 1000)::bigint
                 FROM sessions WHERE quarantined_at IS NOT NULL
                 ORDER BY quarantined_at",
                &[],
            )
            .await
            .map_err(query("read quarantined sessions"))?;
        *lock(&self.quarantined) = rows
            .iter()
            .map(|row| QuarantinedSession {
                session_id: row.get(0),
                reason: row.get(1),
                quarantined_at_ms: u64::try_from(row.get::<_, i64>(2)).unwrap_or(0),
            })
            .collect();
        Ok(())
    }
}

fn spawn_heartbeat(store: &Arc<ReplicaStore>) {
    let weak = Arc::downgrade(store);
    let every = (store.lease_ttl / 3).max(Duration::from_millis(20));
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            let Some(store) = weak.upgrade() else {
                return;
            };
            match store.heartbeat().await {
                Ok(()) => {
                    lock(&store.healthy_since).get_or_insert_with(std::time::Instant::now);
                }
                Err(e) => {
                    *lock(&store.healthy_since) = None;
                    tracing::warn!(replica = %store.replica, error = %e, "the store's heartbeat failed");
                }
            }
        }
    });
}

/// The runtime's form of this crate's errors.
pub(crate) fn seam_error(e: StoreError) -> SeamError {
    use odyssey_runtime::RuntimeError;
    if e.is_unavailable() {
        return SeamError::Unavailable(e.to_string());
    }
    match e {
        StoreError::SessionNotFound(id) => RuntimeError::not_found("session", id).into(),
        StoreError::SessionExists(id) => {
            RuntimeError::FailedPrecondition(format!("session {id} already exists")).into()
        }
        StoreError::BundleCorrupted(digest) => odyssey_runtime::bundle::BundleError::Corrupt {
            path: PathBuf::from(format!("database:bundles/{digest}")),
            message:
                "its archive in the database no longer matches the SHA-256 recorded at install"
                    .to_owned(),
        }
        .into(),
        other => RuntimeError::storage(
            "the PostgreSQL store",
            std::io::Error::other(other.to_string()),
        )
        .into(),
    }
}

/// A failed statement, in the runtime's form.
pub(crate) fn query(what: &'static str) -> impl FnOnce(tokio_postgres::Error) -> SeamError {
    move |e| seam_error(StoreError::query(what)(e))
}

/// A row the store cannot read back (written by a newer server, or changed by hand).
pub(crate) fn unreadable(what: String, e: impl std::fmt::Display) -> SeamError {
    odyssey_runtime::RuntimeError::storage(
        format!("the PostgreSQL store: {what} cannot be read"),
        std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()),
    )
    .into()
}

/// A u64 of the runtime as a column (bigint).
pub(crate) fn column(value: u64, what: &str) -> Result<i64, SeamError> {
    i64::try_from(value).map_err(|_| {
        odyssey_runtime::RuntimeError::invalid(what, format!("{value} does not fit the database"))
            .into()
    })
}

/// A bigint column as the runtime's u64 (the schema keeps them non-negative).
pub(crate) fn count(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::check_replica_id;

    #[test]
    fn a_replica_id_is_a_short_plain_name() {
        for good in ["a", "replica-1", "host.example_2"] {
            assert!(check_replica_id(good).is_ok(), "{good}");
        }
        for bad in ["", "a b", "a:b", "é", &"r".repeat(129)] {
            assert!(check_replica_id(bad).is_err(), "{bad}");
        }
    }
}
