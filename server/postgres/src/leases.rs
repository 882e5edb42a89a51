//! Session leases: the one replica that may write a session's events and run its turns.
//!
//! A lease is (holder, epoch, expires_at) per session. It is acquired when free or
//! expired (a takeover raises the epoch), kept alive by heartbeats, and released by
//! expiring it, so epochs only grow. Time is the database's clock alone, so replicas whose
//! clocks disagree still agree on who holds a lease.

use std::time::Duration;

use crate::error::is_foreign_key_violation;
use crate::{Store, StoreError};

/// A lease held on a session: the proof a write must carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    pub session_id: String,
    pub holder: String,
    pub epoch: i64,
    /// When it expires unless renewed, in milliseconds since the Unix epoch (database
    /// clock).
    pub expires_at_ms: i64,
}

pub(crate) fn millis(duration: Duration) -> Result<i64, StoreError> {
    let ms = i64::try_from(duration.as_millis()).unwrap_or(i64::MAX);
    if ms <= 0 {
        return Err(StoreError::InvalidArgument(
            "a lease must last at least one millisecond".to_owned(),
        ));
    }
    Ok(ms)
}

impl Store {
    /// Takes the lease on a session for `holder`, for `ttl`: when no one holds it, or its
    /// last holder let it expire (a takeover: the epoch grows by one). While another
    /// holder's lease is live, [`StoreError::LeaseHeld`] names that holder.
    pub async fn acquire_lease(
        &self,
        session_id: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<Lease, StoreError> {
        let ttl = millis(ttl)?;
        let client = self.client().await?;
        let row = client
            .query_opt(
                "INSERT INTO session_leases AS l (session_id, holder, epoch, acquired_at, expires_at)
                 VALUES ($1, $2, 1, clock_timestamp(), clock_timestamp() + $3::bigint * interval '1 millisecond')
                 ON CONFLICT (session_id) DO UPDATE
                     SET holder = excluded.holder,
                         epoch = l.epoch + 1,
                         acquired_at = excluded.acquired_at,
                         expires_at = excluded.expires_at
                     WHERE l.expires_at <= clock_timestamp()
                 RETURNING epoch, (extract(epoch FROM expires_at) * 1000)::bigint",
                &[&session_id, &holder, &ttl],
            )
            .await
            .map_err(|e| {
                if is_foreign_key_violation(&e) {
                    StoreError::SessionNotFound(session_id.to_owned())
                } else {
                    StoreError::query("acquire a lease")(e)
                }
            })?;
        if let Some(row) = row {
            return Ok(Lease {
                session_id: session_id.to_owned(),
                holder: holder.to_owned(),
                epoch: row.get(0),
                expires_at_ms: row.get(1),
            });
        }
        let current = client
            .query_opt(
                "SELECT holder FROM session_leases WHERE session_id = $1",
                &[&session_id],
            )
            .await
            .map_err(StoreError::query("read a lease"))?;
        Err(StoreError::LeaseHeld {
            session_id: session_id.to_owned(),
            holder: current.map(|r| r.get(0)).unwrap_or_default(),
        })
    }

    /// Extends a live lease by `ttl` from now. A lease that expired (even if no one took
    /// it over) or was taken over is lost for good: [`StoreError::LeaseLost`], and the
    /// holder must stop writing and acquire the session again.
    pub async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError> {
        let ttl = millis(ttl)?;
        let client = self.client().await?;
        let row = client
            .query_opt(
                "UPDATE session_leases
                 SET expires_at = clock_timestamp() + $4::bigint * interval '1 millisecond'
                 WHERE session_id = $1 AND holder = $2 AND epoch = $3
                   AND expires_at > clock_timestamp()
                 RETURNING (extract(epoch FROM expires_at) * 1000)::bigint",
                &[&lease.session_id, &lease.holder, &lease.epoch, &ttl],
            )
            .await
            .map_err(StoreError::query("renew a lease"))?;
        match row {
            Some(row) => Ok(Lease {
                expires_at_ms: row.get(0),
                ..lease.clone()
            }),
            None => Err(lost(lease)),
        }
    }

    /// Gives a lease up: it expires now, so another replica may take the session at once.
    /// Releasing a lease already lost is not an error.
    pub async fn release_lease(&self, lease: &Lease) -> Result<(), StoreError> {
        let client = self.client().await?;
        client
            .execute(
                "UPDATE session_leases SET expires_at = clock_timestamp()
                 WHERE session_id = $1 AND holder = $2 AND epoch = $3
                   AND expires_at > clock_timestamp()",
                &[&lease.session_id, &lease.holder, &lease.epoch],
            )
            .await
            .map_err(StoreError::query("release a lease"))?;
        Ok(())
    }

    /// Who holds the session's lease now, if its lease is live.
    pub async fn lease_holder(&self, session_id: &str) -> Result<Option<Lease>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT holder, epoch, (extract(epoch FROM expires_at) * 1000)::bigint
                 FROM session_leases
                 WHERE session_id = $1 AND expires_at > clock_timestamp()",
                &[&session_id],
            )
            .await
            .map_err(StoreError::query("read a lease"))?;
        Ok(row.map(|row| Lease {
            session_id: session_id.to_owned(),
            holder: row.get(0),
            epoch: row.get(1),
            expires_at_ms: row.get(2),
        }))
    }
}

pub(crate) fn lost(lease: &Lease) -> StoreError {
    StoreError::LeaseLost {
        session_id: lease.session_id.clone(),
        holder: lease.holder.clone(),
        epoch: lease.epoch,
    }
}
