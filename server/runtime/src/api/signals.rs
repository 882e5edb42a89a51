//! Decisions, answers and cancels for turns another server runs, when several servers
//! share the store (see [`crate::store::TurnSignals`]).
//!
//! A turn waits for a person in the memory of the server running it. A client may reach
//! any server, so a server that does not hold a request (or an execution) looks for it in
//! the sessions whose turn runs elsewhere: its copy of each session's log shows the turn's
//! requests still waiting, with what they ask. It checks the call there as the running
//! server would (the request is pending, an answer fits the requested schema), sends it
//! through the store, and answers the client with the outcome once the session's log
//! shows it (within milliseconds), or with the request as it is if the log does not show
//! it within [`OUTCOME_WAIT`]. The server running the turn applies what it is sent as a
//! call of its own ([`OdysseyRuntime::follow_turn_signals`]).
//!
//! A request is in the memory of the server running its turn a moment before its
//! session's log holds it: a client that learned its id there and asks another server at
//! once may be ahead of the log. A request id not found that was made less than
//! [`JUST_FILED`] ago is looked for again until then; an older or unknown id is
//! `NotFound` at once.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;
use uuid::Uuid;

use super::OdysseyRuntime;
use crate::error::{Result, RuntimeError};
use crate::events::{ApprovalDecision, Event, EventPayload, InputAction};
use crate::execution::{ExecutionState, ExecutionStatus};
use crate::permissions::{
    Approval, ApprovalError, CallDisplay, InputAnswer, InputError, InputRequest, PendingApproval,
    Resolution, check_answer, display_call,
};
use crate::session::SessionHandle;
use crate::store::TurnSignal;

/// At most this many sessions whose turn runs elsewhere are looked through for a request
/// this server does not hold.
pub(super) const SESSIONS_LOOKED_AT: usize = 256;

/// How long a server that sent a decision waits to see its outcome in the session's log.
const OUTCOME_WAIT: Duration = Duration::from_secs(5);

/// How long a cancel sent to another server waits for the turn's end.
const CANCEL_WAIT: Duration = Duration::from_secs(30);

/// How long after a request is filed its id may not be found yet in its session's log
/// on another server (it is durable there within milliseconds; this leaves room for a
/// loaded database and for the servers' clocks to differ a little).
const JUST_FILED: Duration = Duration::from_secs(5);

/// The wait before a request just filed is looked for again, doubled each time up to
/// the last (a lookup costs a round trip to the store).
const LOOK_AGAIN_FIRST: Duration = Duration::from_millis(2);
const LOOK_AGAIN_LAST: Duration = Duration::from_millis(50);

/// Events read from a session's log at a time while looking for its requests.
const READ_BATCH: usize = 512;

/// At most this many of a session's last events are read to tell a request that ended
/// from one never filed.
const RESOLVED_LOOKBACK: usize = 4 * READ_BATCH;

/// A request of a turn another server runs, as this server's copy of its session shows it.
struct Elsewhere {
    session: Arc<SessionHandle>,
    approval: Approval,
}

impl OdysseyRuntime {
    /// [`OdysseyRuntime::resolve_approval`], for a request of any server sharing the
    /// store: one this server does not hold is sent to the server running its turn (see
    /// the module note), and the answer is the request with the outcome the session's log
    /// shows (still pending when it does not show one in time).
    pub async fn resolve_approval_anywhere(
        &self,
        request_id: &str,
        decision: ApprovalDecision,
        reason: String,
    ) -> Result<Approval> {
        let local = self.resolve_approval(request_id, decision, reason.clone());
        if !self.may_be_elsewhere(&local) {
            return local;
        }
        let Some(found) = self.find_elsewhere(request_id).await? else {
            return Err(self.not_pending_elsewhere(request_id).await);
        };
        if found.approval.request.input.is_some() {
            // As the running server reads a plain decision on a request for input.
            let (action, answer) = match decision {
                ApprovalDecision::Deny => (InputAction::Decline, None),
                ApprovalDecision::AllowOnce | ApprovalDecision::AllowAlways => (
                    InputAction::Accept,
                    Some(Value::Object(serde_json::Map::new())),
                ),
            };
            return self.answer_elsewhere(found, action, answer).await;
        }
        let signal = TurnSignal::Decide {
            session_id: found.approval.request.session_id,
            request_id: request_id.to_owned(),
            decision,
            reason,
        };
        self.signal_request(found, signal).await
    }

