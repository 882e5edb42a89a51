//! A server's requests for a person's input (`elicitation/create`), asked during one of
//! its tool calls: filed on the approvals surface as a request for input, recorded in the
//! session's log (`human_input_requested`, then `human_input_answered`), and answered with
//! what the person chose, or `cancel` when nobody answered in time or the call ended.
//!
//! Over stdio a request does not say which call it belongs to, so it is taken as the
//! latest call in progress on the connection. A request while no call is in progress has
//! no person to ask: it is declined.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::ErrorData as McpError;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::events::{
    ApprovalResolution, EventPayload, HumanInputAnswered, HumanInputRequested, InputAction,
};
use crate::execution::{ExecutionState, ExecutionTable};
use crate::permissions::approvals::input::{InputRequest, MAX_MESSAGE_BYTES, check_schema};
use crate::permissions::{ApprovalStore, PendingApproval, Resolution, display_call};
use crate::session::EventSink;
use crate::tools::ToolContext;

/// The requests for input of one connection, and the calls they may belong to.
pub(super) struct Elicitation {
    server: String,
    approvals: ApprovalStore,
    /// Where the turn is shown waiting for a person while a request waits.
    executions: Arc<ExecutionTable>,
    calls: Mutex<Vec<ActiveCall>>,
    next_id: AtomicU64,
}

/// A tool call in progress on the connection.
#[derive(Clone)]
struct ActiveCall {
    id: u64,
    session_id: Uuid,
    execution_id: Uuid,
    call_id: String,
    /// The session's ancestors, nearest first (empty unless it is a sub-agent's).
    parent_session_ids: Vec<Uuid>,
    /// Tells the turn while the call waits for a person (it gives its worker slot back).
    person: crate::tools::person::PersonWaits,
    /// The tool as the model calls it (`mcp__<server>__<tool>`).
    tool: String,
    events: EventSink,
    /// Fires when the call ends: a request still waiting is then cancelled.
    done: CancellationToken,
    human: Arc<HumanTime>,
}

impl std::fmt::Debug for ActiveCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActiveCall")
            .field("call_id", &self.call_id)
            .finish_non_exhaustive()
    }
}

/// How long a call waited for a person: its timeout does not count that time.
#[derive(Debug, Default)]
pub(super) struct HumanTime {
    state: Mutex<(Duration, usize, Option<Instant>)>,
}

impl HumanTime {
    fn start(&self) {
        let mut state = crate::sync::lock(&self.state);
        if state.1 == 0 {
            state.2 = Some(Instant::now());
        }
        state.1 += 1;
    }

    fn stop(&self) {
        let mut state = crate::sync::lock(&self.state);
        state.1 = state.1.saturating_sub(1);
        if state.1 == 0
            && let Some(since) = state.2.take()
        {
            state.0 += since.elapsed();
        }
    }

    /// Whether a request for input waits now.
    pub(super) fn waiting(&self) -> bool {
        crate::sync::lock(&self.state).1 > 0
    }

    /// The time waited, so far.
    pub(super) fn total(&self) -> Duration {
        let state = crate::sync::lock(&self.state);
        state.0 + state.2.map_or(Duration::ZERO, |since| since.elapsed())
    }
}

/// A call in progress, registered for as long as it lives.
pub(super) struct CallGuard {
    elicitation: Arc<Elicitation>,
    id: u64,
    done: CancellationToken,
    pub(super) human: Arc<HumanTime>,
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.done.cancel();
        crate::sync::lock(&self.elicitation.calls).retain(|c| c.id != self.id);
    }
}

