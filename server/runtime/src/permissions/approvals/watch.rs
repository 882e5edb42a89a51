//! Following the pending requests: a snapshot, then every request filed and every request
//! that ends, in the order the store saw them.
//!
//! Changes are published under the store's lock, and a watch takes its snapshot and its
//! subscription under that same lock, so nothing falls between the two: a request is in
//! the snapshot or arrives as `Added`, and its end always arrives after it. A watcher that
//! falls behind the channel gets a fresh snapshot instead of the changes it missed.

use tokio::sync::broadcast;
use uuid::Uuid;

use super::{Approval, ApprovalStore, RequestsElsewhere};

/// How many changes a watcher may fall behind before it is sent a fresh snapshot.
const CHANGES_CAPACITY: usize = 1024;

/// One change to the set of pending requests.
#[derive(Clone, Debug, PartialEq)]
pub enum ApprovalChange {
    /// A request now waits for a human.
    Added(Approval),
    /// A request ended (decided, timed out, cancelled, interrupted); `resolution` says how.
    Removed(Approval),
}

impl ApprovalChange {
    fn approval(&self) -> &Approval {
        match self {
            Self::Added(a) | Self::Removed(a) => a,
        }
    }
}

/// What a watcher receives. One is made per change and handed straight on, so its size
/// (an inline `Approval`) costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum ApprovalUpdate {
    /// Every pending request (of the watched session), oldest first: replaces whatever the
    /// watcher held. The first update of every watch, and again after falling behind.
    Snapshot(Vec<Approval>),
    Change(ApprovalChange),
}

/// The sending side, kept in the store's state.
pub(super) struct Changes {
    sender: broadcast::Sender<ApprovalChange>,
}

impl Default for Changes {
    fn default() -> Self {
        Self {
            sender: broadcast::channel(CHANGES_CAPACITY).0,
        }
    }
}

impl Changes {
    /// Publishes a change; nobody watching is fine.
    pub(super) fn publish(&self, change: ApprovalChange) {
        let _ = self.sender.send(change);
    }

    pub(super) fn subscribe(&self) -> broadcast::Receiver<ApprovalChange> {
        self.sender.subscribe()
    }
}

/// A live view of the pending requests, optionally of one session.
pub struct ApprovalWatch {
    store: ApprovalStore,
    session: Option<Uuid>,
    receiver: broadcast::Receiver<ApprovalChange>,
    /// The requests of turns other servers sharing the store run, when followed too.
    elsewhere: Option<(RequestsElsewhere, broadcast::Receiver<ApprovalChange>)>,
    /// The snapshot not yet handed out.
    snapshot: Option<Vec<Approval>>,
}

impl std::fmt::Debug for ApprovalWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalWatch")
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

impl ApprovalWatch {
    pub(super) fn start(
        store: ApprovalStore,
        elsewhere: Option<RequestsElsewhere>,
        session: Option<Uuid>,
    ) -> Self {
        let (mut snapshot, receiver) = store.snapshot_and_subscribe(session);
        let elsewhere = elsewhere.map(|board| {
            let (theirs, receiver) = board.snapshot_and_subscribe(session);
            snapshot = merged(std::mem::take(&mut snapshot), theirs);
            (board, receiver)
        });
        Self {
            store,
            session,
            receiver,
            elsewhere,
            snapshot: Some(snapshot),
        }
    }

    /// A fresh snapshot of both sources, each with a new subscription.
    fn resnapshot(&mut self) -> Vec<Approval> {
        let (mut snapshot, receiver) = self.store.snapshot_and_subscribe(self.session);
        self.receiver = receiver;
        if let Some((board, receiver)) = &mut self.elsewhere {
            let (theirs, fresh) = board.snapshot_and_subscribe(self.session);
            *receiver = fresh;
            snapshot = merged(snapshot, theirs);
        }
        snapshot
    }

    /// The next update: the snapshot first, then changes as they happen. `None` once the
    /// store is gone (never while the runtime runs).
    pub async fn next(&mut self) -> Option<ApprovalUpdate> {
        if let Some(snapshot) = self.snapshot.take() {
            return Some(ApprovalUpdate::Snapshot(snapshot));
        }
        loop {
            let received = match &mut self.elsewhere {
                None => self.receiver.recv().await,
                // Each source in its order; a request never moves between them.
                Some((_, theirs)) => tokio::select! {
                    change = self.receiver.recv() => change,
                    change = theirs.recv() => change,
                },
            };
            match received {
                Ok(change) => {
                    let session = change.approval().request.session_id;
                    if self.session.is_none_or(|s| s == session) {
                        return Some(ApprovalUpdate::Change(change));
                    }
                }
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::debug!(missed, "approval watcher fell behind; sending a snapshot");
                    return Some(ApprovalUpdate::Snapshot(self.resnapshot()));
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}

/// This server's requests and those of turns run elsewhere, oldest first (request ids
/// are version 7: time-ordered).
fn merged(mut ours: Vec<Approval>, theirs: Vec<Approval>) -> Vec<Approval> {
    if theirs.is_empty() {
        return ours;
    }
    ours.extend(theirs);
    ours.sort_by(|a, b| a.request_id.cmp(&b.request_id));
    ours
}