    /// [`OdysseyRuntime::resolve_input`], for a request of any server sharing the store
    /// (as [`OdysseyRuntime::resolve_approval_anywhere`]): the answer is checked against
    /// the requested schema here before it is sent.
    pub async fn resolve_input_anywhere(
        &self,
        request_id: &str,
        action: InputAction,
        answer: Option<Value>,
    ) -> Result<Approval> {
        let local = self.resolve_input(request_id, action, answer.clone());
        if !self.may_be_elsewhere(&local) {
            return local;
        }
        let Some(found) = self.find_elsewhere(request_id).await? else {
            return Err(self.not_pending_elsewhere(request_id).await);
        };
        self.answer_elsewhere(found, action, answer).await
    }

    /// [`OdysseyRuntime::list_approvals`], with the pending requests of turns other
    /// servers sharing the store run (as this server's copies of their sessions show
    /// them), oldest first. On a store only this server uses, the same as
    /// `list_approvals`.
    pub async fn list_approvals_anywhere(
        &self,
        session: Option<Uuid>,
        page: crate::paging::PageRequest,
    ) -> Result<crate::paging::Page<Approval>> {
        if self.inner.turn_signals.is_none() {
            return self.list_approvals(session, page);
        }
        if let Some(id) = session {
            // The store's, not this server's copies: it may never have opened the session.
            self.stored_session(id).await?;
        }
        let mut all = self.inner.approvals.pending(session);
        let here: std::collections::HashSet<String> =
            all.iter().map(|a| a.request_id.clone()).collect();
        for found in self.waiting_elsewhere(session).await? {
            if !here.contains(&found.approval.request_id) {
                all.push(found.approval);
            }
        }
        // Request ids are time-ordered (version 7): oldest first, and a stable page key.
        all.sort_by(|a, b| a.request_id.cmp(&b.request_id));
        let page = crate::paging::paginate(
            all,
            &page,
            |a| a.request_id.clone(),
            |key| Some(key.to_owned()),
            |a, after| a.request_id.as_str() > after.as_str(),
            |_| true,
        )?;
        Ok(page)
    }

    /// Why request `request_id`, pending nowhere, cannot be resolved: `AlreadyResolved`
    /// when a copy of a session open here shows how it ended (decided on another server,
    /// timed out, cancelled), as the server running its turn would answer; else
    /// `NotFound`. Only the part of each log written since the request was filed (its id
    /// says when) is read, at most [`RESOLVED_LOOKBACK`] events a session.
    async fn not_pending_elsewhere(&self, request_id: &str) -> RuntimeError {
        let not_found = || {
            RuntimeError::from(ApprovalError::NotFound {
                request_id: request_id.to_owned(),
            })
        };
        let Some(filed_ms) = filed_at_ms(request_id) else {
            return not_found();
        };
        let sessions = self.inner.sessions.open_handles();
        let id = request_id.to_owned();
        let found = tokio::task::spawn_blocking(move || {
            sessions
                .iter()
                .find_map(|session| resolution_in_tail(session, &id, filed_ms))
        })
        .await;
        match found {
            Ok(Some(resolution)) => ApprovalError::AlreadyResolved {
                request_id: request_id.to_owned(),
                resolution: resolution.resolution,
            }
            .into(),
            Ok(None) => not_found(),
            Err(e) => RuntimeError::storage("read resolutions", std::io::Error::other(e)),
        }
    }

    /// Whether a call that found nothing here may be for a turn another server runs.
    fn may_be_elsewhere(&self, local: &Result<Approval>) -> bool {
        self.inner.turn_signals.is_some()
            && matches!(
                local,
                Err(RuntimeError::Approval(ApprovalError::NotFound { .. }))
            )
    }

    /// Checks an answer to a request of a turn running elsewhere as the running server
    /// would, then sends it.
    async fn answer_elsewhere(
        &self,
        found: Elsewhere,
        action: InputAction,
        answer: Option<Value>,
    ) -> Result<Approval> {
        let request_id = found.approval.request_id.clone();
        let Some(input) = &found.approval.request.input else {
            return Err(ApprovalError::NotInput { request_id }.into());
        };
        let answer = match (action, answer) {
            (InputAction::Accept, answer) => {
                let answer = answer.unwrap_or_else(|| Value::Object(serde_json::Map::new()));
                check_answer(&input.schema, &answer).map_err(ApprovalError::BadAnswer)?;
                Some(answer)
            }
            (_, Some(_)) => {
                return Err(ApprovalError::BadAnswer(InputError {
                    field: "answer".into(),
                    message: format!("is only sent with accept, not with {}", action.as_str()),
                })
                .into());
            }
            (_, None) => None,
        };
        let signal = TurnSignal::Answer {
            session_id: found.approval.request.session_id,
            request_id,
            action,
            answer,
        };
        self.signal_request(found, signal).await
    }

