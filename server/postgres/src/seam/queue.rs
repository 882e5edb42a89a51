//! [`TurnQueue`]: the turns table as the queue. See the module above for what a claim
//! takes (the session's lease with it) and whose turns a replica claims.
//!
//! Order: within a session, by `coalesce(sort_key, position)` (a turn placed first gets a
//! key below the session's waiting turns); across sessions, the head turns by the same key,
//! so the session whose next turn was submitted first runs first, and a busy session's
//! later turns wait behind other sessions' earlier ones.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::Ordering;

use futures::FutureExt;
use futures::future::BoxFuture;
use odyssey_runtime::model::ModelSpec;
use odyssey_runtime::store::{
    Job, Located, Placed, Placement, StoreError as SeamError, StoreResult, TurnQueue,
};
use odyssey_runtime::{ExecutionRequest, RuntimeError};
use serde::{Deserialize, Serialize};
use tokio_postgres::Row;
use uuid::Uuid;

use super::{Claim, ReplicaStore, lock, query, unreadable};
use crate::error::{is_foreign_key_violation, is_unique_violation};
use crate::leases::millis;

/// One push, in one statement: counts this replica's and all waiting turns, and inserts
/// the turn only when both are below their limits ($6, $7), placed first ($5) below the
/// session's waiting turns. Answers the counts as they were, the session's running turn
/// and its waiting turns.
///
/// No lock spans replicas: a replica makes its pushes one at a time (so its own count is
/// exact), and replicas pushing at the same moment each see the others' committed pushes
/// only, so the cluster-wide count can pass its limit by at most one turn per other
/// replica pushing then.
const PUSH: &str = "WITH counts AS (
        SELECT count(*) FILTER (WHERE submitted_by = $4) AS mine,
               count(*) AS total,
               (SELECT id FROM turns WHERE session_id = $2 AND state = 'running' LIMIT 1) AS running,
               count(*) FILTER (WHERE session_id = $2) AS waiting,
               min(coalesce(sort_key, position)) FILTER (WHERE session_id = $2) AS lowest
        FROM turns WHERE state = 'queued'
    ), inserted AS (
        INSERT INTO turns (id, session_id, request, submitted_by, sort_key)
        SELECT $1, $2, $3, $4, CASE WHEN $5 THEN counts.lowest - 1 END
        FROM counts WHERE counts.mine < $6 AND counts.total < $7
        RETURNING id
    )
    SELECT mine, total, running, waiting FROM counts";

/// A claim, in one statement: finds the oldest turn that heads its session's waiting
/// turns, in a session with no running turn and no live lease of another replica, among
/// the turns this replica submitted and those of replicas not heard from within the lease
/// time ($2), locking it (`FOR UPDATE SKIP LOCKED`: two claims never take one row); takes
/// the session's lease (a new one, an expired one, or this replica's own, with the next
/// epoch); and only under that lease marks the turn running. The unique index of running
/// turns refuses a second running turn of a session (the whole statement fails, nothing
/// of it stays). Answers the turn, its session, the epoch (none: the lease went to
/// another replica after the turn was found, and nothing changed) and whether it started.
const CLAIM: &str = "WITH found AS (
        SELECT t.id, t.request, t.session_id FROM turns t
        WHERE t.state = 'queued'
          AND (t.submitted_by = $1
               OR NOT EXISTS (SELECT 1 FROM replicas s
                              WHERE s.id = t.submitted_by
                                AND s.seen_at > clock_timestamp()
                                    - $2::bigint * interval '1 millisecond'))
          AND NOT EXISTS (SELECT 1 FROM turns r
                          WHERE r.session_id = t.session_id AND r.state = 'running')
          AND NOT EXISTS (SELECT 1 FROM turns e
                          WHERE e.session_id = t.session_id AND e.state = 'queued'
                            AND coalesce(e.sort_key, e.position)
                                < coalesce(t.sort_key, t.position))
          AND NOT EXISTS (SELECT 1 FROM session_leases l
                          WHERE l.session_id = t.session_id AND l.holder <> $1
                            AND l.expires_at > clock_timestamp())
        ORDER BY coalesce(t.sort_key, t.position)
        LIMIT 1
        FOR UPDATE OF t SKIP LOCKED
    ), lease AS (
        INSERT INTO session_leases AS l (session_id, holder, epoch, acquired_at, expires_at)
        SELECT found.session_id, $1, 1, clock_timestamp(),
               clock_timestamp() + $2::bigint * interval '1 millisecond'
        FROM found
        ON CONFLICT (session_id) DO UPDATE
            SET holder = excluded.holder,
                epoch = l.epoch + 1,
                acquired_at = excluded.acquired_at,
                expires_at = excluded.expires_at
            WHERE l.expires_at <= clock_timestamp() OR l.holder = excluded.holder
        RETURNING l.epoch
    ), started AS (
        UPDATE turns t SET state = 'running', claimed_by = $1, claimed_at = clock_timestamp()
        FROM found, lease
        WHERE t.id = found.id AND t.state = 'queued'
        RETURNING t.id
    )
    SELECT found.id, found.request, found.session_id,
           (SELECT epoch FROM lease), EXISTS (SELECT 1 FROM started)
    FROM found";

