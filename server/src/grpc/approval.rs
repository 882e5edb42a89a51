//! `odyssey.v1.ApprovalService`.

use odyssey_api::v1 as pb;
use odyssey_api::v1::approval_service_server::ApprovalService;
use tonic::{Request, Response, Status};

use super::status::unimplemented;

pub struct Approvals;

#[tonic::async_trait]
impl ApprovalService for Approvals {
    async fn list_approvals(
        &self,
        _: Request<pb::ListApprovalsRequest>,
    ) -> Result<Response<pb::ListApprovalsResponse>, Status> {
        Err(unimplemented(
            "ListApprovals is not available on this server yet: its tools never ask for approval",
        ))
    }

    async fn resolve_approval(
        &self,
        _: Request<pb::ResolveApprovalRequest>,
    ) -> Result<Response<pb::ResolveApprovalResponse>, Status> {
        Err(unimplemented(
            "ResolveApproval is not available on this server yet: its tools never ask for approval",
        ))
    }
}
