//! [`MemoryProvider`]: long-term memory in the database, so that every replica recalls
//! what any replica captured. A capture inserts the record and, in the same statement,
//! removes the scope's oldest records beyond the bounds (records and bytes), so what a
//! scope holds never grows past them; a recall reads the newest records within the
//! bounds, oldest first, as the file store does.

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use odyssey_runtime::memory::{MemoryError, MemoryProvider, MemoryRecord, MemoryScope};

use super::ReplicaStore;

/// How much one scope may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryLimits {
    pub max_records: usize,
    pub max_bytes: usize,
}

/// The replicas' shared long-term memory.
pub(crate) struct Memory {
    pub store: Arc<ReplicaStore>,
    pub limits: MemoryLimits,
}

fn failed(scope: &MemoryScope, what: &str, e: impl std::fmt::Display) -> MemoryError {
    MemoryError::Storage {
        context: format!("{what} the memory of {scope} in the database"),
        source: std::io::Error::other(e.to_string()),
    }
}

/// A capture, in one statement: inserts the record ($4, of $5 bytes) unless it alone
/// passes the bounds ($6 records, $7 bytes), and removes the scope's older records that
/// the bounds no longer hold with it (the statement's snapshot does not see the new row,
/// so each older record's rank and running bytes count it in).
const CAPTURE: &str = "WITH inserted AS (
        INSERT INTO memory_records (namespace, bundle, agent_id, record, bytes)
        SELECT $1, $2, $3, $4, $5::integer
        WHERE $6::bigint >= 1 AND $5::integer <= $7::bigint
        RETURNING id
    )
    DELETE FROM memory_records m
    USING (SELECT id,
                  row_number() OVER (ORDER BY id DESC) AS n,
                  sum(bytes) OVER (ORDER BY id DESC) AS running
           FROM memory_records
           WHERE namespace = $1 AND bundle = $2 AND agent_id = $3) k
    WHERE m.id = k.id AND (k.n + 1 > $6::bigint OR k.running + $5::integer > $7::bigint)";

/// The newest records of a scope within the bounds ($4 records, $5 bytes), oldest first.
const RECALL: &str = "SELECT record FROM (
        SELECT record, id, sum(bytes) OVER (ORDER BY id DESC) AS running
        FROM memory_records
        WHERE namespace = $1 AND bundle = $2 AND agent_id = $3
        ORDER BY id DESC
        LIMIT $4
    ) newest
    WHERE running <= $5
    ORDER BY id";

fn bound(value: usize) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

impl MemoryProvider for Memory {
    fn capture(
        &self,
        scope: MemoryScope,
        record: MemoryRecord,
    ) -> BoxFuture<'static, Result<(), MemoryError>> {
        let store = self.store.clone();
        let limits = self.limits;
        async move {
            let body = serde_json::to_vec(&record).map_err(|e| failed(&scope, "encode", e))?;
            let bytes = i32::try_from(body.len()).map_err(|e| failed(&scope, "size", e))?;
            let client = store
                .db
                .client()
                .await
                .map_err(|e| failed(&scope, "reach", e))?;
            let capture = client
                .prepare_cached(CAPTURE)
                .await
                .map_err(|e| failed(&scope, "write", e))?;
            client
                .execute(
                    &capture,
                    &[
                        &scope.namespace,
                        &scope.bundle,
                        &scope.agent_id,
                        &body,
                        &bytes,
                        &bound(limits.max_records),
                        &bound(limits.max_bytes),
                    ],
                )
                .await
                .map_err(|e| failed(&scope, "write", e))?;
            Ok(())
        }
        .boxed()
    }

    fn recall(
        &self,
        scope: MemoryScope,
        limit: usize,
    ) -> BoxFuture<'static, Result<Vec<MemoryRecord>, MemoryError>> {
        let store = self.store.clone();
        let limits = self.limits;
        async move {
            let client = store.db.client().await.map_err(|e| failed(&scope, "reach", e))?;
            let read = client
                .prepare_cached(RECALL)
                .await
                .map_err(|e| failed(&scope, "read", e))?;
            let rows = client
                .query(
                    &read,
                    &[
                        &scope.namespace,
                        &scope.bundle,
                        &scope.agent_id,
                        &bound(limit.min(limits.max_records)),
                        &bound(limits.max_bytes),
                    ],
                )
                .await
                .map_err(|e| failed(&scope, "read", e))?;
            let mut records = Vec::with_capacity(rows.len());
            for row in rows {
                let body: Vec<u8> = row.get(0);
                match serde_json::from_slice(&body) {
                    Ok(record) => records.push(record),
                    // A record written by a newer server, or changed by hand: left out,
                    // as the file store skips a line it cannot read.
                    Err(e) => tracing::warn!(scope = %scope, error = %e, "a memory record cannot be read; left out"),
                }
            }
            Ok(records)
        }
        .boxed()
    }
}
