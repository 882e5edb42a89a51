//! The requests of turns other servers sharing the store run, as this server's copies of
//! their sessions show them: what a watch here follows beside this server's own requests.
//!
//! The runtime fills it from the sessions' logs (a request filed, a request ended, a turn
//! ended); changes are published under its lock and a watch takes its snapshot and its
//! subscription under that same lock, as for this server's own requests, so a request is
//! in a watcher's snapshot or arrives as `Added`, and its end always arrives after it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::broadcast;
use uuid::Uuid;

use super::watch::{ApprovalChange, Changes};
use super::{Approval, Resolution};

/// The pending requests of turns run elsewhere. Cloning shares it.
#[derive(Clone, Default)]
pub struct RequestsElsewhere {
    state: Arc<Mutex<Board>>,
}

#[derive(Default)]
struct Board {
    /// By request id: version 7 ids, so oldest first.
    pending: BTreeMap<String, Approval>,
    changes: Changes,
}

impl RequestsElsewhere {
    fn lock(&self) -> MutexGuard<'_, Board> {
        crate::sync::lock(&self.state)
    }

    /// A request filed; one already held is left as it is.
    pub fn add(&self, approval: Approval) {
        let mut board = self.lock();
        if board.pending.contains_key(&approval.request_id) {
            return;
        }
        board
            .changes
            .publish(ApprovalChange::Added(approval.clone()));
        board.pending.insert(approval.request_id.clone(), approval);
    }

    /// Request `request_id` ended as `resolution`; nothing when it is not held.
    pub fn end(&self, request_id: &str, resolution: Resolution) {
        let mut board = self.lock();
        if let Some(mut approval) = board.pending.remove(request_id) {
            approval.resolution = Some(resolution);
            board.changes.publish(ApprovalChange::Removed(approval));
        }
    }

    /// Ends every request held that `which` selects, as `resolution`.
    fn end_where(&self, which: impl Fn(&Approval) -> bool, resolution: &Resolution) {
        let mut board = self.lock();
        let ended: Vec<String> = board
            .pending
            .values()
            .filter(|a| which(a))
            .map(|a| a.request_id.clone())
            .collect();
        for id in ended {
            if let Some(mut approval) = board.pending.remove(&id) {
                approval.resolution = Some(resolution.clone());
                board.changes.publish(ApprovalChange::Removed(approval));
            }
        }
    }

    /// The requests of turn `execution_id` still held end as `resolution` (its log
    /// normally ended each one before the turn's end).
    pub fn end_turn(&self, execution_id: Uuid, resolution: &Resolution) {
        self.end_where(|a| a.request.execution_id == execution_id, resolution);
    }

    /// The requests of session `session_id` end as `resolution` (it is no longer followed).
    pub fn end_session(&self, session_id: Uuid, resolution: &Resolution) {
        self.end_where(|a| a.request.session_id == session_id, resolution);
    }

    /// Whether a request of session `session_id` is held.
    pub fn has_pending(&self, session_id: Uuid) -> bool {
        self.lock()
            .pending
            .values()
            .any(|a| a.request.session_id == session_id)
    }

    /// The requests held (of `session`, or all), oldest first, and a subscription to the
    /// changes after them, under one lock.
    pub(super) fn snapshot_and_subscribe(
        &self,
        session: Option<Uuid>,
    ) -> (Vec<Approval>, broadcast::Receiver<ApprovalChange>) {
        let board = self.lock();
        let snapshot = board
            .pending
            .values()
            .filter(|a| session.is_none_or(|s| s == a.request.session_id))
            .cloned()
            .collect();
        (snapshot, board.changes.subscribe())
    }
}
