//! [`EventLogs`]: each event is a row keyed by (session, sequence) whose body is the
//! event as the file log writes it (its JSON line), with its kind beside it. See the
//! module above for the fencing rule an append is held to.

use futures::FutureExt;
use futures::future::BoxFuture;
use odyssey_runtime::RuntimeError;
use odyssey_runtime::events::{Event, EventPayload};
use odyssey_runtime::session::SessionStats;
use odyssey_runtime::store::{EventLogs, LogWake, StoreError as SeamError, StoreResult};
use uuid::Uuid;

use super::{ReplicaStore, column, count, lock, query, unreadable};

/// One statement: lock the session's lease row (if any) for share, so that a takeover
/// waits for the append or makes it fail; check the fencing rule; move the session's last
/// sequence and totals only from the expected one; write the rows. A batch holding the end
/// of a turn this replica claimed ($9: their ids) also ends the turn in the queue and
/// gives the session's lease back, as [`odyssey_runtime::store::TurnQueue::finish`]
/// would, in the same statement: the turn's end and its finish are one round trip.
const APPEND: &str = "WITH lease AS (
        SELECT holder, epoch, expires_at > clock_timestamp() AS live
        FROM session_leases WHERE session_id = $1
        FOR SHARE
    ), allowed AS (
        SELECT CASE WHEN $3::bigint IS NULL
                    THEN NOT EXISTS (SELECT 1 FROM lease WHERE live AND holder <> $2)
                    ELSE EXISTS (SELECT 1 FROM lease WHERE holder = $2 AND epoch = $3)
               END AS ok
    ), moved AS (
        UPDATE sessions s
        SET last_sequence = s.last_sequence + cardinality($5::text[]),
            turn_count = s.turn_count + ($7::bigint[])[1],
            model_calls = s.model_calls + ($7::bigint[])[2],
            log_bytes = s.log_bytes + ($7::bigint[])[3],
            input_tokens = s.input_tokens + ($7::bigint[])[4],
            output_tokens = s.output_tokens + ($7::bigint[])[5],
            cached_input_tokens = s.cached_input_tokens + ($7::bigint[])[6],
            reasoning_tokens = s.reasoning_tokens + ($7::bigint[])[7],
            total_tokens = s.total_tokens + ($7::bigint[])[8],
            updated_at_ms = $8,
            updated_at = clock_timestamp()
        FROM allowed
        WHERE allowed.ok AND s.id = $1 AND s.quarantined_at IS NULL
          AND s.last_sequence = $4::bigint - 1
        RETURNING s.last_sequence AS last
    ), ended AS (
        UPDATE turns t SET state = 'completed', finished_at = clock_timestamp()
        FROM moved
        WHERE t.id = ANY($9::text[]) AND t.session_id = $1 AND t.state = 'running'
          AND t.claimed_by = $2
        RETURNING t.id
    ), released AS (
        UPDATE session_leases l SET expires_at = '-infinity'
        WHERE EXISTS (SELECT 1 FROM ended) AND l.session_id = $1 AND l.holder = $2
          AND l.epoch = $3::bigint
    )
    INSERT INTO events (session_id, sequence, kind, body)
    SELECT $1, moved.last - cardinality($5::text[]) + e.ord, e.kind, e.body
    FROM moved, unnest($5::text[], $6::bytea[]) WITH ORDINALITY AS e (kind, body, ord)
    RETURNING sequence, (SELECT count(*) FROM ended) AS ended";

/// The events of a batch, encoded, with the totals they add.
struct Encoded {
    kinds: Vec<String>,
    bodies: Vec<Vec<u8>>,
    /// turns, model calls, bytes, then the five token counts.
    deltas: Vec<i64>,
    updated_at_ms: i64,
}

