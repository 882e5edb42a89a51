//! Session rows: the runtime's record of each session (opaque bytes here) and the last
//! sequence of its event log.

use crate::error::is_unique_violation;
use crate::{Store, StoreError};

/// A session as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredSession {
    pub id: String,
    pub record: Vec<u8>,
    pub last_sequence: i64,
}

impl Store {
    /// Creates a session with an empty event log; an id already taken is refused.
    pub async fn create_session(&self, id: &str, record: &[u8]) -> Result<(), StoreError> {
        let client = self.client().await?;
        client
            .execute(
                "INSERT INTO sessions (id, record) VALUES ($1, $2)",
                &[&id, &record],
            )
            .await
            .map_err(|e| {
                if is_unique_violation(&e) {
                    StoreError::SessionExists(id.to_owned())
                } else {
                    StoreError::query("create a session")(e)
                }
            })?;
        Ok(())
    }

    /// The session, or `None` when there is no such session.
    pub async fn session(&self, id: &str) -> Result<Option<StoredSession>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT id, record, last_sequence FROM sessions WHERE id = $1",
                &[&id],
            )
            .await
            .map_err(StoreError::query("read a session"))?;
        Ok(row.map(|row| StoredSession {
            id: row.get(0),
            record: row.get(1),
            last_sequence: row.get(2),
        }))
    }
}