    /// Sends `signal` for `found` to the server running its turn and waits (a while) for
    /// the outcome in the session's log.
    async fn signal_request(&self, found: Elsewhere, signal: TurnSignal) -> Result<Approval> {
        let Some(signals) = self.inner.turn_signals.clone() else {
            return Err(ApprovalError::NotFound {
                request_id: found.approval.request_id,
            }
            .into());
        };
        let Elsewhere {
            session,
            mut approval,
        } = found;
        // Following the log before sending: the outcome cannot slip in between.
        let mut log = session.subscribe(session.last_sequence());
        let Some(delivery) = signals.send(signal).await? else {
            return Err(RuntimeError::FailedPrecondition(format!(
                "request {} waits in a turn of session {} that no server runs now; the \
                 server that claims the session next closes it",
                approval.request_id, approval.request.session_id
            )));
        };
        tracing::info!(
            request = %approval.request_id,
            session = %delivery.session_id,
            replica = %delivery.replica,
            "sent a decision to the server running the turn"
        );
        let outcome = tokio::time::timeout(OUTCOME_WAIT, async {
            loop {
                let Ok(Some(batch)) = log.next_batch().await else {
                    return None;
                };
                if let Some(resolution) = batch
                    .iter()
                    .find_map(|e| resolution_of(e, &approval.request_id))
                {
                    return Some(resolution);
                }
            }
        })
        .await;
        approval.resolution = outcome.ok().flatten();
        Ok(approval)
    }

    /// Cancels a turn another server runs or holds queued (a store several servers
    /// share), and waits for its end there, up to [`CANCEL_WAIT`]; `NotFound` when no
    /// server does.
    pub(crate) async fn cancel_elsewhere(
        &self,
        execution_id: Uuid,
        why: &str,
    ) -> Result<ExecutionStatus> {
        self.stop_elsewhere(execution_id, why, false).await
    }

    /// [`Self::cancel_elsewhere`]; `for_input`: the turn is stopped for input sent in
    /// interrupt mode (its end says so).
    pub(crate) async fn stop_elsewhere(
        &self,
        execution_id: Uuid,
        why: &str,
        for_input: bool,
    ) -> Result<ExecutionStatus> {
        let not_found = || RuntimeError::not_found("execution", execution_id.to_string());
        let Some(signals) = self.inner.turn_signals.clone() else {
            return Err(not_found());
        };
        let signal = TurnSignal::Cancel {
            execution_id,
            reason: why.to_owned(),
            for_input,
        };
        let Some(delivery) = signals.send(signal).await? else {
            // No server holds it: a turn that ended is answered with its end, as the
            // server that ran it would answer.
            return match self.find_execution_status(execution_id).await {
                Ok(status) if status.state.is_terminal() => Ok(status),
                Ok(_) | Err(RuntimeError::NotFound { .. }) => Err(not_found()),
                Err(e) => Err(e),
            };
        };
        tracing::info!(
            execution = %execution_id,
            replica = %delivery.replica,
            "sent a cancel to the server holding the turn"
        );
        let session = self.inner.sessions.get(delivery.session_id).await?;
        let mut log = session.subscribe(session.last_sequence());
        let ended = |turn: &super::SessionTurn| {
            turn.logged
                .as_ref()
                .is_some_and(|logged| logged.end.is_some())
        };
        let mut turn = self.session_turn(delivery.session_id, execution_id).await;
        if !turn.as_ref().is_ok_and(ended) {
            let _ = tokio::time::timeout(CANCEL_WAIT, async {
                loop {
                    let Ok(Some(batch)) = log.next_batch().await else {
                        return;
                    };
                    let done = batch.iter().any(|e| {
                        e.turn_id == Some(execution_id)
                            && matches!(e.payload, EventPayload::TurnCompleted(_))
                    });
                    if done {
                        return;
                    }
                }
            })
            .await;
            turn = self.session_turn(delivery.session_id, execution_id).await;
        }
        match turn {
            Ok(turn) => {
                let mut status = turn.status;
                if turn.logged.is_some_and(|logged| logged.end.is_none()) {
                    // Open in the log: the other server is still ending it.
                    status.state = ExecutionState::Running;
                    status.error.clear();
                }
                Ok(status)
            }
            // Not in the log yet: still queued on the other server.
            Err(RuntimeError::NotFound { .. }) => Ok(ExecutionStatus {
                execution_id,
                session_id: delivery.session_id,
                state: ExecutionState::Queued,
                response: String::new(),
                error: String::new(),
                usage: Default::default(),
                first_sequence: 0,
                last_sequence: 0,
            }),
            Err(e) => Err(e),
        }
    }

