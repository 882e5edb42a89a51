//! The permission gate in front of every tool call: the agent's rules, the session's
//! approval policy, remembered `allow_always` decisions, operator hooks, and — when a
//! human must decide — the approval wait, during which the turn gives its worker slot
//! back.

use serde_json::{Value, json};
use uuid::Uuid;

use super::slot::WorkerSlot;
use super::status::ExecutionState;
use super::turn::Progress;
use crate::error::Result;
use crate::events::{ApprovalDecision, ApprovalResolution, EventPayload};
use crate::permissions::{
    ApprovalStore, Decision, HookConfig, PendingApproval, PermissionRules, always_asks,
    apply_hooks, display_call,
};
use crate::policy::ApprovalPolicy;
use crate::tools::{Tool, ToolContext};

pub(crate) struct Gate {
    pub rules: PermissionRules,
    /// A sub-agent's ancestors' rules (agent id, rules), nearest first: what any of them
    /// denies is denied here too.
    pub inherited: Vec<(String, PermissionRules)>,
    /// A sub-agent's ancestor sessions, nearest first (shown with its approvals).
    pub ancestors: Vec<Uuid>,
    pub policy: ApprovalPolicy,
    pub approvals: ApprovalStore,
    pub hooks: Vec<HookConfig>,
    pub execution_id: Uuid,
    /// Reports `WaitingApproval` and back to `Running`.
    pub on_state: Box<dyn Fn(ExecutionState) + Send + Sync>,
}

/// One tool call as the gate sees it.
pub(crate) struct Call<'a> {
    pub tool: &'a dyn Tool,
    pub name: &'a str,
    pub arguments: &'a Value,
    /// The arguments as recorded in events.
    pub sanitized: &'a Value,
}

/// What the gate decided for one call.
pub(crate) enum Verdict {
    Run,
    /// The call does not run; the model is told why.
    Refuse(String),
}

impl Gate {
    /// Whether a tool offered to the model (not denied outright).
    pub fn offered(&self, tool: &str) -> bool {
        self.rules.offered(tool) && self.inherited.iter().all(|(_, rules)| rules.offered(tool))
    }

    pub async fn check(
        &self,
        call: Call<'_>,
        ctx: &ToolContext,
        progress: &mut Progress,
        slot: &mut WorkerSlot,
    ) -> Result<Verdict> {
        let Call {
            tool,
            name,
            arguments,
            sanitized,
        } = call;
        let subject = tool.permission_subject(ctx, arguments);
        let mut decision =
            self.rules
                .decide(name, subject.as_deref(), tool.read_only(), self.policy);
        // A sub-agent is never allowed what an agent above it is denied, even where its own
        // rules are more specific.
        for (agent, rules) in &self.inherited {
            if let Decision::Deny { reason } =
                rules.decide(name, subject.as_deref(), tool.read_only(), self.policy)
            {
                decision = Decision::Deny {
                    reason: format!("{reason} (a rule of the parent agent `{agent}`)"),
                };
                break;
            }
        }
        // A remembered `allow_always` is a rule too: a call that always asks is asked.
        if matches!(decision, Decision::Ask { .. })
            && !always_asks(name, subject.as_deref())
            && self
                .approvals
                .is_remembered(ctx.session_id, name, sanitized)
        {
            decision = Decision::Allow;
        }
        if !self.hooks.is_empty() {
            let call = json!({
                "session_id": ctx.session_id,
                "execution_id": self.execution_id,
                "call_id": ctx.call_id,
                "tool": name,
                "subject": subject,
                "arguments": sanitized,
            });
            decision = apply_hooks(&self.hooks, &call, decision).await;
        }
        if self.policy == ApprovalPolicy::Never {
            decision = decision.without_asking();
        }
        let reason = match decision {
            Decision::Allow => return Ok(Verdict::Run),
            Decision::Deny { reason } => return Ok(Verdict::Refuse(format!("denied: {reason}"))),
            Decision::Ask { reason } => reason,
        };
        let summary = match &subject {
            Some(subject) => subject.clone(),
            None => format!("{name} {sanitized}"),
        };
        let display = display_call(subject.as_deref(), sanitized);
        let (request_id, waiter) = self.approvals.request(PendingApproval {
            session_id: ctx.session_id,
            execution_id: self.execution_id,
            call_id: ctx.call_id.clone(),
            tool: name.to_string(),
            arguments: sanitized.clone(),
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
                tool: name.to_string(),
                arguments: sanitized.clone(),
                summary,
                reason,
                display: display.text,
                control_characters: display.control_characters,
            })
            .await?;
        progress.pending_approval = Some(request_id.clone());
        (self.on_state)(ExecutionState::WaitingApproval);
        let resolution = slot.release_while(waiter).await;
        (self.on_state)(ExecutionState::Running);
        ctx.events
            .emit_durable(EventPayload::ApprovalResolved {
                request_id,
                decision: resolution.decision,
                resolution: resolution.resolution,
                reason: resolution.reason.clone(),
            })
            .await?;
        progress.pending_approval = None;
        Ok(match (resolution.decision, resolution.resolution) {
            (ApprovalDecision::AllowOnce | ApprovalDecision::AllowAlways, _) => Verdict::Run,
            (_, ApprovalResolution::TimedOut) => {
                Verdict::Refuse("denied: nobody approved the call in time".into())
            }
            (_, _) if resolution.reason.is_empty() => Verdict::Refuse("denied by the user".into()),
            (_, _) => Verdict::Refuse(format!("denied by the user: {}", resolution.reason)),
        })
    }
}