fn encode(session_id: Uuid, expected_next: u64, events: Vec<Event>) -> StoreResult<Encoded> {
    let mut totals = SessionStats::default();
    let mut kinds = Vec::with_capacity(events.len());
    let mut bodies = Vec::with_capacity(events.len());
    let mut bytes: u64 = 0;
    for (i, mut event) in events.into_iter().enumerate() {
        event.session_id = session_id;
        event.sequence = expected_next + i as u64;
        let value = serde_json::to_value(&event).map_err(|e| {
            unreadable(
                format!("event {} of session {session_id}", event.sequence),
                e,
            )
        })?;
        let kind = value
            .get("type")
            .and_then(|t| t.as_str())
            .unwrap_or_default()
            .to_owned();
        let body = serde_json::to_vec(&value).map_err(|e| {
            unreadable(
                format!("event {} of session {session_id}", event.sequence),
                e,
            )
        })?;
        bytes += body.len() as u64;
        totals.observe(&event);
        kinds.push(kind);
        bodies.push(body);
    }
    let usage = totals.usage;
    let deltas = [
        totals.turn_count,
        totals.model_calls,
        bytes,
        usage.input_tokens,
        usage.output_tokens,
        usage.cached_input_tokens,
        usage.reasoning_tokens,
        usage.total_tokens,
    ]
    .into_iter()
    .map(|v| column(v, "events"))
    .collect::<StoreResult<Vec<i64>>>()?;
    Ok(Encoded {
        kinds,
        bodies,
        deltas,
        updated_at_ms: column(totals.updated_at_ms, "created_at_ms")?,
    })
}

impl ReplicaStore {
    /// The turns this replica claimed in the session whose end is among `events`.
    fn ending(&self, session_id: Uuid, events: &[Event]) -> Vec<String> {
        let claims = lock(&self.claims);
        let Some(claims) = claims.get(&session_id) else {
            return Vec::new();
        };
        events
            .iter()
            .filter(|e| matches!(e.payload, EventPayload::TurnCompleted(_)))
            .filter_map(|e| e.turn_id.map(|t| t.to_string()))
            .filter(|t| claims.iter().any(|c| !c.ended && &c.turn == t))
            .collect()
    }

    /// The append ended `turns` in the queue: finishing them has nothing left to do.
    fn ended(&self, session_id: Uuid, turns: &[String]) {
        if let Some(claims) = lock(&self.claims).get_mut(&session_id) {
            for claim in claims.iter_mut().filter(|c| turns.contains(&c.turn)) {
                claim.ended = true;
            }
        }
    }

    /// Why an append wrote nothing: the session is gone, the fencing rule refused it, or
    /// the log is not at the expected sequence. Read after the refusal (which the append
    /// made atomically), so it says what the database holds now.
    async fn refusal(
        &self,
        client: &deadpool_postgres::Object,
        session_id: Uuid,
        held: Option<i64>,
        expected_next: u64,
    ) -> SeamError {
        let row = client
            .query_opt(
                "SELECT s.last_sequence, s.quarantined_at IS NOT NULL,
                        coalesce(s.quarantine_reason, ''),
                        l.holder, l.epoch, coalesce(l.expires_at > clock_timestamp(), false)
                 FROM sessions s LEFT JOIN session_leases l ON l.session_id = s.id
                 WHERE s.id = $1",
                &[&session_id.to_string()],
            )
            .await;
        let row = match row {
            Ok(Some(row)) => row,
            Ok(None) => return RuntimeError::not_found("session", session_id.to_string()).into(),
            Err(e) => return query("read a session")(e),
        };
        if row.get::<_, bool>(1) {
            return RuntimeError::Quarantined {
                session_id: session_id.to_string(),
                reason: row.get(2),
            }
            .into();
        }
        let holder: Option<String> = row.get(3);
        let epoch: Option<i64> = row.get(4);
        let live: bool = row.get(5);
        let fenced = |reason: String| SeamError::Fenced { session_id, reason };
        match (held, holder) {
            (Some(mine), Some(holder)) if holder != self.replica || epoch != Some(mine) => {
                return fenced(format!(
                    "this server's lease (epoch {mine}) lapsed and {holder} took the session over (epoch {})",
                    epoch.unwrap_or_default()
                ));
            }
            (Some(mine), None) => {
                return fenced(format!(
                    "this server's lease (epoch {mine}) is gone; it writes no more to the session"
                ));
            }
            (None, Some(holder)) if live && holder != self.replica => {
                return fenced(format!("{holder} holds the session's lease"));
            }
            _ => {}
        }
        SeamError::SequenceConflict {
            session_id,
            expected: expected_next,
            actual: count(row.get(0)) + 1,
        }
    }
}