    /// Before a session is deleted here: cancels its turn running on another server (a
    /// store several servers share) and waits for its end, so that nothing of it runs in
    /// the session's workspace while it is removed.
    pub(crate) async fn end_turn_elsewhere(&self, session_id: Uuid) -> Result<()> {
        if self.inner.turn_signals.is_none() {
            return Ok(());
        }
        let session = self.inner.sessions.get(session_id).await?;
        self.inner.sessions.refresh(&session).await?;
        let Some((turn_id, _, _)) = session.waiting_requests() else {
            return Ok(());
        };
        if self.inner.executions.get(turn_id).is_some() {
            return Ok(());
        }
        match self
            .cancel_elsewhere(turn_id, "the session was deleted")
            .await
        {
            Ok(_) | Err(RuntimeError::NotFound { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Applies the signals other servers send this one, for as long as the runtime lives:
    /// each as if its call had come here. One for a turn this server does not run (it
    /// ended meanwhile) is refused as that call would be, and only logged.
    pub(crate) fn follow_turn_signals(&self) {
        let Some(signals) = &self.inner.turn_signals else {
            return;
        };
        let mut received = signals.signals();
        let runtime = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            loop {
                let signal = match received.recv().await {
                    Ok(signal) => signal,
                    Err(RecvError::Lagged(missed)) => {
                        tracing::warn!(
                            missed,
                            "signals from other servers were missed (this server fell behind)"
                        );
                        continue;
                    }
                    Err(RecvError::Closed) => return,
                };
                let Some(inner) = runtime.upgrade() else {
                    return;
                };
                OdysseyRuntime { inner }.apply_signal(signal);
            }
        });
    }

    /// Ends what this server holds of sessions another server deletes (a store several
    /// servers share announces each deletion): their queued turns (gone from the store
    /// with the session) end as cancelled, running ones are cancelled, their pending
    /// requests end, their MCP servers stop.
    pub(crate) fn follow_deletions(
        &self,
        wakes: Option<tokio::sync::broadcast::Receiver<crate::store::LogWake>>,
    ) {
        let Some(mut wakes) = wakes else {
            return;
        };
        let runtime = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            loop {
                let session_id = match wakes.recv().await {
                    Ok(crate::store::LogWake::Deleted { session_id }) => session_id,
                    Ok(_) | Err(RecvError::Lagged(_)) => continue,
                    Err(RecvError::Closed) => return,
                };
                let Some(inner) = runtime.upgrade() else {
                    return;
                };
                // Each apart: one waits for its session's turns to end.
                tokio::spawn(OdysseyRuntime { inner }.forget_deleted(session_id));
            }
        });
    }

    /// What [`OdysseyRuntime::follow_deletions`] does for one deleted session; its MCP
    /// servers stop once its turns have ended, as with a deletion made here.
    async fn forget_deleted(self, session_id: Uuid) {
        const WHY: &str = "the session was deleted";
        let executions = &self.inner.executions;
        for execution_id in executions.live_of_session(session_id) {
            let queued = executions
                .get(execution_id)
                .is_some_and(|s| s.state == ExecutionState::Queued);
            if queued {
                executions.update(execution_id, |s| {
                    s.state = ExecutionState::Cancelled;
                    s.error = WHY.into();
                });
            } else if let Some(signal) = executions.cancel_signal(execution_id) {
                signal.cancel(crate::events::TurnOutcome::Cancelled, WHY);
            }
        }
        let ended = self.inner.approvals.forget_session(session_id);
        for execution_id in executions.live_of_session(session_id) {
            let _ = self.wait(execution_id).await;
        }
        self.inner.recorder.forget(session_id);
        self.inner.mcp.forget_session(session_id).await;
        if !ended.is_empty() {
            tracing::info!(session = %session_id, requests = ended.len(), "ended the requests of a session another server deleted");
        }
    }

