//! Typed approval calls: the tool calls waiting for a human, and the human's answer.

use odyssey_api::v1 as pb;

use crate::bundles::PAGE_SIZE;
use crate::client::OdysseyClient;
use crate::error::ClientError;

impl OdysseyClient {
    /// Every pending approval request, in the server's order; only those of `session` when
    /// given. Follows pages to the last one, so the caller sees the
    /// whole queue at the time of the call.
    pub async fn list_approvals(
        &self,
        session: Option<&str>,
    ) -> Result<Vec<pb::Approval>, ClientError> {
        let mut approvals = Vec::new();
        let mut page_token = String::new();
        loop {
            let request = pb::ListApprovalsRequest {
                session_id: session.unwrap_or_default().to_owned(),
                page_size: PAGE_SIZE,
                page_token: std::mem::take(&mut page_token),
            };
            let page = crate::retry::read(|| async {
                Ok(self.approvals().list_approvals(request.clone()).await?)
            })
            .await?
            .into_inner();
            let empty_page = page.approvals.is_empty();
            approvals.extend(page.approvals);
            if page.next_page_token.is_empty() {
                return Ok(approvals);
            }
            // A server that keeps handing out tokens for empty pages would loop forever.
            if empty_page {
                return Err(ClientError::Protocol(
                    "ListApprovals returned an empty page with a next page token".into(),
                ));
            }
            page_token = page.next_page_token;
        }
    }

    /// Answers one approval request. `reason` goes with a deny and is shown to the model;
    /// the server ignores it otherwise. An unknown request fails with NOT_FOUND, one that
    /// was already answered (by someone else, a timeout or a cancel) with
    /// FAILED_PRECONDITION; neither changes anything.
    pub async fn resolve_approval(
        &self,
        request_id: &str,
        decision: pb::ApprovalDecision,
        reason: Option<&str>,
    ) -> Result<pb::ResolveApprovalResponse, ClientError> {
        let request = pb::ResolveApprovalRequest {
            request_id: request_id.to_owned(),
            decision: decision.into(),
            reason: reason.unwrap_or_default().to_owned(),
            ..Default::default()
        };
        Ok(self
            .approvals()
            .resolve_approval(request)
            .await?
            .into_inner())
    }

    /// Answers a request for input (an approval of kind INPUT: an MCP server asks a person
    /// for the fields of `requested_schema`): ACCEPT with `answer`, or DECLINE / CANCEL
    /// with none. An answer that does not match the schema fails with INVALID_ARGUMENT
    /// naming the field (`answer.age`), and the request still waits.
    pub async fn resolve_input(
        &self,
        request_id: &str,
        action: pb::HumanInputAction,
        answer: Option<prost_types::Struct>,
    ) -> Result<pb::ResolveApprovalResponse, ClientError> {
        let request = pb::ResolveApprovalRequest {
            request_id: request_id.to_owned(),
            action: action.into(),
            answer,
            ..Default::default()
        };
        Ok(self
            .approvals()
            .resolve_approval(request)
            .await?
            .into_inner())
    }
}
