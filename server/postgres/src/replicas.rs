//! The replicas serving one database: each says it is alive every few seconds.

use std::time::Duration;

use crate::leases::millis;
use crate::{Store, StoreError};

/// A replica, as last heard from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replica {
    pub id: String,
    /// How long ago it was last heard from, in milliseconds (database clock).
    pub silent_ms: i64,
}

impl Store {
    /// Records that `replica` is alive now (registering it the first time).
    pub async fn replica_alive(&self, replica: &str) -> Result<(), StoreError> {
        let client = self.client().await?;
        client
            .execute(
                "INSERT INTO replicas (id) VALUES ($1)
                 ON CONFLICT (id) DO UPDATE SET seen_at = clock_timestamp()",
                &[&replica],
            )
            .await
            .map_err(StoreError::query("record a replica"))?;
        Ok(())
    }

    /// The replicas heard from within `within`, by id.
    pub async fn live_replicas(&self, within: Duration) -> Result<Vec<Replica>, StoreError> {
        let within = millis(within)?;
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT id, (extract(epoch FROM clock_timestamp() - seen_at) * 1000)::bigint
                 FROM replicas
                 WHERE seen_at > clock_timestamp() - $1::bigint * interval '1 millisecond'
                 ORDER BY id",
                &[&within],
            )
            .await
            .map_err(StoreError::query("read replicas"))?;
        Ok(rows
            .iter()
            .map(|r| Replica {
                id: r.get(0),
                silent_ms: r.get(1),
            })
            .collect())
    }
}