    /// Applies one signal from another server.
    fn apply_signal(&self, signal: TurnSignal) {
        let applied = match signal {
            TurnSignal::Decide {
                request_id,
                decision,
                reason,
                ..
            } => self
                .resolve_approval(&request_id, decision, reason)
                .map(|_| ()),
            TurnSignal::Answer {
                request_id,
                action,
                answer,
                ..
            } => self.resolve_input(&request_id, action, answer).map(|_| ()),
            TurnSignal::Steer {
                session_id,
                execution_id,
                text,
            } => {
                let runtime = self.clone();
                tokio::spawn(async move {
                    if let Err(e) = runtime.steer_turn(session_id, execution_id, &text).await {
                        tracing::info!(execution = %execution_id, error = %e, "input sent by another server was not taken");
                    }
                });
                Ok(())
            }
            TurnSignal::Cancel {
                execution_id,
                reason,
                for_input,
            } => {
                // Only a turn this server holds: a cancel is never passed on again.
                if self.inner.executions.get(execution_id).is_none() {
                    tracing::debug!(execution = %execution_id, "a cancel for a turn this server does not hold was ignored");
                    return;
                }
                if for_input {
                    // As `send_input` stops the running turn for input that interrupts.
                    if let Some(signal) = self.inner.executions.cancel_signal(execution_id) {
                        signal.stop(
                            crate::events::TurnOutcome::Cancelled,
                            reason,
                            crate::events::INTERRUPTED_BY_INPUT,
                        );
                    }
                    return;
                }
                let runtime = self.clone();
                tokio::spawn(async move {
                    if let Err(e) = runtime.cancel_because(execution_id, &reason).await {
                        tracing::warn!(execution = %execution_id, error = %e, "a cancel sent by another server failed");
                    }
                });
                Ok(())
            }
        };
        if let Err(e) = applied {
            tracing::info!(error = %e, "a signal from another server was not applied");
        }
    }

