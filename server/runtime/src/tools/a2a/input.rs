//! A remote task that needs input (`input-required`) becomes a local approval request:
//! filed in the same store, shown with the same events and answered with the same
//! decisions as a tool call's, through the permission gate's API. The answer goes back
//! to the remote task as a data part, as Odyssey takes one when it serves A2A.

use std::sync::Arc;

use serde_json::{Value, json};
use uuid::Uuid;

use crate::events::{ApprovalDecision, ApprovalResolution, EventPayload};
use crate::permissions::{ApprovalStore, PendingApproval, display_call};
use crate::policy::ApprovalPolicy;
use crate::session::EventSink;
use crate::tools::ToolContext;

/// The most characters of the remote agent's question shown in a request's summary.
const SUMMARY_CHARS: usize = 2048;

/// What a turn lends its remote agent tools to ask a human.
#[derive(Clone)]
pub struct RemoteInput {
    pub approvals: ApprovalStore,
    pub execution_id: Uuid,
    /// When the session is a sub-agent's: the sessions above it, nearest first.
    pub ancestors: Vec<Uuid>,
    pub policy: ApprovalPolicy,
    /// Told `true` when the turn starts waiting for a human, `false` when it stops.
    pub on_waiting: Arc<dyn Fn(bool) + Send + Sync>,
}

impl std::fmt::Debug for RemoteInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteInput")
            .field("execution_id", &self.execution_id)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

/// A human's answer to a remote agent's question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub decision: ApprovalDecision,
    pub reason: String,
}

impl Answer {
    /// The data part the remote task is sent: `{"decision": ..., "reason": ...}`.
    pub fn to_data(&self) -> Value {
        let decision = match self.decision {
            ApprovalDecision::AllowOnce => "allow_once",
            ApprovalDecision::AllowAlways => "allow_always",
            ApprovalDecision::Deny => "deny",
        };
        json!({ "decision": decision, "reason": self.reason })
    }
}

impl RemoteInput {
    /// Asks a human what to answer `question` from remote agent `agent`, called through
    /// `tool`. Under the approval policy `never` nobody is asked: the answer is a deny.
    pub async fn ask(
        &self,
        ctx: &ToolContext,
        tool: &str,
        agent: &str,
        question: &str,
    ) -> crate::error::Result<Answer> {
        if self.policy == ApprovalPolicy::Never {
            return Ok(Answer {
                decision: ApprovalDecision::Deny,
                reason: "the session's approval policy is `never`, so nobody can be asked"
                    .to_owned(),
            });
        }
        let question = crate::text::shorten(question.trim(), SUMMARY_CHARS);
        let arguments = json!({ "agent": agent, "input_required": question });
        let summary = if question.is_empty() {
            format!("remote agent `{agent}` asks for input")
        } else {
            format!("remote agent `{agent}` asks: {question}")
        };
        let display = display_call(Some(&summary), &arguments);
        let reason = format!(
            "the remote A2A agent `{agent}` needs input to go on; the decision is sent back to it"
        );
        let (request_id, waiter) = self.approvals.request(PendingApproval {
            session_id: ctx.session_id,
            execution_id: self.execution_id,
            call_id: ctx.call_id.clone(),
            tool: tool.to_owned(),
            arguments: arguments.clone(),
            summary: summary.clone(),
            display: display.clone(),
            reason: reason.clone(),
            parent_session_ids: self.ancestors.clone(),
            input: None,
        });
        ctx.events
            .emit_durable(EventPayload::PermissionRequested {
                request_id: request_id.clone(),
                call_id: ctx.call_id.clone(),
                tool: tool.to_owned(),
                arguments,
                summary,
                reason,
                display: display.text,
                control_characters: display.control_characters,
            })
            .await?;
        let mut open = OpenRequest {
            events: ctx.events.clone(),
            request_id: Some(request_id.clone()),
        };
        (self.on_waiting)(true);
        let resolution = waiter.await;
        (self.on_waiting)(false);
        open.request_id = None;
        ctx.events
            .emit_durable(EventPayload::ApprovalResolved {
                request_id,
                decision: resolution.decision,
                resolution: resolution.resolution,
                reason: resolution.reason.clone(),
            })
            .await?;
        Ok(Answer {
            decision: resolution.decision,
            reason: resolution.reason,
        })
    }
}

/// A request still open when its call stops (the turn was cancelled, or ran out of time):
/// the log says how it ended, as it does for a tool call's request.
struct OpenRequest {
    events: EventSink,
    request_id: Option<String>,
}

impl Drop for OpenRequest {
    fn drop(&mut self) {
        if let Some(request_id) = self.request_id.take() {
            let _ = self.events.emit(EventPayload::ApprovalResolved {
                request_id,
                decision: ApprovalDecision::Deny,
                resolution: ApprovalResolution::Cancelled,
                reason: "the turn stopped waiting for a decision".to_owned(),
            });
        }
    }
}
