//! The PostgreSQL store against a real database (`ODYSSEY_TEST_DATABASE_URL`, started by
//! `scripts/test-postgres`): migrations, event logs under leases, the turn queue, the
//! wake-up of followers.

// A test step that fails is the test failing: unwrap and expect say where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod anywhere;
mod approvals;
mod bundles;
mod catalog;
mod database;
mod events;
mod handover;
mod leases;
mod listen;
mod memory;
mod migrations;
mod outage;
mod replica;
mod replicas;
mod replication;
mod runtime;
mod signals;
mod snapshots;
mod suite;
mod turns;
mod wakes;

use std::time::Duration;

/// Every wait of these tests ends: nothing here may hang the suite.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// A unique session id, so tests sharing the database (and its notifications) never meet.
pub fn session_id() -> String {
    format!("s-{}", uuid::Uuid::new_v4())
}

/// `n` events named `kind-1`, `kind-2`, ...
pub fn events(kind: &str, n: usize) -> Vec<odyssey_store_postgres::NewEvent> {
    (1..=n)
        .map(|i| odyssey_store_postgres::NewEvent {
            kind: kind.to_owned(),
            body: format!("{kind}-{i}").into_bytes(),
        })
        .collect()
}
