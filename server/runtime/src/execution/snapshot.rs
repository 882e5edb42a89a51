//! The workspace snapshot at a turn's end: the session's commands still running are
//! killed, then `data/` is recorded (see `crate::snapshot`) before the turn's end is
//! written, and synced while the end is synced (the end is published once both are on
//! stable storage), so whoever sees the turn end can fork from it. A snapshot that fails or is
//! skipped (a workspace past the limits) never fails the turn: the turn's events say so.

use std::sync::Arc;

use uuid::Uuid;

use crate::api::OdysseyRuntime;
use crate::events::EventPayload;
use crate::sandbox::CellPaths;
use crate::session::SessionHandle;
use crate::snapshot::{SnapshotOutcome, SnapshotStore, UnsyncedSnapshot};

impl OdysseyRuntime {
    /// Records the workspace at the turn's end; answers what is left to sync, if anything
    /// was recorded.
    pub(crate) async fn snapshot_workspace(
        &self,
        session: &Arc<SessionHandle>,
        turn_id: Uuid,
    ) -> Option<UnsyncedSnapshot> {
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
        if cell.root.exists() {
            self.inner.sandbox.kill_cell_commands(&cell).await;
        }
        let turn = session.stats().turn_count + 1;
        let store = SnapshotStore::of_session(session.dir());
        let data = cell.data;
        let recorded = tokio::task::spawn_blocking(move || {
            store.record_unsynced(&data, turn, turn_id, &settings)
        })
        .await;
        let problem = match recorded {
            Ok(Ok((SnapshotOutcome::Recorded(taken), unsynced))) => {
                tracing::debug!(session = %session.id(), turn, entries = taken.entries, hashed_files = taken.hashed_files, hashed_bytes = taken.hashed_bytes, "workspace snapshot recorded");
                return Some(unsynced);
            }
            // Nothing to fork from: the manifest saying why needs no sync of its own.
            Ok(Ok((SnapshotOutcome::Skipped(reason), _))) => (
                "workspace_snapshot_skipped",
                format!(
                    "the workspace was not snapshotted at the end of this turn ({reason}); \
                     the session cannot be forked from or rewound to this turn"
                ),
            ),
            Ok(Err(e)) => (
                "workspace_snapshot_failed",
                format!(
                    "the workspace could not be snapshotted at the end of this turn ({}); \
                     the session cannot be forked from or rewound to this turn",
                    crate::error::RuntimeError::from(e).client_message()
                ),
            ),
            Err(e) => (
                "workspace_snapshot_failed",
                format!("the workspace snapshot stopped: {e}"),
            ),
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
}