    /// The request `request_id` of a turn running elsewhere ([`Self::find_elsewhere_now`]).
    /// A request is listed by the server running its turn a moment before its session's
    /// log holds it, so a request filed less than [`JUST_FILED`] ago (its id says when:
    /// version 7) that is not found yet is looked for again until it is that old.
    async fn find_elsewhere(&self, request_id: &str) -> Result<Option<Elsewhere>> {
        let mut wait = LOOK_AGAIN_FIRST;
        loop {
            if let Some(found) = self.find_elsewhere_now(request_id).await? {
                return Ok(Some(found));
            }
            if !just_filed(request_id) {
                return Ok(None);
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(LOOK_AGAIN_LAST);
        }
    }

    /// The request `request_id` of a turn running elsewhere, as this server's copy of its
    /// session shows it: first among the sessions open here, then among those whose turn
    /// runs on another server (see [`OdysseyRuntime::copies_running_elsewhere`]).
    async fn find_elsewhere_now(&self, request_id: &str) -> Result<Option<Elsewhere>> {
        let holds = |session: &SessionHandle| {
            session
                .waiting_requests()
                .is_some_and(|(_, _, ids)| ids.iter().any(|id| id == request_id))
        };
        let open = self
            .inner
            .sessions
            .open_handles()
            .into_iter()
            .find(|s| holds(s));
        let session = match open {
            Some(session) => Some(session),
            None => self
                .copies_running_elsewhere()
                .await?
                .into_iter()
                .find(|s| holds(s)),
        };
        let Some(session) = session else {
            return Ok(None);
        };
        let mut found = self.requests_of(&session).await?;
        Ok(found
            .remove(request_id)
            .map(|approval| Elsewhere { session, approval }))
    }

    /// The requests waiting in turns other servers run: of `session`, or of every
    /// session open here or running elsewhere.
    async fn waiting_elsewhere(&self, session: Option<Uuid>) -> Result<Vec<Elsewhere>> {
        let sessions = match session {
            Some(id) => {
                let session = self.inner.sessions.get(id).await?;
                self.inner.sessions.refresh(&session).await?;
                vec![session]
            }
            None => {
                let mut open = self.inner.sessions.open_handles();
                for session in self.copies_running_elsewhere().await? {
                    if !open.iter().any(|s| s.id() == session.id()) {
                        open.push(session);
                    }
                }
                open
            }
        };
        let mut waiting = Vec::new();
        for session in sessions {
            for (_, approval) in self.requests_of(&session).await? {
                waiting.push(Elsewhere {
                    session: session.clone(),
                    approval,
                });
            }
        }
        Ok(waiting)
    }

    /// This server's copies of the sessions the store says run a turn on another server
    /// (at most [`SESSIONS_LOOKED_AT`]), each read up to what the store holds: a session
    /// not open here is opened (and followed from then on while it stays open), one whose
    /// copy is behind the store reads the rows it misses. One round trip when every copy
    /// is up to date.
    pub(super) async fn copies_running_elsewhere(&self) -> Result<Vec<Arc<SessionHandle>>> {
        let Some(signals) = &self.inner.turn_signals else {
            return Ok(Vec::new());
        };
        let mut copies = Vec::new();
        for running in signals
            .sessions_running_elsewhere(SESSIONS_LOOKED_AT)
            .await?
        {
            // Deleted meanwhile, or unreadable here: nothing of it can be answered here.
            let Ok(copy) = self.inner.sessions.get(running.session_id).await else {
                continue;
            };
            if copy.last_sequence() < running.last_sequence
                && let Err(e) = self.inner.sessions.refresh(&copy).await
            {
                tracing::debug!(session = %running.session_id, error = %e, "cannot read a session running elsewhere");
                continue;
            }
            copies.push(copy);
        }
        Ok(copies)
    }

    /// The requests the session's log shows waiting in its running turn, by id, unless
    /// this server runs that turn (its own requests are in its memory).
    pub(super) async fn requests_of(
        &self,
        session: &Arc<SessionHandle>,
    ) -> Result<HashMap<String, Approval>> {
        let Some((turn_id, first_sequence, ids)) = session.waiting_requests() else {
            return Ok(HashMap::new());
        };
        if ids.is_empty() || self.inner.executions.get(turn_id).is_some() {
            return Ok(HashMap::new());
        }
        let handle = session.clone();
        let timeout = self.inner.approvals.timeout();
        tokio::task::spawn_blocking(move || -> Result<HashMap<String, Approval>> {
            let mut found = HashMap::new();
            let mut after = first_sequence.saturating_sub(1);
            while found.len() < ids.len() {
                let batch = handle.read_after(after, READ_BATCH)?;
                let Some(last) = batch.last() else {
                    break;
                };
                after = last.sequence;
                for event in &batch {
                    if let Some(approval) = requested(event, &handle, timeout)
                        && ids.contains(&approval.request_id)
                    {
                        found.insert(approval.request_id.clone(), approval);
                    }
                }
            }
            Ok(found)
        })
        .await
        .map_err(|e| RuntimeError::storage("read requests", std::io::Error::other(e)))?
    }
}

/// The pending request an event files, as the server running the turn holds it.
pub(super) fn requested(
    event: &Event,
    session: &SessionHandle,
    timeout: Duration,
) -> Option<Approval> {
    let parent_session_ids = session
        .record()
        .parent
        .as_ref()
        .map(|p| p.ancestors.clone())
        .unwrap_or_default();
    let execution_id = event.turn_id?;
    let (request_id, request) = match &event.payload {
        EventPayload::PermissionRequested {
            request_id,
            call_id,
            tool,
            arguments,
            summary,
            reason,
            display,
            control_characters,
        } => (
            request_id,
            PendingApproval {
                session_id: event.session_id,
                execution_id,
                call_id: call_id.clone(),
                tool: tool.clone(),
                arguments: arguments.clone(),
                summary: summary.clone(),
                display: CallDisplay {
                    text: display.clone(),
                    control_characters: *control_characters,
                },
                reason: reason.clone(),
                parent_session_ids,
                input: None,
            },
        ),
        EventPayload::HumanInputRequested(asked) => (
            &asked.request_id,
            PendingApproval {
                session_id: event.session_id,
                execution_id,
                call_id: asked.call_id.clone(),
                tool: asked.tool.clone(),
                arguments: json!({}),
                summary: format!("MCP server `{}` asks for input", asked.server),
                display: display_call(Some(&asked.message), &json!({})),
                reason: format!("MCP server `{}` asks for input", asked.server),
                parent_session_ids,
                input: Some(InputRequest {
                    server: asked.server.clone(),
                    message: asked.message.clone(),
                    schema: asked.schema.clone(),
                }),
            },
        ),
        _ => return None,
    };
    Some(Approval {
        request_id: request_id.clone(),
        request,
        created_at_ms: event.created_at_ms,
        expires_at_ms: event
            .created_at_ms
            .saturating_add(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX)),
        resolution: None,
    })
}

