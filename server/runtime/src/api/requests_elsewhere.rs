//! Watching the requests of turns other servers run (a store several servers share).
//!
//! A turn waits for a person in the memory of the server running it, and files each
//! request in its session's log. A watch on another server follows them from its copies
//! of those sessions: once something watches here, this server follows the sessions whose
//! turn runs elsewhere (at most [`SESSIONS_LOOKED_AT`], the ones the store lists first),
//! reading each copy's log as it grows through the store's wake-ups, and keeps their
//! pending requests in a [`RequestsElsewhere`] board that every watch here merges with
//! this server's own requests. A session starts being followed when a wake-up says its
//! log grew and this server neither runs nor follows it (one query of the store for the
//! sessions running elsewhere, at most every [`LOOK_GAP`]); it stops when the store deletes
//! it, or, when room is needed, once its log shows no turn open.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::broadcast::{self, error::RecvError, error::TryRecvError};
use tokio::task::AbortHandle;
use uuid::Uuid;

use super::signals::{SESSIONS_LOOKED_AT, requested, resolution_of};
use super::{Inner, OdysseyRuntime};
use crate::error::{Result, RuntimeError};
use crate::events::{ApprovalResolution, Event, EventPayload};
use crate::permissions::{ApprovalWatch, RequestsElsewhere, Resolution};
use crate::session::SessionHandle;
use crate::store::LogWake;

/// The shortest time between two looks for sessions newly running elsewhere.
const LOOK_GAP: Duration = Duration::from_millis(20);

/// What this server follows of the turns other servers run.
pub(crate) struct FollowedElsewhere {
    pub(crate) board: RequestsElsewhere,
    started: tokio::sync::OnceCell<()>,
    /// The sessions followed: their copy, and the task reading it.
    followed: Mutex<HashMap<Uuid, (Weak<SessionHandle>, AbortHandle)>>,
    /// The store's wake-ups, subscribed again when following starts (`None`: a store only
    /// this server uses).
    wakes: Option<broadcast::Receiver<LogWake>>,
}

impl FollowedElsewhere {
    pub(crate) fn new(wakes: Option<broadcast::Receiver<LogWake>>) -> Self {
        Self {
            board: RequestsElsewhere::default(),
            started: tokio::sync::OnceCell::new(),
            followed: Mutex::new(HashMap::new()),
            wakes,
        }
    }

    fn follows(&self, session_id: Uuid) -> bool {
        crate::sync::lock(&self.followed).contains_key(&session_id)
    }
}

impl Drop for FollowedElsewhere {
    fn drop(&mut self) {
        for (_, (_, task)) in crate::sync::lock(&self.followed).drain() {
            task.abort();
        }
    }
}

impl OdysseyRuntime {
    /// [`OdysseyRuntime::watch_approvals`], with the requests of turns other servers
    /// sharing the store run (as this server's copies of their sessions show them): the
    /// same updates, in the same order per request. On a store only this server uses, the
    /// same as `watch_approvals`.
    pub async fn watch_approvals_anywhere(&self, session: Option<Uuid>) -> Result<ApprovalWatch> {
        if self.inner.turn_signals.is_none() {
            return self.watch_approvals(session);
        }
        if let Some(id) = session {
            // The store's, not this server's copies: it may never have opened the session.
            self.stored_session(id).await?;
        }
        self.follow_requests_elsewhere().await?;
        Ok(self
            .inner
            .approvals
            .watch_with(self.inner.elsewhere.board.clone(), session))
    }

    /// Starts following the sessions whose turn runs elsewhere, once: the first watch
    /// waits until the requests pending now are on the board.
    async fn follow_requests_elsewhere(&self) -> Result<()> {
        let followed = &self.inner.elsewhere;
        followed
            .started
            .get_or_try_init(|| async {
                // Subscribed first: a log that grows while the others are looked for
                // wakes the loop.
                let wakes = followed
                    .wakes
                    .as_ref()
                    .map(broadcast::Receiver::resubscribe);
                self.follow_sessions_elsewhere().await?;
                if let Some(wakes) = wakes {
                    tokio::spawn(follow_wakes(Arc::downgrade(&self.inner), wakes));
                }
                Ok::<(), RuntimeError>(())
            })
            .await?;
        Ok(())
    }

    /// Follows the sessions the store says run a turn elsewhere that are not followed yet.
    async fn follow_sessions_elsewhere(&self) -> Result<()> {
        for copy in self.copies_running_elsewhere().await? {
            self.follow_copy(copy).await;
        }
        Ok(())
    }

