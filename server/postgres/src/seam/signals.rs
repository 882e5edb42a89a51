//! [`TurnSignals`] on table `turn_signals` (schema v5): a signal is a row whose `target`
//! is the replica running the session's turn (a cancel's: the replica running the turn,
//! or holding it queued), chosen by the statement that writes it, so a signal for a turn
//! no replica runs is never written. The row's trigger notifies `id:target`; the target's
//! listener (`wakes.rs`) reads the row and hands it to the runtime. After the listening
//! connection was lost, the target reads the rows sent to it meanwhile. The heartbeat
//! deletes rows older than [`SIGNAL_LIFETIME`].

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use odyssey_runtime::RuntimeError;
use odyssey_runtime::store::{
    Delivery, MAX_SIGNAL_BYTES, RunningElsewhere, SessionActivity, StoreError as SeamError,
    StoreResult, TurnSignal, TurnSignals,
};
use tokio::sync::broadcast;
use uuid::Uuid;

use super::{ReplicaStore, count, query, unreadable};

/// Signals a receiver may fall behind by before it is told it lagged.
pub(super) const CAPACITY: usize = 1024;

/// Signals remembered as handed on, so that none goes on twice.
const REMEMBERED: usize = 10_000;

/// How long a signal's row is kept: it is acted on within milliseconds or not at all;
/// the rest of the time only serves a listener that reconnects.
pub(super) const SIGNAL_LIFETIME: Duration = Duration::from_secs(5 * 60);

impl TurnSignals for ReplicaStore {
    fn send(&self, signal: TurnSignal) -> BoxFuture<'_, StoreResult<Option<Delivery>>> {
        async move {
            let body = serde_json::to_vec(&signal).map_err(|e| {
                SeamError::from(RuntimeError::storage(
                    "encode a signal",
                    std::io::Error::other(e),
                ))
            })?;
            if body.len() > MAX_SIGNAL_BYTES {
                let field = match signal {
                    TurnSignal::Steer { .. } => "text",
                    _ => "answer",
                };
                return Err(RuntimeError::invalid(
                    field,
                    format!(
                        "is {} bytes encoded; a signal to another server carries at most {MAX_SIGNAL_BYTES}",
                        body.len()
                    ),
                )
                .into());
            }
            let client = self.client().await?;
            let row = match &signal {
                TurnSignal::Decide { session_id, .. } | TurnSignal::Answer { session_id, .. } => {
                    let kind = match signal {
                        TurnSignal::Decide { .. } => "decide",
                        _ => "answer",
                    };
                    client
                        .query_opt(
                            "INSERT INTO turn_signals (session_id, kind, target, body)
                             SELECT t.session_id, $2, t.claimed_by, $3 FROM turns t
                             WHERE t.session_id = $1 AND t.state = 'running'
                               AND t.claimed_by IS NOT NULL
                             LIMIT 1
                             RETURNING session_id, target",
                            &[&session_id.to_string(), &kind, &body],
                        )
                        .await
                        .map_err(query("send a signal"))?
                }
                // Kind `answer`: input a person gives the running turn, as an answer to
                // a request for input is (the body says which).
                TurnSignal::Steer { execution_id, .. } => client
                    .query_opt(
                        "INSERT INTO turn_signals (session_id, kind, target, body)
                         SELECT t.session_id, 'answer', t.claimed_by, $2 FROM turns t
                         WHERE t.id = $1 AND t.state = 'running' AND t.claimed_by IS NOT NULL
                         RETURNING session_id, target",
                        &[&execution_id.to_string(), &body],
                    )
                    .await
                    .map_err(query("send a signal"))?,
                TurnSignal::Cancel { execution_id, .. } => client
                    .query_opt(
                        "INSERT INTO turn_signals (session_id, kind, target, body)
                         SELECT t.session_id, 'cancel', coalesce(t.claimed_by, t.submitted_by), $2
                         FROM turns t
                         WHERE t.id = $1 AND t.state IN ('queued', 'running')
                           AND coalesce(t.claimed_by, t.submitted_by) <> ''
                         RETURNING session_id, target",
                        &[&execution_id.to_string(), &body],
                    )
                    .await
                    .map_err(query("send a signal"))?,
            };
            let Some(row) = row else {
                return Ok(None);
            };
            let session: String = row.get(0);
            let session_id = Uuid::parse_str(&session)
                .map_err(|e| unreadable(format!("the session id {session:?}"), e))?;
            Ok(Some(Delivery {
                session_id,
                replica: row.get(1),
            }))
        }
        .boxed()
    }

    fn session_activity(
        &self,
        sessions: &[Uuid],
    ) -> BoxFuture<'_, StoreResult<HashMap<Uuid, SessionActivity>>> {
        let ids: Vec<String> = sessions.iter().map(Uuid::to_string).collect();
        async move {
            if ids.is_empty() {
                return Ok(HashMap::new());
            }
            let client = self.client().await?;
            let rows = client
                .query(SESSION_ACTIVITY, &[&ids])
                .await
                .map_err(query("read what sessions are doing"))?;
            Ok(rows
                .iter()
                .filter_map(|row| {
                    let id = Uuid::parse_str(row.get::<_, &str>(0)).ok()?;
                    Some((
                        id,
                        SessionActivity {
                            running: row.get(1),
                            queued: row.get(2),
                            asking: row.get(3),
                        },
                    ))
                })
                .collect())
        }
        .boxed()
    }

    fn signals(&self) -> broadcast::Receiver<TurnSignal> {
        self.signals.subscribe()
    }

    fn sessions_running_elsewhere(
        &self,
        limit: usize,
    ) -> BoxFuture<'_, StoreResult<Vec<RunningElsewhere>>> {
        async move {
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let client = self.client().await?;
            let rows = client
                .query(
                    "SELECT t.session_id, s.last_sequence FROM turns t
                     JOIN sessions s ON s.id = t.session_id
                     WHERE t.state = 'running' AND t.claimed_by IS DISTINCT FROM $1
                     ORDER BY t.claimed_at DESC LIMIT $2",
                    &[&self.replica, &limit],
                )
                .await
                .map_err(query("read the turns other replicas run"))?;
            Ok(rows
                .iter()
                .filter_map(|row| {
                    Some(RunningElsewhere {
                        session_id: Uuid::parse_str(row.get::<_, &str>(0)).ok()?,
                        last_sequence: count(row.get(1)),
                    })
                })
                .collect())
        }
        .boxed()
    }
}