/// Ends the turn this replica claimed ($1, of session $2) and gives back the lease the
/// claim took ($3, $4: this replica, the epoch). By the turn's id: a later turn of the
/// session is not this one.
const FINISH_TURN: &str = "WITH ended AS (
        UPDATE turns SET state = 'completed', finished_at = clock_timestamp()
        WHERE id = $1 AND state = 'running' AND claimed_by = $3
    )
    UPDATE session_leases SET expires_at = '-infinity'
    WHERE session_id = $2 AND holder = $3 AND epoch = $4::bigint";

/// Ends this replica's running turn of session $1 (claimed by a process of this replica
/// before this one) and gives its lease back ($2, $3: this replica, the epoch it holds).
const FINISH_SESSION: &str = "WITH ended AS (
        UPDATE turns SET state = 'completed', finished_at = clock_timestamp()
        WHERE session_id = $1 AND state = 'running' AND claimed_by = $2
    )
    UPDATE session_leases SET expires_at = '-infinity'
    WHERE session_id = $1 AND holder = $2 AND epoch = $3::bigint";

/// Takes out a turn no replica can read (it would block its session for good), and gives
/// back the lease its claim took ($3, $4: this replica, the epoch; none when the claim
/// took none).
const DROP_UNREADABLE: &str = "WITH dropped AS (DELETE FROM turns WHERE id = $1)
    UPDATE session_leases SET expires_at = '-infinity'
    WHERE session_id = $2 AND holder = $3 AND epoch = $4::bigint";

/// A turn's request as stored: every field of [`ExecutionRequest`] (the conversions
/// below name them all, so a new field fails to compile until it is stored too).
#[derive(Serialize, Deserialize)]
struct StoredRequest {
    session_id: Uuid,
    prompt: String,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    model: Option<ModelSpec>,
    #[serde(default)]
    metadata: BTreeMap<String, String>,
}

fn encode(request: &ExecutionRequest) -> StoreResult<Vec<u8>> {
    let ExecutionRequest {
        session_id,
        prompt,
        cwd,
        model,
        metadata,
    } = request.clone();
    let stored = StoredRequest {
        session_id,
        prompt,
        cwd,
        model,
        metadata,
    };
    serde_json::to_vec(&stored).map_err(|e| unreadable(format!("a turn of {session_id}"), e))
}

/// A queued turn's row (`id, request`) as the job the runtime queued.
fn job_from(row: &Row) -> StoreResult<Job> {
    let id: &str = row.get(0);
    let body: &[u8] = row.get(1);
    let execution_id = Uuid::parse_str(id).map_err(|e| unreadable(format!("turn id {id}"), e))?;
    let StoredRequest {
        session_id,
        prompt,
        cwd,
        model,
        metadata,
    } = serde_json::from_slice(body).map_err(|e| unreadable(format!("turn {id}"), e))?;
    Ok(Job {
        execution_id,
        request: ExecutionRequest {
            session_id,
            prompt,
            cwd,
            model,
            metadata,
        },
    })
}

impl ReplicaStore {
    /// Runs one of the statements that end a turn and give its lease back.
    async fn end_turn(
        &self,
        statement: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> StoreResult<()> {
        let client = self.client().await?;
        let finish = client
            .prepare_cached(statement)
            .await
            .map_err(query("prepare finishing a turn"))?;
        client
            .execute(&finish, params)
            .await
            .map_err(query("finish a turn"))?;
        Ok(())
    }

    /// Jobs from deleted queued rows (`id, request, submitted_by`), counting this
    /// replica's out of [`ReplicaStore::queued`].
    fn taken_out(&self, rows: &[Row]) -> StoreResult<Vec<Job>> {
        let mine = rows
            .iter()
            .filter(|r| r.get::<_, &str>(2) == self.replica)
            .count();
        let _ = self
            .queued
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |q| {
                Some(q.saturating_sub(mine))
            });
        rows.iter().map(job_from).collect()
    }
}

fn usize_of(value: i64) -> usize {
    usize::try_from(value).unwrap_or(0)
}