    /// Puts the requests `copy` shows pending on the board and follows its log from there.
    async fn follow_copy(&self, copy: Arc<SessionHandle>) {
        let session_id = copy.id();
        {
            let mut followed = crate::sync::lock(&self.inner.elsewhere.followed);
            if followed.contains_key(&session_id) {
                return;
            }
            if followed.len() >= SESSIONS_LOOKED_AT {
                // Room from the sessions whose log shows no turn open.
                let idle: Vec<Uuid> = followed
                    .iter()
                    .filter(|(_, (copy, _))| {
                        copy.upgrade()
                            .is_none_or(|copy| copy.waiting_requests().is_none())
                    })
                    .map(|(id, _)| *id)
                    .collect();
                for id in idle {
                    if let Some((_, task)) = followed.remove(&id) {
                        task.abort();
                        self.inner.elsewhere.board.end_session(
                            id,
                            &Resolution::ended(ApprovalResolution::Cancelled, "the turn ended"),
                        );
                    }
                }
            }
            if followed.len() >= SESSIONS_LOOKED_AT {
                tracing::debug!(session = %session_id, "too many sessions running elsewhere to follow another");
                return;
            }
        }
        let from = copy.last_sequence();
        match self.requests_of(&copy).await {
            Ok(pending) => {
                for approval in pending.into_values() {
                    self.inner.elsewhere.board.add(approval);
                }
            }
            Err(e) => {
                tracing::debug!(session = %session_id, error = %e, "cannot read the requests of a session running elsewhere");
                return;
            }
        }
        // Under the lock: a task that ends at once removes its entry after this adds it.
        let mut followed = crate::sync::lock(&self.inner.elsewhere.followed);
        let task = tokio::spawn(read_copy(Arc::downgrade(&self.inner), copy.clone(), from));
        followed.insert(session_id, (Arc::downgrade(&copy), task.abort_handle()));
    }

    /// What an event of a session followed elsewhere changes on the board.
    fn note_elsewhere(&self, session: &SessionHandle, event: &Event) {
        let board = &self.inner.elsewhere.board;
        match &event.payload {
            EventPayload::PermissionRequested { .. } | EventPayload::HumanInputRequested(_) => {
                // A turn this server runs files its requests here itself.
                let elsewhere = event
                    .turn_id
                    .is_some_and(|turn| self.inner.executions.get(turn).is_none());
                if elsewhere
                    && let Some(approval) =
                        requested(event, session, self.inner.approvals.timeout())
                {
                    board.add(approval);
                }
            }
            EventPayload::ApprovalResolved { request_id, .. } => {
                if let Some(resolution) = resolution_of(event, request_id) {
                    board.end(request_id, resolution);
                }
            }
            EventPayload::HumanInputAnswered(answered) => {
                if let Some(resolution) = resolution_of(event, &answered.request_id) {
                    board.end(&answered.request_id, resolution);
                }
            }
            EventPayload::TurnCompleted(_) => {
                if let Some(turn) = event.turn_id {
                    board.end_turn(
                        turn,
                        &Resolution::ended(ApprovalResolution::Cancelled, "the turn ended"),
                    );
                }
            }
            _ => {}
        }
    }
}

/// Reads a followed copy's log from after `from` for as long as it is followed; its
/// requests end when the session is gone.
async fn read_copy(inner: Weak<Inner>, session: Arc<SessionHandle>, from: u64) {
    let session_id = session.id();
    let mut log = session.subscribe(from);
    loop {
        let batch = match log.next_batch().await {
            Ok(Some(batch)) => batch,
            Ok(None) => break,
            Err(e) => {
                tracing::debug!(session = %session_id, error = %e, "stopped following a session running elsewhere");
                break;
            }
        };
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let runtime = OdysseyRuntime { inner };
        for event in &batch {
            runtime.note_elsewhere(&session, event);
        }
    }
    if let Some(inner) = inner.upgrade() {
        crate::sync::lock(&inner.elsewhere.followed).remove(&session_id);
        inner.elsewhere.board.end_session(
            session_id,
            &Resolution::ended(ApprovalResolution::Cancelled, "the session was deleted"),
        );
    }
}

/// Looks for sessions newly running elsewhere when the store says a log grew that this
/// server neither runs nor follows (or that wake-ups were missed).
async fn follow_wakes(inner: Weak<Inner>, mut wakes: broadcast::Receiver<LogWake>) {
    loop {
        let first = wakes.recv().await;
        let Some(strong) = inner.upgrade() else {
            return;
        };
        let mut look = match first {
            Ok(wake) => worth_a_look(&strong, &wake),
            Err(RecvError::Lagged(_)) => true,
            Err(RecvError::Closed) => return,
        };
        // Every wake-up waiting now, for one look.
        loop {
            match wakes.try_recv() {
                Ok(wake) => look |= worth_a_look(&strong, &wake),
                Err(TryRecvError::Lagged(_)) => look = true,
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Closed) => return,
            }
        }
        if look {
            let runtime = OdysseyRuntime { inner: strong };
            if let Err(e) = runtime.follow_sessions_elsewhere().await {
                tracing::debug!(error = %e, "cannot look for the sessions running elsewhere");
            }
            drop(runtime);
            tokio::time::sleep(LOOK_GAP).await;
        }
    }
}

/// Whether `wake` may mean a session's turn started elsewhere.
fn worth_a_look(inner: &Inner, wake: &LogWake) -> bool {
    match wake {
        LogWake::Grew { session_id, .. } => {
            !inner.elsewhere.follows(*session_id)
                && inner.executions.live_of_session(*session_id).is_empty()
        }
        LogWake::Resync => true,
        LogWake::Deleted { .. } => false,
    }
}
