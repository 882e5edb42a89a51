//! Turns found by their session: the server holds recent executions in memory, and the
//! session's log holds every turn, so a turn named with its session is found after a
//! restart or long after it ended, from the log.

use uuid::Uuid;

use super::OdysseyRuntime;
use crate::error::{Result, RuntimeError};
use crate::execution::{ExecutionState, ExecutionStatus};
use crate::session::LoggedTurn;

/// Why a turn the log shows open, that nothing runs, ended.
const LEFT_OPEN: &str = "the server stopped while this turn was running";

/// A turn of a session: its status, and what the log holds of it (nothing yet while it
/// is queued).
#[derive(Clone, Debug)]
pub struct SessionTurn {
    pub status: ExecutionStatus,
    pub logged: Option<LoggedTurn>,
}

impl OdysseyRuntime {
    /// The status of turn `turn_id` of session `session_id`: as the server holds it while
    /// it does, else as the session's log records it.
    pub async fn turn_status(&self, session_id: Uuid, turn_id: Uuid) -> Result<ExecutionStatus> {
        Ok(self.session_turn(session_id, turn_id).await?.status)
    }

    /// Turn `turn_id` of session `session_id`; what its log holds of it is read only when
    /// the server no longer holds the turn.
    pub async fn session_turn(&self, session_id: Uuid, turn_id: Uuid) -> Result<SessionTurn> {
        let not_found = || {
            RuntimeError::not_found(
                "turn",
                format!("{turn_id} (session {session_id} has no such turn)"),
            )
        };
        let held = |runtime: &Self| {
            runtime
                .inner
                .executions
                .get(turn_id)
                .filter(|s| s.session_id == session_id)
        };
        if let Some(status) = held(self) {
            return Ok(SessionTurn {
                status,
                logged: None,
            });
        }
        // Opening the session also closes a turn a crash left open in its log.
        let session = self.inner.sessions.get(session_id).await?;
        let copy = session.clone();
        let logged = tokio::task::spawn_blocking(move || session.logged_turns(Some(turn_id)))
            .await
            .map_err(|e| RuntimeError::storage("read turns", std::io::Error::other(e)))??
            .pop();
        match (held(self), logged) {
            (Some(status), logged) => Ok(SessionTurn { status, logged }),
            (None, Some(logged)) => {
                let mut status = status_from_log(session_id, &logged);
                if logged.end.is_none() && self.runs_elsewhere(turn_id).await? {
                    // Open in the log because another server sharing the store runs it.
                    let asks = copy
                        .waiting_requests()
                        .is_some_and(|(turn, _, ids)| turn == turn_id && !ids.is_empty());
                    status.state = if asks {
                        ExecutionState::WaitingApproval
                    } else {
                        ExecutionState::Running
                    };
                    status.error.clear();
                }
                Ok(SessionTurn {
                    status,
                    logged: Some(logged),
                })
            }
            (None, None) => Err(not_found()),
        }
    }

    /// Whether another server sharing the store runs turn `turn_id` now.
    async fn runs_elsewhere(&self, turn_id: Uuid) -> Result<bool> {
        if !self.shares_store() {
            return Ok(false);
        }
        Ok(self
            .inner
            .queue
            .locate(turn_id)
            .await?
            .is_some_and(|found| matches!(found.place, crate::store::Placement::Running { .. })))
    }

    /// Every turn of session `session_id`, oldest first: those of its log, then those
    /// queued. Reads the whole log.
    pub async fn session_turns(&self, session_id: Uuid) -> Result<Vec<SessionTurn>> {
        let session = self.inner.sessions.get(session_id).await?;
        let logged = tokio::task::spawn_blocking(move || session.logged_turns(None))
            .await
            .map_err(|e| RuntimeError::storage("read turns", std::io::Error::other(e)))??;
        let mut turns: Vec<SessionTurn> = logged
            .into_iter()
            .map(|logged| {
                let status = self
                    .inner
                    .executions
                    .get(logged.turn_id)
                    .filter(|s| s.session_id == session_id)
                    .unwrap_or_else(|| status_from_log(session_id, &logged));
                SessionTurn {
                    status,
                    logged: Some(logged),
                }
            })
            .collect();
        let mut queued: Vec<ExecutionStatus> = self
            .inner
            .executions
            .live_of_session(session_id)
            .into_iter()
            .filter_map(|id| self.inner.executions.get(id))
            .filter(|s| s.first_sequence == 0)
            .collect();
        // Execution ids are time-ordered (version 7): oldest first.
        queued.sort_by_key(|s| s.execution_id);
        turns.extend(queued.into_iter().map(|status| SessionTurn {
            status,
            logged: None,
        }));
        Ok(turns)
    }
}

/// A turn's status as its log records it.
fn status_from_log(session_id: Uuid, logged: &LoggedTurn) -> ExecutionStatus {
    let (state, response, error, usage, last_sequence) = match &logged.end {
        Some(end) => (
            ExecutionState::from_outcome(end.outcome),
            end.response.clone(),
            end.error.clone(),
            end.usage,
            end.last_sequence,
        ),
        // Open in the log, and run by nothing: its end could not be written yet.
        None => (
            ExecutionState::Interrupted,
            String::new(),
            LEFT_OPEN.to_owned(),
            Default::default(),
            0,
        ),
    };
    ExecutionStatus {
        execution_id: logged.turn_id,
        session_id,
        state,
        response,
        error,
        usage,
        first_sequence: logged.first_sequence,
        last_sequence,
    }
}