impl std::fmt::Debug for Elicitation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Elicitation")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl Elicitation {
    pub(super) fn new(
        server: &str,
        approvals: ApprovalStore,
        executions: Arc<ExecutionTable>,
    ) -> Arc<Self> {
        Arc::new(Self {
            server: server.to_owned(),
            approvals,
            executions,
            calls: Mutex::default(),
            next_id: AtomicU64::new(1),
        })
    }

    /// Registers a call of `tool` (the model's name for it) for the turn of `ctx`.
    pub(super) fn enter(self: &Arc<Self>, ctx: &ToolContext, tool: &str) -> CallGuard {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let done = CancellationToken::new();
        let human = Arc::new(HumanTime::default());
        crate::sync::lock(&self.calls).push(ActiveCall {
            id,
            session_id: ctx.session_id,
            execution_id: ctx.turn_id,
            call_id: ctx.call_id.clone(),
            parent_session_ids: ctx.parent_session_ids.clone(),
            person: ctx.person.clone(),
            tool: tool.to_owned(),
            events: ctx.events.clone(),
            done: done.clone(),
            human: human.clone(),
        });
        CallGuard {
            elicitation: self.clone(),
            id,
            done,
            human,
        }
    }

    /// Asks a person, and answers the server with what they chose.
    pub(super) async fn ask(&self, request: ElicitRequestParams) -> Result<ElicitResult, McpError> {
        let (message, schema) = match request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => (
                message,
                serde_json::to_value(&requested_schema)
                    .map_err(|e| McpError::invalid_params(e.to_string(), None))?,
            ),
            // Not declared in the client's capabilities.
            _ => {
                return Err(McpError::invalid_params(
                    "this client takes only form requests for input, not URL ones",
                    None,
                ));
            }
        };
        if let Err(e) = check_schema(&schema) {
            tracing::warn!(server = %self.server, "an MCP server's request for input was refused: {e}");
            return Err(McpError::invalid_params(
                format!("the requested schema is not accepted: {e}"),
                None,
            ));
        }
        let Some(call) = crate::sync::lock(&self.calls).last().cloned() else {
            tracing::warn!(server = %self.server, "an MCP server asked for input outside a tool call; declined");
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let message = bounded(&message);
        let display = display_call(Some(&message), &json!({}));
        let (request_id, waiter) = self.approvals.request(PendingApproval {
            session_id: call.session_id,
            execution_id: call.execution_id,
            call_id: call.call_id.clone(),
            tool: call.tool.clone(),
            arguments: json!({}),
            summary: format!("MCP server `{}` asks for input", self.server),
            display: display.clone(),
            reason: format!("MCP server `{}` asks for input", self.server),
            parent_session_ids: call.parent_session_ids.clone(),
            input: Some(InputRequest {
                server: self.server.clone(),
                message: message.clone(),
                schema: schema.clone(),
            }),
        });
        call.human.start();
        let person = call.person.begin();
        self.executions.update(call.execution_id, |s| {
            if s.state == ExecutionState::Running {
                s.state = ExecutionState::WaitingApproval;
            }
        });
        let answered = self
            .wait(&call, request_id, message, schema, display.text, waiter)
            .await;
        drop(person);
        call.human.stop();
        if !call.human.waiting() {
            self.executions.update(call.execution_id, |s| {
                if s.state == ExecutionState::WaitingApproval {
                    s.state = ExecutionState::Running;
                }
            });
        }
        answered
    }

    async fn wait(
        &self,
        call: &ActiveCall,
        request_id: String,
        message: String,
        schema: Value,
        display: String,
        waiter: crate::permissions::ApprovalWaiter,
    ) -> Result<ElicitResult, McpError> {
        let requested = EventPayload::HumanInputRequested(HumanInputRequested {
            request_id: request_id.clone(),
            call_id: call.call_id.clone(),
            tool: call.tool.clone(),
            server: self.server.clone(),
            message,
            schema,
            display,
        });
        if let Err(e) = call.events.emit_durable(requested).await {
            // The waiter is dropped: the request ends as cancelled.
            tracing::error!(session = %call.session_id, error = %e, "cannot record a request for input");
            return Err(McpError::internal_error(
                "the request for input could not be recorded",
                None,
            ));
        }
        let resolution = tokio::select! {
            resolution = waiter => resolution,
            // The call ended (timed out, cancelled with its turn): nobody waits for the answer.
            () = call.done.cancelled() => Resolution {
                decision: crate::events::ApprovalDecision::Deny,
                resolution: ApprovalResolution::Cancelled,
                reason: "the tool call ended while the request waited".into(),
                input: None,
            },
        };
        let action = resolution.input_action();
        let answer = resolution.input.and_then(|i| i.answer);
        let answered = EventPayload::HumanInputAnswered(HumanInputAnswered {
            request_id,
            action,
            resolution: resolution.resolution,
            answer: answer.clone(),
            reason: if resolution.resolution == ApprovalResolution::Decided {
                String::new()
            } else {
                resolution.reason
            },
        });
        if let Err(e) = call.events.emit_durable(answered).await {
            tracing::error!(session = %call.session_id, error = %e, "cannot record the answer to a request for input");
        }
        let mut result = ElicitResult::new(match action {
            InputAction::Accept => ElicitationAction::Accept,
            InputAction::Decline => ElicitationAction::Decline,
            InputAction::Cancel => ElicitationAction::Cancel,
        });
        if action == InputAction::Accept {
            result.content = answer;
        }
        Ok(result)
    }
}

/// The server's message within [`MAX_MESSAGE_BYTES`], the cut marked.
fn bounded(message: &str) -> String {
    let kept = crate::text::byte_prefix(message, MAX_MESSAGE_BYTES);
    if kept.len() == message.len() {
        message.to_owned()
    } else {
        format!("{kept}{}", crate::text::CUT_MARK)
    }
}
