//! The schema's versions, carried in the binary and applied in order under an advisory
//! lock, so replicas starting together migrate once. Every applied migration is recorded
//! in `schema_migrations` with a checksum of its text: a database migrated by a newer
//! odysseyd, or by a different text of the same version, is refused rather than used.

use sha2::{Digest, Sha256};

use crate::{Store, StoreError};

/// One version of the schema.
pub struct Migration {
    pub version: i64,
    pub name: &'static str,
    pub sql: &'static str,
}

/// Every migration, oldest first; a new one goes at the end with the next version.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "sessions, events, leases, turns, approvals, bundles, replicas",
        sql: include_str!("../migrations/0001_schema.sql"),
    },
    Migration {
        version: 2,
        name: "session totals and quarantine, queue owners and order, open turns",
        sql: include_str!("../migrations/0002_runtime_store.sql"),
    },
    Migration {
        version: 3,
        name: "a deletion of sessions notifies the replicas",
        sql: include_str!("../migrations/0003_session_deleted.sql"),
    },
    Migration {
        version: 4,
        name: "long-term memory shared by the replicas",
        sql: include_str!("../migrations/0004_memory.sql"),
    },
    Migration {
        version: 5,
        name: "signals for the replica running a turn",
        sql: include_str!("../migrations/0005_turn_signals.sql"),
    },
];

/// The advisory lock key migrations run under (`odyssey1` in ASCII).
const MIGRATION_LOCK: i64 = 0x6f64_7973_7365_7931;

/// What [`Store::migrate`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MigrationReport {
    /// The schema version before.
    pub from: i64,
    /// The schema version now.
    pub to: i64,
    /// The versions applied, with their names.
    pub applied: Vec<(i64, &'static str)>,
}

/// The newest schema version this build knows.
pub fn latest_version() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

fn checksum(sql: &str) -> String {
    hex::encode(Sha256::digest(sql.as_bytes()))
}

impl Store {
    /// Brings the schema to [`latest_version`]: one transaction under a transaction-level
    /// advisory lock, so two replicas migrating at once apply each migration once, and a
    /// failed migration leaves the database as it was.
    pub async fn migrate(&self) -> Result<MigrationReport, StoreError> {
        let mut client = self.client().await?;
        let tx = client
            .transaction()
            .await
            .map_err(StoreError::query("begin the migration"))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .await
            .map_err(StoreError::query("take the migration lock"))?;
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (
                 version    bigint PRIMARY KEY,
                 name       text NOT NULL,
                 checksum   text NOT NULL,
                 applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
             )",
        )
        .await
        .map_err(StoreError::query("create schema_migrations"))?;
        let rows = tx
            .query(
                "SELECT version, checksum FROM schema_migrations ORDER BY version",
                &[],
            )
            .await
            .map_err(StoreError::query("read schema_migrations"))?;
        let applied: Vec<(i64, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        let from = applied.last().map_or(0, |(v, _)| *v);
        if from > latest_version() {
            return Err(StoreError::SchemaTooNew {
                found: from,
                known: latest_version(),
            });
        }
        for (version, sum) in &applied {
            let known = MIGRATIONS.iter().find(|m| m.version == *version);
            match known {
                Some(m) if checksum(m.sql) == *sum => {}
                Some(m) => {
                    return Err(StoreError::MigrationChanged {
                        version: *version,
                        name: m.name.to_owned(),
                    });
                }
                None => {
                    return Err(StoreError::MigrationChanged {
                        version: *version,
                        name: "unknown to this odysseyd".to_owned(),
                    });
                }
            }
        }
        let mut report = MigrationReport {
            from,
            to: from,
            applied: Vec::new(),
        };
        for migration in MIGRATIONS.iter().filter(|m| m.version > from) {
            tx.batch_execute(migration.sql)
                .await
                .map_err(StoreError::query("apply a migration"))?;
            tx.execute(
                "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                &[
                    &migration.version,
                    &migration.name,
                    &checksum(migration.sql),
                ],
            )
            .await
            .map_err(StoreError::query("record a migration"))?;
            report.applied.push((migration.version, migration.name));
            report.to = migration.version;
        }
        tx.commit()
            .await
            .map_err(StoreError::query("commit the migration"))?;
        if !report.applied.is_empty() {
            tracing::info!(
                database = %self.target(),
                from = report.from,
                to = report.to,
                "database schema migrated"
            );
        }
        Ok(report)
    }

    /// The schema version the database is at (0: never migrated).
    pub async fn schema_version(&self) -> Result<i64, StoreError> {
        let client = self.client().await?;
        let exists: bool = client
            .query_one("SELECT to_regclass('schema_migrations') IS NOT NULL", &[])
            .await
            .map_err(StoreError::query("look for schema_migrations"))?
            .get(0);
        if !exists {
            return Ok(0);
        }
        let row = client
            .query_one(
                "SELECT coalesce(max(version), 0)::bigint FROM schema_migrations",
                &[],
            )
            .await
            .map_err(StoreError::query("read the schema version"))?;
        Ok(row.get(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_grow_one_by_one_from_one() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version, i as i64 + 1, "{}", m.name);
        }
    }
}