impl EventLogs for ReplicaStore {
    fn append_events(
        &self,
        session_id: Uuid,
        expected_next: u64,
        events: Vec<Event>,
    ) -> BoxFuture<'_, StoreResult<u64>> {
        async move {
            let count_of_events = events.len() as u64;
            let ending = self.ending(session_id, &events);
            let encoded = encode(session_id, expected_next, events)?;
            if count_of_events == 0 {
                let last = self.last_sequence(session_id).await?;
                if last + 1 != expected_next {
                    return Err(SeamError::SequenceConflict {
                        session_id,
                        expected: expected_next,
                        actual: last + 1,
                    });
                }
                return Ok(last);
            }
            let held = self.held_epoch(session_id);
            let client = self.client().await?;
            let append = client
                .prepare_cached(APPEND)
                .await
                .map_err(query("prepare an append"))?;
            let rows = client
                .query(
                    &append,
                    &[
                        &session_id.to_string(),
                        &self.replica,
                        &held,
                        &column(expected_next, "expected_next")?,
                        &encoded.kinds,
                        &encoded.bodies,
                        &encoded.deltas,
                        &encoded.updated_at_ms,
                        &ending,
                    ],
                )
                .await
                .map_err(query("append events"))?;
            if rows.first().is_some_and(|r| r.get::<_, i64>(1) > 0) {
                self.ended(session_id, &ending);
            }
            match rows.iter().map(|r| r.get::<_, i64>(0)).max() {
                Some(last) => Ok(count(last)),
                None => Err(self.refusal(&client, session_id, held, expected_next).await),
            }
        }
        .boxed()
    }

    /// Nothing to do: every append is a committed transaction, durable when it returns.
    fn sync_events(&self, _session_id: Uuid) -> BoxFuture<'_, StoreResult<()>> {
        futures::future::ready(Ok(())).boxed()
    }

    fn read_events_after(
        &self,
        session_id: Uuid,
        after_sequence: u64,
        limit: usize,
    ) -> BoxFuture<'_, StoreResult<Vec<Event>>> {
        async move {
            if limit == 0 {
                return Ok(Vec::new());
            }
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let client = self.client().await?;
            // One row with no event when the session exists but has none after the
            // sequence; none when it does not exist (an empty answer would hide that).
            let read = client
                .prepare_cached(
                    "SELECT e.sequence, e.body FROM sessions s
                     LEFT JOIN LATERAL (
                         SELECT sequence, body FROM events
                         WHERE session_id = s.id AND sequence > $2
                         ORDER BY sequence LIMIT $3
                     ) e ON true
                     WHERE s.id = $1 AND s.quarantined_at IS NULL",
                )
                .await
                .map_err(query("prepare reading events"))?;
            let rows = client
                .query(
                    &read,
                    &[
                        &session_id.to_string(),
                        &column(after_sequence, "after_sequence")?,
                        &limit,
                    ],
                )
                .await
                .map_err(query("read events"))?;
            if rows.is_empty() {
                return Err(RuntimeError::not_found("session", session_id.to_string()).into());
            }
            rows.iter()
                .filter(|row| row.get::<_, Option<i64>>(0).is_some())
                .map(|row| {
                    let body: &[u8] = row.get(1);
                    serde_json::from_slice::<Event>(body).map_err(|e| {
                        unreadable(
                            format!("event {} of session {session_id}", row.get::<_, i64>(0)),
                            e,
                        )
                    })
                })
                .collect()
        }
        .boxed()
    }

    /// The store's one listening connection, shared by every receiver (see `wakes.rs`).
    fn wake_ups(&self) -> Option<tokio::sync::broadcast::Receiver<LogWake>> {
        Some(self.wakes.subscribe())
    }

    fn last_sequence(&self, session_id: Uuid) -> BoxFuture<'_, StoreResult<u64>> {
        async move {
            let client = self.client().await?;
            let row = client
                .query_opt(
                    "SELECT last_sequence FROM sessions WHERE id = $1 AND quarantined_at IS NULL",
                    &[&session_id.to_string()],
                )
                .await
                .map_err(query("read a session"))?;
            match row {
                Some(row) => Ok(count(row.get(0))),
                None => Err(RuntimeError::not_found("session", session_id.to_string()).into()),
            }
        }
        .boxed()
    }
}
