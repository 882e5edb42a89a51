//! Tool calls waiting for a human. A turn files a [`PendingApproval`] and awaits the
//! returned [`ApprovalWaiter`]; a client lists pending requests and resolves them.
//!
//! Everything is in memory: a restart interrupts the turns that were waiting, and the turn
//! log (not this store) records that. Every request ends exactly once, by a human decision,
//! the timeout (denied, recorded as timed out rather than as a human's deny), cancellation
//! of its execution or deletion of its session, or the waiter being dropped. Resolved ids
//! are kept for a bounded while so a second resolve is told "already resolved", not "not
//! found". `allow_always` is remembered per session for the exact call it approved.
//!
//! An MCP server's request for a person's input waits here too (a [`PendingApproval`] with
//! an [`InputRequest`]), so one surface lists and resolves both; it is answered with
//! [`ApprovalStore::resolve_input`], the answer checked against the requested schema.

mod elsewhere;
pub mod input;
mod key;
mod state;
mod waiter;
mod watch;

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::oneshot;
use uuid::Uuid;

pub use self::elsewhere::RequestsElsewhere;
use self::input::{InputAnswer, InputRequest, check_answer};
use self::key::argument_key;
use self::state::{Entry, State};
pub use self::waiter::ApprovalWaiter;
pub use self::watch::{ApprovalChange, ApprovalUpdate, ApprovalWatch};
use super::display::CallDisplay;
use super::error::ApprovalError;
use crate::events::{ApprovalDecision, ApprovalResolution, InputAction, now_ms};
use crate::paging::{Page, PageRequest, paginate};

/// How long a request waits for a human before it is denied.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// A tool call that needs a human decision.
#[derive(Clone, Debug, PartialEq)]
pub struct PendingApproval {
    pub session_id: Uuid,
    pub execution_id: Uuid,
    /// The model's id for the tool call.
    pub call_id: String,
    pub tool: String,
    /// The call's arguments as recorded in events (sanitized: no secrets, file bodies as
    /// length and digest).
    pub arguments: Value,
    /// What will actually run, in one line (the command, the path written).
    pub summary: String,
    /// The call as a person is shown it: control characters as visible escapes.
    pub display: CallDisplay,
    /// Why the call needs approval (the rules' reason).
    pub reason: String,
    /// When the session is a sub-agent's: the sessions above it, nearest first.
    pub parent_session_ids: Vec<Uuid>,
    /// Set when an MCP server asks for a person's input rather than a call for approval.
    pub input: Option<InputRequest>,
}

/// How a request ended.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolution {
    pub decision: ApprovalDecision,
    pub resolution: ApprovalResolution,
    /// The human's reason (the model sees it on a deny), or what ended the request.
    pub reason: String,
    /// A person's answer to a request for input; `None` for a tool call, and for a
    /// request for input that ended without one (timed out, cancelled).
    pub input: Option<InputAnswer>,
}

impl Resolution {
    pub(crate) fn ended(resolution: ApprovalResolution, reason: impl Into<String>) -> Self {
        Self {
            decision: ApprovalDecision::Deny,
            resolution,
            reason: reason.into(),
            input: None,
        }
    }

    /// What a request for input's server is told: the person's action, or `cancel` when
    /// nobody answered.
    pub fn input_action(&self) -> InputAction {
        self.input
            .as_ref()
            .map_or(InputAction::Cancel, |answer| answer.action)
    }

    pub fn allows(&self) -> bool {
        matches!(
            self.decision,
            ApprovalDecision::AllowOnce | ApprovalDecision::AllowAlways
        )
    }
}

/// A request, pending or resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Approval {
    pub request_id: String,
    pub request: PendingApproval,
    pub created_at_ms: u64,
    /// When it times out if still pending.
    pub expires_at_ms: u64,
    /// None while pending.
    pub resolution: Option<Resolution>,
}

/// The shared store of approval requests. Cloning shares it.
#[derive(Clone)]
pub struct ApprovalStore {
    state: Arc<Mutex<State>>,
    timeout: Duration,
}

impl Default for ApprovalStore {
    fn default() -> Self {
        Self::new(DEFAULT_APPROVAL_TIMEOUT)
    }
}

impl ApprovalStore {
    /// A store whose requests time out after `timeout`.
    pub fn new(timeout: Duration) -> Self {
        Self {
            state: Arc::new(Mutex::new(State::default())),
            timeout,
        }
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // No code under this lock can panic halfway through an update that matters; a
        // poisoned lock must not make every later approval fail, so it is used as is.
        crate::sync::lock(&self.state)
    }