/// When request `request_id` was filed, in Unix milliseconds: request ids are version 7
/// UUIDs, which carry when they were made. `None` for any other id.
fn filed_at_ms(request_id: &str) -> Option<u64> {
    let id = Uuid::parse_str(request_id).ok()?;
    let (seconds, nanos) = id
        .get_timestamp()
        .filter(|_| id.get_version_num() == 7)
        .map(|t| t.to_unix())?;
    Some(
        seconds
            .saturating_mul(1000)
            .saturating_add(u64::from(nanos / 1_000_000)),
    )
}

/// How `request_id` ended, if the tail of `session`'s log records it: the events written
/// since `filed_ms` (less a little for clocks that differ), newest first, at most
/// [`RESOLVED_LOOKBACK`].
fn resolution_in_tail(
    session: &SessionHandle,
    request_id: &str,
    filed_ms: u64,
) -> Option<Resolution> {
    let since = filed_ms.saturating_sub(u64::try_from(JUST_FILED.as_millis()).unwrap_or(u64::MAX));
    let mut end = session.last_sequence();
    // A log that did not grow since the request was filed is not read further.
    let last = session.read_after(end.saturating_sub(1), 1).ok()?.pop()?;
    if last.created_at_ms < since {
        return None;
    }
    let mut read = 0;
    while end > 0 && read < RESOLVED_LOOKBACK {
        let after = end.saturating_sub(READ_BATCH as u64);
        let batch = session.read_after(after, READ_BATCH).ok()?;
        read += batch.len();
        if let Some(resolution) = batch
            .iter()
            .rev()
            .filter(|e| e.sequence <= end)
            .find_map(|e| resolution_of(e, request_id))
        {
            return Some(resolution);
        }
        if batch.first().is_none_or(|e| e.created_at_ms < since) {
            return None;
        }
        end = after;
    }
    None
}

/// Whether `request_id` names a request filed less than [`JUST_FILED`] ago.
fn just_filed(request_id: &str) -> bool {
    let Some(filed_ms) = filed_at_ms(request_id) else {
        return false;
    };
    let window = u64::try_from(JUST_FILED.as_millis()).unwrap_or(u64::MAX);
    let now = crate::events::now_ms();
    // Within the window either side: another server's clock may be a little ahead.
    filed_ms.abs_diff(now) < window
}

/// How request `request_id` ended, if `event` records it.
pub(super) fn resolution_of(event: &Event, request_id: &str) -> Option<Resolution> {
    match &event.payload {
        EventPayload::ApprovalResolved {
            request_id: id,
            decision,
            resolution,
            reason,
        } if id == request_id => Some(Resolution {
            decision: *decision,
            resolution: *resolution,
            reason: reason.clone(),
            input: None,
        }),
        EventPayload::HumanInputAnswered(answered) if answered.request_id == request_id => {
            Some(Resolution {
                decision: match answered.action {
                    InputAction::Accept => ApprovalDecision::AllowOnce,
                    InputAction::Decline | InputAction::Cancel => ApprovalDecision::Deny,
                },
                resolution: answered.resolution,
                reason: answered.reason.clone(),
                input: Some(InputAnswer {
                    action: answered.action,
                    answer: answered.answer.clone(),
                }),
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use uuid::{NoContext, Timestamp, Uuid};

    use super::just_filed;

    #[test]
    fn a_request_is_just_filed_for_two_seconds_by_its_id() {
        assert!(just_filed(&Uuid::now_v7().to_string()));
        let now_ms = crate::events::now_ms();
        let at = |ms: u64| {
            Uuid::new_v7(Timestamp::from_unix(
                NoContext,
                ms / 1000,
                u32::try_from(ms % 1000).unwrap() * 1_000_000,
            ))
            .to_string()
        };
        assert!(just_filed(&at(now_ms - 1_000)));
        assert!(!just_filed(&at(now_ms - 10_000)));
        assert!(!just_filed(&at(now_ms + 10_000)));
        assert!(!just_filed(&Uuid::new_v4().to_string()));
        assert!(!just_filed("not an id"));
    }
}
