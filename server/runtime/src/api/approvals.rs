//! Human decisions on tool calls waiting for approval.

use uuid::Uuid;

use super::OdysseyRuntime;
use crate::error::{Result, RuntimeError};
use crate::events::{ApprovalDecision, InputAction};
use crate::paging::{Page, PageRequest};
use crate::permissions::{Approval, ApprovalWatch};

/// Longest reason a decision may carry: it is shown to the model and kept in the log.
const MAX_REASON_BYTES: usize = 4096;

impl OdysseyRuntime {
    /// Pending requests, oldest first, optionally of one session.
    pub fn list_approvals(
        &self,
        session: Option<Uuid>,
        page: PageRequest,
    ) -> Result<Page<Approval>> {
        if let Some(id) = session
            && !self.inner.sessions.exists(id)
        {
            return Err(RuntimeError::not_found("session", id.to_string()));
        }
        Ok(self.inner.approvals.list(session, &page)?)
    }

    /// Follows the pending requests, optionally of one session: first every pending
    /// request, then each one filed and each one that ends (decided here or by another
    /// client, timed out, cancelled), in order. A watcher that falls behind is sent a fresh
    /// snapshot rather than losing a change.
    pub fn watch_approvals(&self, session: Option<Uuid>) -> Result<ApprovalWatch> {
        if let Some(id) = session
            && !self.inner.sessions.exists(id)
        {
            return Err(RuntimeError::not_found("session", id.to_string()));
        }
        Ok(self.inner.approvals.watch(session))
    }

    /// Resolves a pending request. The waiting turn takes the next free worker slot.
    pub fn resolve_approval(
        &self,
        request_id: &str,
        decision: ApprovalDecision,
        reason: String,
    ) -> Result<Approval> {
        if request_id.trim().is_empty() {
            return Err(RuntimeError::invalid("request_id", "is required"));
        }
        if reason.len() > MAX_REASON_BYTES {
            return Err(RuntimeError::invalid(
                "reason",
                format!("must be at most {MAX_REASON_BYTES} bytes"),
            ));
        }
        let approval = self.inner.approvals.resolve(request_id, decision, reason)?;
        tracing::info!(
            request = %request_id,
            session = %approval.request.session_id,
            tool = %approval.request.tool,
            ?decision,
            "approval resolved"
        );
        Ok(approval)
    }

    /// Answers a request for input (an MCP server's `elicitation/create`): `accept` with an
    /// answer matching the requested schema (InvalidArgument naming the field otherwise),
    /// or `decline` / `cancel`. The server is sent the answer and the turn's call goes on.
    pub fn resolve_input(
        &self,
        request_id: &str,
        action: InputAction,
        answer: Option<serde_json::Value>,
    ) -> Result<Approval> {
        if request_id.trim().is_empty() {
            return Err(RuntimeError::invalid("request_id", "is required"));
        }
        let approval = self
            .inner
            .approvals
            .resolve_input(request_id, action, answer)?;
        tracing::info!(
            request = %request_id,
            session = %approval.request.session_id,
            tool = %approval.request.tool,
            action = action.as_str(),
            "request for input answered"
        );
        Ok(approval)
    }
}