impl TurnQueue for ReplicaStore {
    fn push(&self, turn: Job, first: bool) -> BoxFuture<'_, StoreResult<Placed>> {
        async move {
            if self.closed.load(Ordering::Relaxed) {
                return Err(SeamError::QueueClosed);
            }
            let session_id = turn.request.session_id.to_string();
            let body = encode(&turn.request)?;
            // One push of this replica at a time: its count is exact (see PUSH).
            let _pushing = self.pushing.lock().await;
            let client = self.client().await?;
            let insert = client
                .prepare_cached(PUSH)
                .await
                .map_err(query("prepare queuing a turn"))?;
            let row = client
                .query_one(
                    &insert,
                    &[
                        &turn.execution_id.to_string(),
                        &session_id,
                        &body,
                        &self.replica,
                        &first,
                        &i64::try_from(self.queue_capacity).unwrap_or(i64::MAX),
                        &i64::try_from(self.cluster_queue_limit).unwrap_or(i64::MAX),
                    ],
                )
                .await
                .map_err(|e| {
                    if is_foreign_key_violation(&e) {
                        RuntimeError::not_found("session", session_id.clone()).into()
                    } else if is_unique_violation(&e) {
                        RuntimeError::FailedPrecondition(format!(
                            "execution {} is already queued",
                            turn.execution_id
                        ))
                        .into()
                    } else {
                        query("queue a turn")(e)
                    }
                })?;
            let (mine, all) = (usize_of(row.get(0)), usize_of(row.get(1)));
            if mine >= self.queue_capacity {
                return Err(SeamError::QueueFull {
                    capacity: self.queue_capacity,
                });
            }
            if all >= self.cluster_queue_limit {
                return Err(SeamError::QueueFull {
                    capacity: self.cluster_queue_limit,
                });
            }
            let running: Option<String> = row.get(2);
            let running = running
                .map(|id| Uuid::parse_str(&id).map_err(|e| unreadable(format!("turn id {id}"), e)))
                .transpose()?;
            let waiting = usize_of(row.get(3));
            self.queued.store(mine + 1, Ordering::Relaxed);
            Ok(Placed {
                running,
                ahead: if first { 0 } else { waiting },
            })
        }
        .boxed()
    }

    fn claim_next(&self) -> BoxFuture<'_, StoreResult<Option<Job>>> {
        async move {
            let ttl = millis(self.lease_ttl).map_err(super::seam_error)?;
            let client = self.client().await?;
            let claim = client
                .prepare_cached(CLAIM)
                .await
                .map_err(query("prepare a claim"))?;
            let row = match client.query_opt(&claim, &[&self.replica, &ttl]).await {
                Ok(row) => row,
                // Another replica started a turn of the session meanwhile: the unique
                // index kept it to one, and this claim takes nothing.
                Err(e) if is_unique_violation(&e) => return Ok(None),
                Err(e) => return Err(query("claim a turn")(e)),
            };
            let Some(row) = row else {
                return Ok(None);
            };
            let turn_id: String = row.get(0);
            let session_id: String = row.get(2);
            let epoch: Option<i64> = row.get(3);
            let started: bool = row.get(4);
            let job = match job_from(&row) {
                Ok(job) => job,
                Err(e) => {
                    client
                        .execute(
                            DROP_UNREADABLE,
                            &[&turn_id, &session_id, &self.replica, &epoch],
                        )
                        .await
                        .map_err(query("drop an unreadable turn"))?;
                    return Err(e);
                }
            };
            let Some(epoch) = epoch.filter(|_| started) else {
                // Another replica took the session's lease after the turn was found: not
                // now (the statement changed nothing).
                return Ok(None);
            };
            lock(&self.leases).insert(job.request.session_id, epoch);
            lock(&self.claims)
                .entry(job.request.session_id)
                .or_default()
                .push_back(Claim {
                    turn: turn_id,
                    epoch,
                    ended: false,
                });
            let _ = self
                .queued
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |q| {
                    Some(q.saturating_sub(1))
                });
            Ok(Some(job))
        }
        .boxed()
    }

    fn take_abandoned(&self) -> BoxFuture<'_, StoreResult<Vec<Uuid>>> {
        async move {
            let mut sessions = std::mem::take(&mut *lock(&self.left_running));
            if !self.heard_for_a_lease() {
                return Ok(sessions);
            }
            let turns = self
                .db
                .interrupt_abandoned_turns(self.lease_ttl)
                .await
                .map_err(super::seam_error)?;
            sessions.extend(
                turns
                    .iter()
                    .filter_map(|turn| Uuid::parse_str(&turn.session_id).ok()),
            );
            sessions.sort_unstable();
            sessions.dedup();
            Ok(sessions)
        }
        .boxed()
    }

    /// Ends this replica's running turn of the session and gives the session's lease
    /// back (it expires now), in one statement; nothing when the append that stored the
    /// turn's end did both already.
    fn finish(&self, session_id: Uuid) -> BoxFuture<'_, StoreResult<()>> {
        async move {
            let claim = {
                let mut claims = lock(&self.claims);
                let claim = claims.get_mut(&session_id).and_then(VecDeque::pop_front);
                if claims.get(&session_id).is_some_and(VecDeque::is_empty) {
                    claims.remove(&session_id);
                }
                claim
            };
            let finished = match &claim {
                Some(claim) if claim.ended => Ok(()),
                Some(claim) => {
                    let session = session_id.to_string();
                    self.end_turn(
                        FINISH_TURN,
                        &[&claim.turn, &session, &self.replica, &claim.epoch],
                    )
                    .await
                }
                None => {
                    let held = self.held_epoch(session_id);
                    let session = session_id.to_string();
                    self.end_turn(FINISH_SESSION, &[&session, &self.replica, &held])
                        .await
                }
            };
            if let Err(e) = finished {
                // Asked again later (the store unavailable): the same turn, by its id.
                if let Some(claim) = claim {
                    lock(&self.claims)
                        .entry(session_id)
                        .or_default()
                        .push_front(claim);
                }
                return Err(e);
            }
            // A later claim of the session (its lease given back with the end) keeps its
            // own epoch.
            let mut leases = lock(&self.leases);
            match claim {
                Some(claim) if leases.get(&session_id) != Some(&claim.epoch) => {}
                _ => {
                    leases.remove(&session_id);
                }
            }
            Ok(())
        }
        .boxed()
    }

    fn locate(&self, execution_id: Uuid) -> BoxFuture<'_, StoreResult<Option<Located>>> {
        async move {
            let client = self.client().await?;
            let statement = client
                .prepare_cached(
                    "SELECT session_id, state, coalesce(claimed_by, '') FROM turns WHERE id = $1",
                )
                .await
                .map_err(query("prepare a turn lookup"))?;
            let row = client
                .query_opt(&statement, &[&execution_id.to_string()])
                .await
                .map_err(query("look a turn up"))?;
            let Some(row) = row else {
                return Ok(None);
            };
            let session: &str = row.get(0);
            let session_id = Uuid::parse_str(session)
                .map_err(|e| unreadable(format!("session id {session}"), e))?;
            let place = match row.get::<_, &str>(1) {
                "queued" => Placement::Queued,
                "running" => Placement::Running {
                    replica: row.get(2),
                },
                _ => Placement::Ended,
            };
            Ok(Some(Located { session_id, place }))
        }
        .boxed()
    }

    /// Any replica may take a waiting turn out (a cancel answered wherever it arrives).
    fn remove(&self, execution_id: Uuid) -> BoxFuture<'_, StoreResult<Option<Job>>> {
        async move {
            let client = self.client().await?;
            let rows = client
                .query(
                    "DELETE FROM turns WHERE id = $1 AND state = 'queued'
                     RETURNING id, request, submitted_by",
                    &[&execution_id.to_string()],
                )
                .await
                .map_err(query("take a turn out of the queue"))?;
            Ok(self.taken_out(&rows)?.into_iter().next())
        }
        .boxed()
    }

    fn remove_session(&self, session_id: Uuid) -> BoxFuture<'_, StoreResult<Vec<Job>>> {
        async move {
            let client = self.client().await?;
            let rows = client
                .query(
                    "DELETE FROM turns WHERE session_id = $1 AND state = 'queued'
                     RETURNING id, request, submitted_by",
                    &[&session_id.to_string()],
                )
                .await
                .map_err(query("take a session's turns out of the queue"))?;
            self.taken_out(&rows)
        }
        .boxed()
    }

    /// Refuses new turns here and hands back the waiting turns this replica submitted
    /// (the others are their replicas' to run).
    fn close(&self) -> BoxFuture<'_, StoreResult<Vec<Job>>> {
        async move {
            self.closed.store(true, Ordering::Relaxed);
            let client = self.client().await?;
            let rows = client
                .query(
                    "DELETE FROM turns WHERE submitted_by = $1 AND state = 'queued'
                     RETURNING id, request, submitted_by",
                    &[&self.replica],
                )
                .await
                .map_err(query("empty the queue"))?;
            let jobs = self.taken_out(&rows)?;
            self.queued.store(0, Ordering::Relaxed);
            Ok(jobs)
        }
        .boxed()
    }

    /// The turns this replica submitted that wait, as of its last queue operation or
    /// heartbeat.
    fn queued(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
    }

    /// Per replica; [`super::StoreConfig::cluster_queue_limit`] bounds them all.
    fn capacity(&self) -> usize {
        self.queue_capacity
    }
}
