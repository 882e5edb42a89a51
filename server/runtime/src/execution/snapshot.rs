//! The workspace snapshot at a turn's end: the session's commands still running are
//! killed, then `data/` is recorded (see `crate::snapshot`) before the turn's end is
//! written, and synced while the end is synced (the end is published once both are on
//! stable storage), so whoever sees the turn end can fork from it. A snapshot that fails or is
//! skipped (a workspace past the limits) never fails the turn: the turn's events say so.
//!
//! An overlay workspace's turn end stops every process of the cell, its MCP servers
//! included (they start again when next called): a process that outlived the end would
//! keep its own view of the old mount, missing what later turns write, and would keep
//! writing through it into the folder that has just become an immutable layer, shared
//! with forks.

use std::sync::Arc;

use uuid::Uuid;

use crate::api::OdysseyRuntime;
use crate::events::EventPayload;
use crate::sandbox::CellPaths;
use crate::session::SessionHandle;
use crate::snapshot::overlay::UnsyncedLayer;
use crate::snapshot::{SnapshotError, SnapshotOutcome, UnsyncedSnapshot};

/// What a turn's end recorded, still to be synced while the end is synced.
#[derive(Debug)]
pub(crate) enum TurnSnapshot {
    Copies(UnsyncedSnapshot),
    Overlay(UnsyncedLayer),
}

impl TurnSnapshot {
    /// Puts what the turn's end recorded on stable storage.
    pub(crate) fn sync(self) -> Result<(), SnapshotError> {
        match self {
            Self::Copies(snapshot) => snapshot.sync(),
            Self::Overlay(layer) => layer.sync(),
        }
    }
}

impl OdysseyRuntime {
    /// Records the workspace at the turn's end; answers what is left to sync, if anything
    /// was recorded.
    pub(crate) async fn snapshot_workspace(
        &self,
        session: &Arc<SessionHandle>,
        turn_id: Uuid,
    ) -> Option<TurnSnapshot> {
        let settings = self.inner.config.snapshots.clone();
        if !settings.enabled {
            return None;
        }
        let cell = CellPaths::under(
            self.inner
                .config
                .sandbox_dir()
                .join(session.id().to_string()),
        );
        let workspaces = self.inner.workspaces.clone();
        let overlay = workspaces.is_overlay(session.id());
        let shares_overlay = session
            .record()
            .parent
            .as_ref()
            .and_then(|p| p.workspace_of)
            .is_some_and(|of| workspaces.is_overlay(of));
        if cell.root.exists() {
            if overlay || shares_overlay {
                // Stopped through their manager, which starts them again when next
                // needed (a killed one would count as a failure).
                self.inner.mcp.forget_session(session.id()).await;
                self.inner.sandbox.kill_cell_processes(&cell).await;
            } else {
                self.inner.sandbox.kill_cell_commands(&cell).await;
            }
        }
        let turn = session.stats().turn_count + 1;
        let data = cell.data;
        if overlay {
            let id = session.id();
            let owner = self.inner.sandbox.sandbox_owner();
            let squashing = workspaces.clone();
            let committed = tokio::task::spawn_blocking(move || {
                workspaces.commit(
                    id,
                    &data,
                    turn,
                    turn_id,
                    (settings.max_turns, settings.max_bytes),
                    owner,
                )
            })
            .await;
            let problem = match committed {
                Ok(Ok(layer)) => {
                    tracing::debug!(session = %id, turn, wrote = layer.layer.is_some(), "workspace layer committed");
                    // Off the turn's path: the next turn may run while old layers merge.
                    tokio::task::spawn_blocking(move || {
                        if let Err(e) = squashing.squash_if_needed(id) {
                            tracing::warn!(session = %id, error = %e, "cannot squash the workspace's layers");
                        }
                    });
                    return Some(TurnSnapshot::Overlay(layer));
                }
                Ok(Err(e)) => e.client_message(),
                Err(e) => format!("the workspace snapshot stopped: {e}"),
            };
            self.snapshot_failed(session, turn, turn_id, problem);
            return None;
        }
        let store = self.snapshots_of(session.id(), session.dir());
        let recorded = tokio::task::spawn_blocking(move || {
            store.record_unsynced(&data, turn, turn_id, &settings)
        })
        .await;
        let problem = match recorded {
            Ok(Ok((SnapshotOutcome::Recorded(taken), unsynced))) => {
                tracing::debug!(session = %session.id(), turn, entries = taken.entries, hashed_files = taken.hashed_files, hashed_bytes = taken.hashed_bytes, "workspace snapshot recorded");
                return Some(TurnSnapshot::Copies(unsynced));
            }
            // Nothing to fork from: the manifest saying why needs no sync of its own.
            Ok(Ok((SnapshotOutcome::Skipped(reason), _))) => (
                "workspace_snapshot_skipped",
                format!(
                    "the workspace was not snapshotted at the end of this turn ({reason}); \
                     the session cannot be forked from or rewound to this turn"
                ),
            ),
            Ok(Err(e)) => {
                self.snapshot_failed(
                    session,
                    turn,
                    turn_id,
                    crate::error::RuntimeError::from(e).client_message(),
                );
                return None;
            }
            Err(e) => {
                self.snapshot_failed(
                    session,
                    turn,
                    turn_id,
                    format!("the workspace snapshot stopped: {e}"),
                );
                return None;
            }
        };
        tracing::warn!(session = %session.id(), turn, code = problem.0, "{}", problem.1);
        let _ = session.append_now(
            Some(turn_id),
            EventPayload::ErrorOccurred {
                code: problem.0.into(),
                message: problem.1,
                fatal: false,
            },
        );
        None
    }

    /// Says in the turn's events (and the log) that its workspace was not recorded.
    fn snapshot_failed(&self, session: &Arc<SessionHandle>, turn: u64, turn_id: Uuid, why: String) {
        let message = format!(
            "the workspace could not be snapshotted at the end of this turn ({why}); the \
             session cannot be forked from or rewound to this turn"
        );
        tracing::warn!(session = %session.id(), turn, code = "workspace_snapshot_failed", "{message}");
        let _ = session.append_now(
            Some(turn_id),
            EventPayload::ErrorOccurred {
                code: "workspace_snapshot_failed".into(),
                message,
                fatal: false,
            },
        );
    }
}
