//! [`SessionRecords`]: a session is a row holding the runtime's record (its JSON) and the
//! totals its log adds up to, moved by every append.

use futures::FutureExt;
use futures::future::BoxFuture;
use odyssey_runtime::RuntimeError;
use odyssey_runtime::chat::TokenUsage;
use odyssey_runtime::paging::{Page, PageRequest, token_for};
use odyssey_runtime::session::{
    QuarantinedSession, SessionInfo, SessionRecord, SessionState, SessionStats,
};
use odyssey_runtime::store::{SessionFilter, SessionRecords, StoreResult};
use tokio_postgres::Row;
use uuid::Uuid;

use super::{ReplicaStore, count, lock, query, seam_error, unreadable};
use crate::StoreError;
use crate::error::is_unique_violation;

/// The columns [`info_from_row`] reads, in its order.
pub(super) const SESSION_COLUMNS: &str = "id, record, last_sequence, turn_count, model_calls, \
     log_bytes, input_tokens, output_tokens, cached_input_tokens, reasoning_tokens, \
     total_tokens, updated_at_ms";

/// Sessions read per round trip while a filtered list fills a page.
const LIST_BATCH: i64 = 256;

pub(super) fn info_from_row(row: &Row) -> StoreResult<SessionInfo> {
    let id: String = row.get(0);
    let record: Vec<u8> = row.get(1);
    let record: SessionRecord = serde_json::from_slice(&record)
        .map_err(|e| unreadable(format!("the record of session {id}"), e))?;
    let stats = SessionStats {
        last_sequence: count(row.get(2)),
        turn_count: count(row.get(3)),
        model_calls: count(row.get(4)),
        log_bytes: count(row.get(5)),
        usage: TokenUsage {
            input_tokens: count(row.get(6)),
            output_tokens: count(row.get(7)),
            cached_input_tokens: count(row.get(8)),
            reasoning_tokens: count(row.get(9)),
            total_tokens: count(row.get(10)),
        },
        updated_at_ms: count(row.get(11)),
    };
    Ok(SessionInfo {
        record,
        stats,
        state: SessionState::Idle,
    })
}

impl SessionRecords for ReplicaStore {
    fn create_session(&self, record: SessionRecord) -> BoxFuture<'_, StoreResult<()>> {
        async move {
            let id = record.id.to_string();
            let body = serde_json::to_vec(&record)
                .map_err(|e| unreadable(format!("the record of session {id}"), e))?;
            let client = self.client().await?;
            client
                .execute(
                    "INSERT INTO sessions (id, record) VALUES ($1, $2)",
                    &[&id, &body],
                )
                .await
                .map_err(|e| {
                    if is_unique_violation(&e) {
                        seam_error(StoreError::SessionExists(id.clone()))
                    } else {
                        query("create a session")(e)
                    }
                })?;
            Ok(())
        }
        .boxed()
    }

    fn session(&self, id: Uuid) -> BoxFuture<'_, StoreResult<Option<SessionInfo>>> {
        async move {
            let client = self.client().await?;
            let statement = client
                .prepare_cached(&format!(
                    "SELECT {SESSION_COLUMNS} FROM sessions
                     WHERE id = $1 AND quarantined_at IS NULL"
                ))
                .await
                .map_err(query("prepare a session read"))?;
            let row = client
                .query_opt(&statement, &[&id.to_string()])
                .await
                .map_err(query("read a session"))?;
            row.as_ref().map(info_from_row).transpose()
        }
        .boxed()
    }

    /// Newest first by id (UUIDv7), read a batch at a time and filtered here with the
    /// runtime's own [`SessionFilter::matches`], so both stores filter alike. A record
    /// that cannot be read is left out of the list (and reported in the log), as the file
    /// store does.
    fn list_sessions(
        &self,
        filter: SessionFilter,
        page: PageRequest,
    ) -> BoxFuture<'_, StoreResult<Page<SessionInfo>>> {
        async move {
            let size = page.effective_size();
            let not_issued = || {
                RuntimeError::invalid("page_token", "not a token this server issued for this list")
            };
            let mut cursor = match page.after_key()? {
                Some(key) => Some(
                    Uuid::parse_str(&key)
                        .map_err(|_| not_issued())?
                        .to_string(),
                ),
                None => None,
            };
            let client = self.client().await?;
            let mut items = Vec::with_capacity(size.min(64));
            let mut more = false;
            'pages: loop {
                let rows = client
                    .query(
                        &format!(
                            "SELECT {SESSION_COLUMNS} FROM sessions
                             WHERE quarantined_at IS NULL
                               AND ($1::text IS NULL OR id COLLATE \"C\" < $1::text COLLATE \"C\")
                             ORDER BY id COLLATE \"C\" DESC
                             LIMIT $2"
                        ),
                        &[&cursor, &LIST_BATCH],
                    )
                    .await
                    .map_err(query("list sessions"))?;
                for row in &rows {
                    let id: String = row.get(0);
                    cursor = Some(id.clone());
                    let info = match info_from_row(row) {
                        Ok(info) => info,
                        Err(e) => {
                            tracing::warn!(session = %id, error = %e, "a session left out of the list");
                            continue;
                        }
                    };
                    if !filter.matches(&info) {
                        continue;
                    }
                    if items.len() == size {
                        more = true;
                        break 'pages;
                    }
                    items.push(info);
                }
                if i64::try_from(rows.len()).unwrap_or(i64::MAX) < LIST_BATCH {
                    break;
                }
            }
            let next_token = if more {
                items
                    .last()
                    .map(|last: &SessionInfo| token_for(&last.record.id.to_string()))
            } else {
                None
            };
            Ok(Page { items, next_token })
        }
        .boxed()
    }

    fn delete_session(&self, id: Uuid) -> BoxFuture<'_, StoreResult<bool>> {
        async move {
            let client = self.client().await?;
            let deleted = client
                .execute(
                    "DELETE FROM sessions WHERE id = $1 AND quarantined_at IS NULL",
                    &[&id.to_string()],
                )
                .await
                .map_err(query("delete a session"))?;
            lock(&self.leases).remove(&id);
            lock(&self.claims).remove(&id);
            Ok(deleted == 1)
        }
        .boxed()
    }

    fn quarantine_session(&self, id: Uuid, reason: String) -> BoxFuture<'_, StoreResult<()>> {
        async move {
            let client = self.client().await?;
            let row = client
                .query_opt(
                    "UPDATE sessions
                     SET quarantined_at = clock_timestamp(), quarantine_reason = $2
                     WHERE id = $1 AND quarantined_at IS NULL
                     RETURNING (extract(epoch FROM quarantined_at) * 1000)::bigint",
                    &[&id.to_string(), &reason],
                )
                .await
                .map_err(query("quarantine a session"))?;
            let Some(row) = row else {
                return Err(RuntimeError::not_found("session", id.to_string()).into());
            };
            tracing::warn!(session = %id, reason = %reason, "session quarantined");
            lock(&self.quarantined).push(QuarantinedSession {
                session_id: id.to_string(),
                reason,
                quarantined_at_ms: count(row.get(0)),
            });
            Ok(())
        }
        .boxed()
    }

    /// As of this replica's last quarantine or heartbeat: a session another replica set
    /// aside shows up within a third of the lease time.
    fn quarantined(&self) -> Vec<QuarantinedSession> {
        lock(&self.quarantined).clone()
    }
}