    /// Files a request. The waiter resolves when a human decides, the timeout passes, or
    /// the request is cancelled.
    pub fn request(&self, request: PendingApproval) -> (String, ApprovalWaiter) {
        let request_id = Uuid::now_v7().to_string();
        let (sender, receiver) = oneshot::channel();
        let created_at_ms = now_ms();
        let deadline = waiter::deadline_after(self.timeout);
        let approval = Approval {
            request_id: request_id.clone(),
            request,
            created_at_ms,
            expires_at_ms: created_at_ms
                .saturating_add(u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX)),
            resolution: None,
        };
        {
            let mut state = self.lock();
            let seq = state.next_seq;
            state.next_seq += 1;
            state.ids.insert(request_id.clone(), seq);
            state
                .changes
                .publish(ApprovalChange::Added(approval.clone()));
            state.pending.insert(
                seq,
                Entry {
                    approval,
                    deadline,
                    sender,
                },
            );
        }
        let waiter = waiter::wait(self.clone(), request_id.clone(), receiver, deadline);
        (request_id, waiter)
    }

    /// A human's decision. Unknown ids are NotFound; ids already resolved (by a human, the
    /// timeout or a cancellation) are FailedPrecondition, and nothing changes.
    pub fn resolve(
        &self,
        request_id: &str,
        decision: ApprovalDecision,
        reason: impl Into<String>,
    ) -> Result<Approval, ApprovalError> {
        let mut state = self.lock();
        state.expire_overdue();
        if state.input_of(request_id).is_some() {
            drop(state);
            // A plain decision on a request for input: a deny declines, an allow accepts
            // with an empty answer (refused when the schema requires a field).
            return match decision {
                ApprovalDecision::Deny => {
                    self.resolve_input(request_id, InputAction::Decline, None)
                }
                ApprovalDecision::AllowOnce | ApprovalDecision::AllowAlways => self.resolve_input(
                    request_id,
                    InputAction::Accept,
                    Some(Value::Object(serde_json::Map::new())),
                ),
            };
        }
        let resolution = Resolution {
            decision,
            resolution: ApprovalResolution::Decided,
            reason: reason.into(),
            input: None,
        };
        match state.finish(request_id, resolution) {
            Ok(approval) => Ok(approval),
            Err(Some(resolution)) => Err(ApprovalError::AlreadyResolved {
                request_id: request_id.to_owned(),
                resolution,
            }),
            Err(None) => Err(ApprovalError::NotFound {
                request_id: request_id.to_owned(),
            }),
        }
    }

    /// A person's answer to a request for input: `accept` with an answer that must match
    /// the requested schema (InvalidArgument naming the field when it does not), or
    /// `decline` / `cancel` with none. A tool call cannot be answered this way.
    pub fn resolve_input(
        &self,
        request_id: &str,
        action: InputAction,
        answer: Option<Value>,
    ) -> Result<Approval, ApprovalError> {
        let mut state = self.lock();
        state.expire_overdue();
        let request = match state.input_of(request_id) {
            Some(request) => request,
            None if state.ids.contains_key(request_id) => {
                return Err(ApprovalError::NotInput {
                    request_id: request_id.to_owned(),
                });
            }
            None => {
                return Err(match state.resolved.get(request_id) {
                    Some(resolution) => ApprovalError::AlreadyResolved {
                        request_id: request_id.to_owned(),
                        resolution: *resolution,
                    },
                    None => ApprovalError::NotFound {
                        request_id: request_id.to_owned(),
                    },
                });
            }
        };
        let answer = match (action, answer) {
            (InputAction::Accept, answer) => {
                let answer = answer.unwrap_or_else(|| Value::Object(serde_json::Map::new()));
                check_answer(&request.schema, &answer).map_err(ApprovalError::BadAnswer)?;
                Some(answer)
            }
            (_, Some(_)) => {
                return Err(ApprovalError::BadAnswer(input::InputError {
                    field: "answer".into(),
                    message: format!("is only sent with accept, not with {}", action.as_str()),
                }));
            }
            (_, None) => None,
        };
        let resolution = Resolution {
            decision: match action {
                InputAction::Accept => ApprovalDecision::AllowOnce,
                InputAction::Decline | InputAction::Cancel => ApprovalDecision::Deny,
            },
            resolution: ApprovalResolution::Decided,
            reason: String::new(),
            input: Some(InputAnswer { action, answer }),
        };
        state
            .finish(request_id, resolution)
            .map_err(|resolution| match resolution {
                Some(resolution) => ApprovalError::AlreadyResolved {
                    request_id: request_id.to_owned(),
                    resolution,
                },
                None => ApprovalError::NotFound {
                    request_id: request_id.to_owned(),
                },
            })
    }

    /// How many requests wait for a human now.
    pub fn pending_count(&self) -> usize {
        let mut state = self.lock();
        state.expire_overdue();
        state.pending.len()
    }

    /// Pending requests, oldest first, optionally of one session.
    pub fn list(
        &self,
        session: Option<Uuid>,
        page: &PageRequest,
    ) -> Result<Page<Approval>, ApprovalError> {
        let mut state = self.lock();
        state.expire_overdue();
        let pending: Vec<(u64, &Approval)> = state
            .pending
            .iter()
            .map(|(seq, entry)| (*seq, &entry.approval))
            .collect();
        let page = paginate(
            pending,
            page,
            |(seq, _)| seq.to_string(),
            |key| key.parse::<u64>().ok(),
            |(seq, _), after| *seq > *after,
            |(_, approval)| session.is_none_or(|s| approval.request.session_id == s),
        )
        .map_err(|_| ApprovalError::InvalidPageToken)?;
        Ok(Page {
            items: page.items.into_iter().map(|(_, a)| a.clone()).collect(),
            next_token: page.next_token,
        })
    }

    /// Every pending request, oldest first, optionally of one session.
    pub fn pending(&self, session: Option<Uuid>) -> Vec<Approval> {
        let mut state = self.lock();
        state.expire_overdue();
        state
            .pending
            .values()
            .map(|e| &e.approval)
            .filter(|a| session.is_none_or(|s| a.request.session_id == s))
            .cloned()
            .collect()
    }

    /// Whether a request of this session waits for a human now.
    pub fn has_pending(&self, session_id: Uuid) -> bool {
        let mut state = self.lock();
        state.expire_overdue();
        state
            .pending
            .values()
            .any(|e| e.approval.request.session_id == session_id)
    }

    /// Follows the pending requests (of one session, when given): a snapshot, then each
    /// request filed and each that ends, however it ends.
    pub fn watch(&self, session: Option<Uuid>) -> ApprovalWatch {
        ApprovalWatch::start(self.clone(), None, session)
    }

    /// [`Self::watch`], with the requests of turns other servers run beside this one's.
    pub fn watch_with(&self, elsewhere: RequestsElsewhere, session: Option<Uuid>) -> ApprovalWatch {
        ApprovalWatch::start(self.clone(), Some(elsewhere), session)
    }

    /// The pending requests and a subscription to the changes after them, taken under one
    /// lock so that no change falls between the two.
    fn snapshot_and_subscribe(
        &self,
        session: Option<Uuid>,
    ) -> (
        Vec<Approval>,
        tokio::sync::broadcast::Receiver<ApprovalChange>,
    ) {
        let mut state = self.lock();
        state.expire_overdue();
        let receiver = state.changes.subscribe();
        let snapshot = state
            .pending
            .values()
            .map(|e| &e.approval)
            .filter(|a| session.is_none_or(|s| a.request.session_id == s))
            .cloned()
            .collect();
        (snapshot, receiver)
    }

    /// One request, pending or resolved (resolved ones only while they are remembered).
    pub fn get(&self, request_id: &str) -> Result<Approval, ApprovalError> {
        let state = self.lock();
        if let Some(entry) = state.ids.get(request_id).and_then(|s| state.pending.get(s)) {
            return Ok(entry.approval.clone());
        }
        Err(match state.resolved.get(request_id) {
            Some(resolution) => ApprovalError::AlreadyResolved {
                request_id: request_id.to_owned(),
                resolution: *resolution,
            },
            None => ApprovalError::NotFound {
                request_id: request_id.to_owned(),
            },
        })
    }

    /// Resolves the pending requests of a cancelled execution as cancelled (denied).
    /// Returns them.
    pub fn cancel_execution(&self, execution_id: Uuid) -> Vec<Approval> {
        self.end_where(
            |a| a.request.execution_id == execution_id,
            ApprovalResolution::Cancelled,
            "the execution was cancelled",
        )
    }

    /// Drops everything of a deleted session: its pending requests end as cancelled and
    /// its remembered `allow_always` decisions are forgotten.
    pub fn forget_session(&self, session_id: Uuid) -> Vec<Approval> {
        let ended = self.end_where(
            |a| a.request.session_id == session_id,
            ApprovalResolution::Cancelled,
            "the session was deleted",
        );
        self.lock().remembered.remove(&session_id);
        ended
    }

    /// Ends every pending request as interrupted (the server is shutting down).
    pub fn interrupt_all(&self) -> Vec<Approval> {
        self.end_where(
            |_| true,
            ApprovalResolution::Interrupted,
            "the server stopped",
        )
    }

    /// Whether a human chose `allow_always` for this exact call in this session.
    pub fn is_remembered(&self, session_id: Uuid, tool: &str, arguments: &Value) -> bool {
        let key = (tool.to_owned(), argument_key(tool, arguments));
        self.lock()
            .remembered
            .get(&session_id)
            .is_some_and(|calls| calls.contains(&key))
    }

    fn end_where(
        &self,
        selected: impl Fn(&Approval) -> bool,
        resolution: ApprovalResolution,
        reason: &str,
    ) -> Vec<Approval> {
        let mut state = self.lock();
        let ids: Vec<String> = state
            .pending
            .values()
            .filter(|e| selected(&e.approval))
            .map(|e| e.approval.request_id.clone())
            .collect();
        ids.iter()
            .filter_map(|id| state.finish(id, Resolution::ended(resolution, reason)).ok())
            .collect()
    }

    /// Ends a request if it is still pending; returns the resolution it ended with.
    fn finish(&self, request_id: &str, resolution: Resolution) -> Option<Resolution> {
        self.lock()
            .finish(request_id, resolution)
            .ok()
            .and_then(|a| a.resolution)
    }
}