/// What the sessions of a page are doing: their turns queued or running and, for a
/// running one, whether its log shows more requests for a person than ends of requests
/// since the session's last `turn_started` (read backwards along the primary key, so the
/// cost is the running turn's events, not the whole log).
const SESSION_ACTIVITY: &str = "
    SELECT t.session_id,
           bool_or(t.state = 'running') AS running,
           bool_or(t.state = 'queued') AS queued,
           bool_or(t.state = 'running' AND (
               SELECT count(*) FILTER (WHERE e.kind IN ('permission_requested', 'human_input_requested'))
                    > count(*) FILTER (WHERE e.kind IN ('approval_resolved', 'human_input_answered'))
               FROM events e
               WHERE e.session_id = t.session_id
                 AND e.sequence > coalesce((
                     SELECT s.sequence FROM events s
                     WHERE s.session_id = t.session_id AND s.kind = 'turn_started'
                     ORDER BY s.sequence DESC LIMIT 1), 0)
           )) AS asking
    FROM turns t
    WHERE t.session_id = ANY($1) AND t.state IN ('queued', 'running')
    GROUP BY t.session_id";

impl ReplicaStore {
    /// Reads signal `id` (sent to this replica) and hands it to the runtime, unless it
    /// was already.
    pub(super) async fn deliver_signal(self: Arc<Self>, id: i64) {
        if let Err(e) = self.read_signals("id = $2", id).await {
            tracing::warn!(replica = %self.replica, signal = id, error = %e, "cannot read a signal sent to this replica");
        }
    }

    /// Reads the signals sent to this replica that it has not handed on (those notified
    /// while its listening connection was lost).
    pub(super) async fn deliver_missed_signals(self: Arc<Self>) {
        let after = self.first_signal.load(Ordering::Acquire);
        if let Err(e) = self.read_signals("id > $2", after).await {
            tracing::warn!(replica = %self.replica, error = %e, "cannot read the signals sent to this replica");
        }
    }

    /// Hands on the signals to this replica that `condition` (on `id`, as `$2`) selects,
    /// in order, each once.
    async fn read_signals(&self, condition: &str, id: i64) -> Result<(), SeamError> {
        let client = self.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT id, body FROM turn_signals WHERE target = $1 AND {condition} ORDER BY id"
                ),
                &[&self.replica, &id],
            )
            .await
            .map_err(query("read signals"))?;
        for row in rows {
            let id: i64 = row.get(0);
            // Each once: a row read twice (its notification and a catch-up) goes on once.
            if !self.first_delivery(id) {
                continue;
            }
            let body: &[u8] = row.get(1);
            match serde_json::from_slice::<TurnSignal>(body) {
                // No receiver is not a failure: the runtime is not following yet.
                Ok(signal) => drop(self.signals.send(signal)),
                Err(e) => {
                    tracing::warn!(replica = %self.replica, signal = id, error = %e, "an unreadable signal was ignored");
                }
            }
        }
        Ok(())
    }

    /// Records that signal `id` is handed on; `false` when it already was. Ids are not
    /// handed on in order (transactions commit in any order), so the recent ones are
    /// remembered, the oldest forgotten first.
    fn first_delivery(&self, id: i64) -> bool {
        if id <= self.first_signal.load(Ordering::Acquire) {
            return false;
        }
        let mut delivered = super::lock(&self.delivered);
        if !delivered.insert(id) {
            return false;
        }
        while delivered.len() > REMEMBERED {
            delivered.pop_first();
        }
        true
    }

    /// Deletes the signals older than [`SIGNAL_LIFETIME`] (any replica's).
    pub(super) async fn delete_old_signals(&self) -> Result<(), SeamError> {
        let lifetime = i64::try_from(SIGNAL_LIFETIME.as_millis()).unwrap_or(i64::MAX);
        let client = self.client().await?;
        client
            .execute(
                "DELETE FROM turn_signals
                 WHERE created_at < clock_timestamp() - $1::bigint * interval '1 millisecond'",
                &[&lifetime],
            )
            .await
            .map_err(query("delete old signals"))?;
        Ok(())
    }

    /// The newest signal written so far: signals before it are not this process's.
    pub(super) async fn newest_signal(&self) -> Result<i64, SeamError> {
        let client = self.client().await?;
        let row = client
            .query_one("SELECT coalesce(max(id), 0) FROM turn_signals", &[])
            .await
            .map_err(query("read the newest signal"))?;
        Ok(row.get(0))
    }
}
