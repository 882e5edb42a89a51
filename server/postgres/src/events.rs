//! Event logs: rows keyed by (session, sequence), gap-free from 1, appended only by the
//! holder of the session's live lease.

use crate::leases::lost;
use crate::{Lease, Store, StoreError};

/// An event to append: its kind (the payload's name) and its encoded body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewEvent {
    pub kind: String,
    pub body: Vec<u8>,
}

/// An event as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredEvent {
    pub sequence: i64,
    pub kind: String,
    pub body: Vec<u8>,
}

impl Store {
    /// Appends `events` after sequence `after` of the lease's session and returns the new
    /// last sequence. One statement checks the lease and writes: the lease row is locked
    /// for share while the session's sequence moves, so a takeover (which updates that
    /// row) waits for the append or makes it fail, and an expired lease writes nothing
    /// ([`StoreError::LeaseLost`]). A log that moved past `after` is
    /// [`StoreError::SequenceConflict`]. Followers are woken when the transaction commits.
    pub async fn append_events(
        &self,
        lease: &Lease,
        after: i64,
        events: &[NewEvent],
    ) -> Result<i64, StoreError> {
        if events.is_empty() {
            return Ok(after);
        }
        let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
        let bodies: Vec<&[u8]> = events.iter().map(|e| e.body.as_slice()).collect();
        let client = self.client().await?;
        let rows = client
            .query(
                "WITH lease AS (
                     SELECT session_id FROM session_leases
                     WHERE session_id = $1 AND holder = $2 AND epoch = $3
                       AND expires_at > clock_timestamp()
                     FOR SHARE
                 ), moved AS (
                     UPDATE sessions s
                     SET last_sequence = s.last_sequence + cardinality($5::text[]),
                         updated_at = clock_timestamp()
                     FROM lease
                     WHERE s.id = lease.session_id AND s.last_sequence = $4
                     RETURNING s.last_sequence AS last
                 )
                 INSERT INTO events (session_id, sequence, kind, body)
                 SELECT $1, moved.last - cardinality($5::text[]) + e.ord, e.kind, e.body
                 FROM moved, unnest($5::text[], $6::bytea[]) WITH ORDINALITY AS e (kind, body, ord)
                 RETURNING sequence",
                &[
                    &lease.session_id,
                    &lease.holder,
                    &lease.epoch,
                    &after,
                    &kinds,
                    &bodies,
                ],
            )
            .await
            .map_err(StoreError::query("append events"))?;
        if let Some(last) = rows.iter().map(|r| r.get::<_, i64>(0)).max() {
            return Ok(last);
        }
        // Nothing was written; say why (the refusal itself was made above, atomically).
        let diagnosis = client
            .query_opt(
                "SELECT s.last_sequence,
                        EXISTS (SELECT 1 FROM session_leases l
                                WHERE l.session_id = s.id AND l.holder = $2 AND l.epoch = $3
                                  AND l.expires_at > clock_timestamp())
                 FROM sessions s WHERE s.id = $1",
                &[&lease.session_id, &lease.holder, &lease.epoch],
            )
            .await
            .map_err(StoreError::query("read a session"))?;
        match diagnosis {
            None => Err(StoreError::SessionNotFound(lease.session_id.clone())),
            Some(row) if !row.get::<_, bool>(1) => Err(lost(lease)),
            Some(row) => Err(StoreError::SequenceConflict {
                session_id: lease.session_id.clone(),
                expected: after,
                actual: row.get(0),
            }),
        }
    }

    /// Up to `limit` events of a session after sequence `after`, in order.
    pub async fn events_after(
        &self,
        session_id: &str,
        after: i64,
        limit: i64,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT sequence, kind, body FROM events
                 WHERE session_id = $1 AND sequence > $2
                 ORDER BY sequence LIMIT $3",
                &[&session_id, &after, &limit.max(0)],
            )
            .await
            .map_err(StoreError::query("read events"))?;
        Ok(rows
            .iter()
            .map(|row| StoredEvent {
                sequence: row.get(0),
                kind: row.get(1),
                body: row.get(2),
            })
            .collect())
    }
}
