//! [`Replicas`]: the replicas sharing the database, from the `replicas` table each one's
//! heartbeat keeps (every third of the lease time). A replica is alive while it was heard
//! from within the lease time, the time after which its leases are taken over.

use futures::FutureExt;
use futures::future::BoxFuture;
use odyssey_runtime::store::{ReplicaSeen, Replicas, StoreResult};

use super::{ReplicaStore, count, query, seam_error};
use crate::leases::millis;

impl Replicas for ReplicaStore {
    fn replica_id(&self) -> String {
        self.replica.clone()
    }

    fn replicas(&self) -> BoxFuture<'_, StoreResult<Vec<ReplicaSeen>>> {
        async move {
            let ttl = millis(self.lease_ttl).map_err(seam_error)?;
            let client = self.client().await?;
            let rows = client
                .query(
                    "SELECT id, (extract(epoch FROM seen_at) * 1000)::bigint,
                            seen_at > clock_timestamp() - $1::bigint * interval '1 millisecond'
                     FROM replicas ORDER BY id",
                    &[&ttl],
                )
                .await
                .map_err(query("read replicas"))?;
            Ok(rows
                .iter()
                .map(|row| ReplicaSeen {
                    id: row.get(0),
                    last_seen_ms: count(row.get(1)),
                    alive: row.get(2),
                })
                .collect())
        }
        .boxed()
    }
}
