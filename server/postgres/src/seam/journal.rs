//! [`TurnJournal`]: the sessions with a turn in flight, each by the replica running it, so
//! that a replica starting again under the same id repairs exactly its own.

use futures::FutureExt;
use futures::future::BoxFuture;
use odyssey_runtime::RuntimeError;
use odyssey_runtime::store::{StoreResult, TurnJournal};
use uuid::Uuid;

use super::{ReplicaStore, query, unreadable};
use crate::error::is_foreign_key_violation;

impl TurnJournal for ReplicaStore {
    fn turn_started(&self, session_id: Uuid) -> BoxFuture<'_, StoreResult<()>> {
        async move {
            let client = self.client().await?;
            client
                .execute(
                    "INSERT INTO open_turns (session_id, replica) VALUES ($1, $2)
                     ON CONFLICT (session_id) DO UPDATE
                         SET replica = excluded.replica, started_at = clock_timestamp()",
                    &[&session_id.to_string(), &self.replica],
                )
                .await
                .map_err(|e| {
                    if is_foreign_key_violation(&e) {
                        RuntimeError::not_found("session", session_id.to_string()).into()
                    } else {
                        query("record a turn in flight")(e)
                    }
                })?;
            Ok(())
        }
        .boxed()
    }

    fn turn_ended(&self, session_id: Uuid) -> BoxFuture<'_, StoreResult<()>> {
        async move {
            let client = self.client().await?;
            client
                .execute(
                    "DELETE FROM open_turns WHERE session_id = $1",
                    &[&session_id.to_string()],
                )
                .await
                .map_err(query("record a turn's end"))?;
            Ok(())
        }
        .boxed()
    }

    /// This replica's: the turns of a replica that died are another replica's to repair
    /// once it takes the sessions over (later work).
    fn open_turns(&self) -> BoxFuture<'_, StoreResult<Vec<Uuid>>> {
        async move {
            let client = self.client().await?;
            let rows = client
                .query(
                    "SELECT session_id FROM open_turns WHERE replica = $1 ORDER BY started_at",
                    &[&self.replica],
                )
                .await
                .map_err(query("read the turns in flight"))?;
            rows.iter()
                .map(|row| {
                    let id: &str = row.get(0);
                    Uuid::parse_str(id).map_err(|e| unreadable(format!("session id {id}"), e))
                })
                .collect()
        }
        .boxed()
    }
}
