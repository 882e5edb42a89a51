//! The turn queue. Any replica submits; a replica with a free worker claims the oldest
//! turn that may run now: the first queued turn of its session (submission order within a
//! session), in a session with no running turn. Claims lock with `FOR UPDATE SKIP LOCKED`,
//! so claimers never wait on each other, and a unique index on running turns per session
//! refuses a second running turn even if two claims ever raced past the check.

use std::time::Duration;

use crate::error::{is_foreign_key_violation, is_unique_violation};
use crate::leases::millis;
use crate::{Store, StoreError};

/// How a turn ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TurnState {
    Completed,
    Failed,
    Cancelled,
    Interrupted,
}

impl TurnState {
    fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::Interrupted => "interrupted",
        }
    }
}

/// A turn a replica claimed and now runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimedTurn {
    pub id: String,
    pub session_id: String,
    /// Its place in the submission order (across sessions).
    pub position: i64,
    pub request: Vec<u8>,
}

impl Store {
    /// Queues a turn of a session; `request` is the runtime's encoded request.
    pub async fn submit_turn(
        &self,
        turn_id: &str,
        session_id: &str,
        request: &[u8],
    ) -> Result<i64, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_one(
                "INSERT INTO turns (id, session_id, request) VALUES ($1, $2, $3)
                 RETURNING position",
                &[&turn_id, &session_id, &request],
            )
            .await
            .map_err(|e| {
                if is_unique_violation(&e) {
                    StoreError::TurnExists(turn_id.to_owned())
                } else if is_foreign_key_violation(&e) {
                    StoreError::SessionNotFound(session_id.to_owned())
                } else {
                    StoreError::query("queue a turn")(e)
                }
            })?;
        Ok(row.get(0))
    }

    /// Claims the next turn that may run for `replica`, or `None` when none may.
    pub async fn claim_next_turn(&self, replica: &str) -> Result<Option<ClaimedTurn>, StoreError> {
        let client = self.client().await?;
        let claimed = client
            .query_opt(
                "UPDATE turns SET state = 'running', claimed_by = $1, claimed_at = clock_timestamp()
                 WHERE id = (
                     SELECT t.id FROM turns t
                     WHERE t.state = 'queued'
                       AND NOT EXISTS (SELECT 1 FROM turns r
                                       WHERE r.session_id = t.session_id AND r.state = 'running')
                       AND NOT EXISTS (SELECT 1 FROM turns e
                                       WHERE e.session_id = t.session_id AND e.state = 'queued'
                                         AND e.position < t.position)
                     ORDER BY t.position
                     LIMIT 1
                     FOR UPDATE SKIP LOCKED
                 ) AND state = 'queued'
                 RETURNING id, session_id, position, request",
                &[&replica],
            )
            .await;
        match claimed {
            Ok(row) => Ok(row.map(|row| ClaimedTurn {
                id: row.get(0),
                session_id: row.get(1),
                position: row.get(2),
                request: row.get(3),
            })),
            // Another replica started a turn of that session in the meantime: the index
            // kept it to one; this claimer found nothing to run.
            Err(e) if is_unique_violation(&e) => Ok(None),
            Err(e) => Err(StoreError::query("claim a turn")(e)),
        }
    }

    /// Records how a running turn of `replica` ended; the session's next turn may then be
    /// claimed.
    pub async fn finish_turn(
        &self,
        turn_id: &str,
        replica: &str,
        state: TurnState,
    ) -> Result<(), StoreError> {
        let client = self.client().await?;
        let changed = client
            .execute(
                "UPDATE turns SET state = $3, finished_at = clock_timestamp()
                 WHERE id = $1 AND claimed_by = $2 AND state = 'running'",
                &[&turn_id, &replica, &state.as_str()],
            )
            .await
            .map_err(StoreError::query("finish a turn"))?;
        if changed == 0 {
            return Err(StoreError::TurnNotRunning {
                turn_id: turn_id.to_owned(),
                holder: replica.to_owned(),
            });
        }
        Ok(())
    }

    /// Records as interrupted every running turn whose replica was not heard from within
    /// `silence` ([`Store::replica_alive`]): it died with the turn open, as a single server
    /// that crashed. Returns them, so that the caller records each in its session's log;
    /// the sessions' next turns may then be claimed by any replica.
    pub async fn interrupt_abandoned_turns(
        &self,
        silence: Duration,
    ) -> Result<Vec<ClaimedTurn>, StoreError> {
        let silence = millis(silence)?;
        let client = self.client().await?;
        let rows = client
            .query(
                "UPDATE turns t SET state = 'interrupted', finished_at = clock_timestamp()
                 WHERE t.state = 'running'
                   AND NOT EXISTS (
                       SELECT 1 FROM session_leases l
                       WHERE l.session_id = t.session_id AND l.holder = t.claimed_by
                         AND l.expires_at > clock_timestamp())
                   AND NOT EXISTS (
                       SELECT 1 FROM replicas r
                       WHERE r.id = t.claimed_by
                         AND r.seen_at > clock_timestamp() - $1::bigint * interval '1 millisecond')
                 RETURNING id, session_id, position, request",
                &[&silence],
            )
            .await
            .map_err(StoreError::query("interrupt abandoned turns"))?;
        Ok(rows
            .iter()
            .map(|row| ClaimedTurn {
                id: row.get(0),
                session_id: row.get(1),
                position: row.get(2),
                request: row.get(3),
            })
            .collect())
    }

    /// Turns of a session still queued, in the order they will run.
    pub async fn queued_turns(&self, session_id: &str) -> Result<Vec<String>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT id FROM turns WHERE session_id = $1 AND state = 'queued' ORDER BY position",
                &[&session_id],
            )
            .await
            .map_err(StoreError::query("read queued turns"))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }
}
