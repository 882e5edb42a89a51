//! `odyssey.v1.ApprovalService`.

use odyssey_api::v1 as pb;
use odyssey_api::v1::approval_service_server::ApprovalService;
use tonic::{Request, Response, Status};

use super::convert;
use super::status::{invalid, parse_uuid, to_status};
use odyssey_runtime::events::ApprovalDecision;
use odyssey_runtime::{OdysseyRuntime, PageRequest};

pub struct Approvals {
    runtime: OdysseyRuntime,
}

impl Approvals {
    pub fn new(runtime: OdysseyRuntime) -> Self {
        Self { runtime }
    }
}

#[tonic::async_trait]
impl ApprovalService for Approvals {
    async fn list_approvals(
        &self,
        request: Request<pb::ListApprovalsRequest>,
    ) -> Result<Response<pb::ListApprovalsResponse>, Status> {
        let r = request.into_inner();
        let session = match r.session_id.as_str() {
            "" => None,
            id => Some(parse_uuid("session_id", id)?),
        };
        let page = PageRequest {
            size: usize::try_from(r.page_size)
                .map_err(|_| invalid("page_size", "must not be negative"))?,
            token: Some(r.page_token),
        };
        let page = self
            .runtime
            .list_approvals(session, page)
            .map_err(to_status)?;
        Ok(Response::new(pb::ListApprovalsResponse {
            approvals: page.items.iter().map(convert::approval).collect(),
            next_page_token: page.next_token.unwrap_or_default(),
        }))
    }

    async fn resolve_approval(
        &self,
        request: Request<pb::ResolveApprovalRequest>,
    ) -> Result<Response<pb::ResolveApprovalResponse>, Status> {
        let r = request.into_inner();
        let decision = match pb::ApprovalDecision::try_from(r.decision) {
            Ok(pb::ApprovalDecision::AllowOnce) => ApprovalDecision::AllowOnce,
            Ok(pb::ApprovalDecision::AllowAlways) => ApprovalDecision::AllowAlways,
            Ok(pb::ApprovalDecision::Deny) => ApprovalDecision::Deny,
            Ok(pb::ApprovalDecision::Unspecified) => {
                return Err(invalid(
                    "decision",
                    "is required: ALLOW_ONCE, ALLOW_ALWAYS or DENY",
                ));
            }
            Err(_) => {
                return Err(invalid(
                    "decision",
                    format!("unknown decision {}", r.decision),
                ));
            }
        };
        let request_id = parse_uuid("request_id", &r.request_id)?;
        let resolved = self
            .runtime
            .resolve_approval(&request_id.to_string(), decision, r.reason)
            .map_err(to_status)?;
        Ok(Response::new(pb::ResolveApprovalResponse {
            approval: Some(convert::approval(&resolved)),
            decision: r.decision,
        }))
    }
}
