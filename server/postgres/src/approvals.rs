//! Tool calls waiting for a human, answerable from any replica. A call is decided once:
//! the first answer wins, whichever replica it reached.

use crate::error::{is_foreign_key_violation, is_unique_violation};
use crate::{Store, StoreError};

/// An approval as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredApproval {
    pub id: String,
    pub session_id: String,
    pub turn_id: String,
    pub request: Vec<u8>,
}

/// The answer to an approval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApprovalAnswer {
    Allowed,
    Denied,
    /// No one answered in time.
    Expired,
}

impl ApprovalAnswer {
    fn as_str(self) -> &'static str {
        match self {
            Self::Allowed => "allowed",
            Self::Denied => "denied",
            Self::Expired => "expired",
        }
    }
}

impl Store {
    /// Records a tool call waiting for an answer.
    pub async fn add_approval(&self, approval: &StoredApproval) -> Result<(), StoreError> {
        let client = self.client().await?;
        client
            .execute(
                "INSERT INTO approvals (id, session_id, turn_id, request) VALUES ($1, $2, $3, $4)",
                &[
                    &approval.id,
                    &approval.session_id,
                    &approval.turn_id,
                    &approval.request,
                ],
            )
            .await
            .map_err(|e| {
                if is_unique_violation(&e) {
                    StoreError::ApprovalExists(approval.id.clone())
                } else if is_foreign_key_violation(&e) {
                    StoreError::SessionNotFound(approval.session_id.clone())
                } else {
                    StoreError::query("record an approval")(e)
                }
            })?;
        Ok(())
    }

    /// Answers a pending approval; `decision` is the runtime's encoded answer (who, why).
    /// An approval already answered is [`StoreError::ApprovalDecided`] (the first answer
    /// stands), an unknown one [`StoreError::ApprovalNotFound`].
    pub async fn decide_approval(
        &self,
        id: &str,
        answer: ApprovalAnswer,
        decision: &[u8],
    ) -> Result<(), StoreError> {
        let client = self.client().await?;
        let changed = client
            .execute(
                "UPDATE approvals SET state = $2, decision = $3, decided_at = clock_timestamp()
                 WHERE id = $1 AND state = 'pending'",
                &[&id, &answer.as_str(), &decision],
            )
            .await
            .map_err(StoreError::query("answer an approval"))?;
        if changed == 1 {
            return Ok(());
        }
        let exists = client
            .query_opt("SELECT 1 FROM approvals WHERE id = $1", &[&id])
            .await
            .map_err(StoreError::query("read an approval"))?
            .is_some();
        Err(if exists {
            StoreError::ApprovalDecided(id.to_owned())
        } else {
            StoreError::ApprovalNotFound(id.to_owned())
        })
    }

    /// The approvals of a session still waiting, oldest first.
    pub async fn pending_approvals(
        &self,
        session_id: &str,
    ) -> Result<Vec<StoredApproval>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT id, session_id, turn_id, request FROM approvals
                 WHERE session_id = $1 AND state = 'pending' ORDER BY created_at, id",
                &[&session_id],
            )
            .await
            .map_err(StoreError::query("read approvals"))?;
        Ok(rows
            .iter()
            .map(|row| StoredApproval {
                id: row.get(0),
                session_id: row.get(1),
                turn_id: row.get(2),
                request: row.get(3),
            })
            .collect())
    }

    /// How an approval was answered, with the encoded decision; `None` while pending.
    pub async fn approval_answer(
        &self,
        id: &str,
    ) -> Result<Option<(ApprovalAnswer, Vec<u8>)>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT state, decision FROM approvals WHERE id = $1",
                &[&id],
            )
            .await
            .map_err(StoreError::query("read an approval"))?
            .ok_or_else(|| StoreError::ApprovalNotFound(id.to_owned()))?;
        let state: String = row.get(0);
        let answer = match state.as_str() {
            "allowed" => ApprovalAnswer::Allowed,
            "denied" => ApprovalAnswer::Denied,
            "expired" => ApprovalAnswer::Expired,
            _ => return Ok(None),
        };
        Ok(Some((
            answer,
            row.get::<_, Option<Vec<u8>>>(1).unwrap_or_default(),
        )))
    }
}
