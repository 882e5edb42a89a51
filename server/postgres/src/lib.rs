//! Odyssey's PostgreSQL store: what several `odysseyd` replicas share in one database.
//!
//! Sessions and their event logs (rows keyed by session and sequence, gap-free), the turn
//! queue (claimed with `FOR UPDATE SKIP LOCKED`, one running turn per session, submission
//! order kept), session leases with fencing (a write under a taken-over lease, or at a
//! sequence another replica already wrote, is refused by the same statement that would
//! make it), approvals, signals for the replica running a turn, bundles, long-term memory
//! and the replicas themselves. The schema is versioned and migrated by [`Store::migrate`]
//! (`odysseyd migrate`).
//!
//! [`open_store`] gives the runtime this store behind its storage traits
//! ([`odyssey_runtime::store`]), as one replica (the rules it holds to are in
//! `seam/mod.rs`); `odysseyd` serves on it when a database URL is set (see
//! `docs/scale-out.md`), keeping in its home a copy of the sessions it serves.
//!
//! This crate knows nothing of gRPC or HTTP; it depends on the driver (`tokio-postgres`),
//! its pool (`deadpool-postgres`) and rustls only.

mod approvals;
mod bundles;
mod connect;
mod error;
mod events;
mod leases;
mod listen;
mod migrate;
mod replicas;
mod seam;
mod sessions;
mod turns;

pub use approvals::{ApprovalAnswer, StoredApproval};
pub use bundles::StoredBundle;
pub use connect::{CONNECT_PATIENCE, DEFAULT_MAX_CONNECTIONS, DatabaseConfig};
pub use error::StoreError;
pub use events::{NewEvent, StoredEvent};
pub use leases::Lease;
pub use listen::{
    APPROVALS_CHANNEL, EVENTS_CHANNEL, EventListener, EventsAppended, SESSIONS_DELETED_CHANNEL,
    TURN_SIGNALS_CHANNEL, Wake,
};
pub use migrate::{MIGRATIONS, Migration, MigrationReport, latest_version};
pub use replicas::Replica;
pub use seam::{
    DEFAULT_CLUSTER_QUEUE_LIMIT, DEFAULT_LEASE_TTL, MemoryLimits, StoreConfig, open_store,
};
pub use sessions::StoredSession;
pub use turns::{ClaimedTurn, TurnState};

use connect::Tls;

/// A pool of connections to one database.
#[derive(Clone)]
pub struct Store {
    pool: deadpool_postgres::Pool,
    tls: Tls,
    config: DatabaseConfig,
}

impl Store {
    /// A store over `config`'s database. No connection is made before the first call.
    pub fn new(config: DatabaseConfig) -> Result<Self, StoreError> {
        let (pool, tls) = config.pool()?;
        Ok(Self { pool, tls, config })
    }

    /// The database, without its password (for logs and messages).
    pub fn target(&self) -> String {
        self.config.target()
    }

    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        Ok(self.pool.get().await?)
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("database", &self.config)
            .finish_non_exhaustive()
    }
}
