//! Rows for `ApprovalService`.

use odyssey_api::v1 as pb;

use super::{Case, UNKNOWN_ID, case, done, first, huge};

fn resolve(request_id: &str, decision: i32) -> pb::ResolveApprovalRequest {
    pb::ResolveApprovalRequest {
        request_id: request_id.into(),
        decision,
        reason: String::new(),
        ..Default::default()
    }
}

const ALLOW: i32 = pb::ApprovalDecision::AllowOnce as i32;

pub(super) fn cases() -> Vec<Case> {
    vec![
        case!(
            "ApprovalService/ListApprovals",
            "malformed session id",
            InvalidArgument,
            Some("session_id"),
            |c| {
                done(
                    c.approvals()
                        .list_approvals(pb::ListApprovalsRequest {
                            session_id: "nope".into(),
                            ..Default::default()
                        })
                        .await,
                )
            }
        ),
        case!(
            "ApprovalService/ListApprovals",
            "huge session id",
            InvalidArgument,
            Some("session_id"),
            |c| {
                done(
                    c.approvals()
                        .list_approvals(pb::ListApprovalsRequest {
                            session_id: huge(),
                            ..Default::default()
                        })
                        .await,
                )
            }
        ),
        case!(
            "ApprovalService/ListApprovals",
            "unknown session",
            NotFound,
            None,
            |c| {
                done(
                    c.approvals()
                        .list_approvals(pb::ListApprovalsRequest {
                            session_id: UNKNOWN_ID.into(),
                            ..Default::default()
                        })
                        .await,
                )
            }
        ),
        case!(
            "ApprovalService/ListApprovals",
            "negative page size",
            InvalidArgument,
            Some("page_size"),
            |c| {
                done(
                    c.approvals()
                        .list_approvals(pb::ListApprovalsRequest {
                            page_size: i32::MIN,
                            ..Default::default()
                        })
                        .await,
                )
            }
        ),
        case!(
            "ApprovalService/ListApprovals",
            "undecodable page token",
            InvalidArgument,
            Some("page_token"),
            |c| {
                done(
                    c.approvals()
                        .list_approvals(pb::ListApprovalsRequest {
                            page_token: "!".into(),
                            ..Default::default()
                        })
                        .await,
                )
            }
        ),
        case!(
            "ApprovalService/ListApprovals",
            "page token the server never issued",
            InvalidArgument,
            Some("page_token"),
            |c| {
                done(
                    c.approvals()
                        .list_approvals(pb::ListApprovalsRequest {
                            page_token: "Zm9yZ2Vk".into(),
                            ..Default::default()
                        })
                        .await,
                )
            }
        ),
        case!(
            "ApprovalService/WatchApprovals",
            "malformed session id",
            InvalidArgument,
            Some("session_id"),
            |c| {
                first(
                    c.approvals()
                        .watch_approvals(pb::WatchApprovalsRequest {
                            session_id: "nope".into(),
                        })
                        .await,
                )
                .await
            }
        ),
        case!(
            "ApprovalService/WatchApprovals",
            "huge session id",
            InvalidArgument,
            Some("session_id"),
            |c| {
                first(
                    c.approvals()
                        .watch_approvals(pb::WatchApprovalsRequest { session_id: huge() })
                        .await,
                )
                .await
            }
        ),
        case!(
            "ApprovalService/WatchApprovals",
            "unknown session",
            NotFound,
            None,
            |c| {
                first(
                    c.approvals()
                        .watch_approvals(pb::WatchApprovalsRequest {
                            session_id: UNKNOWN_ID.into(),
                        })
                        .await,
                )
                .await
            }
        ),
        case!(
            "ApprovalService/ResolveApproval",
            "missing request id",
            InvalidArgument,
            Some("request_id"),
            |c| { done(c.approvals().resolve_approval(resolve("", ALLOW)).await) }
        ),
        case!(
            "ApprovalService/ResolveApproval",
            "malformed request id",
            InvalidArgument,
            Some("request_id"),
            |c| {
                done(
                    c.approvals()
                        .resolve_approval(resolve("req-1", ALLOW))
                        .await,
                )
            }
        ),
        case!(
            "ApprovalService/ResolveApproval",
            "huge request id",
            InvalidArgument,
            Some("request_id"),
            |c| {
                done(
                    c.approvals()
                        .resolve_approval(resolve(&huge(), ALLOW))
                        .await,
                )
            }
        ),
        case!(
            "ApprovalService/ResolveApproval",
            "unknown request id",
            NotFound,
            None,
            |c| {
                done(
                    c.approvals()
                        .resolve_approval(resolve(UNKNOWN_ID, ALLOW))
                        .await,
                )
            }
        ),
        case!(
            "ApprovalService/ResolveApproval",
            "unspecified decision",
            InvalidArgument,
            Some("decision"),
            |c| { done(c.approvals().resolve_approval(resolve(UNKNOWN_ID, 0)).await) }
        ),
        case!(
            "ApprovalService/ResolveApproval",
            "unknown decision number",
            InvalidArgument,
            Some("decision"),
            |c| {
                done(
                    c.approvals()
                        .resolve_approval(resolve(UNKNOWN_ID, 99))
                        .await,
                )
            }
        ),
        case!(
            "ApprovalService/ResolveApproval",
            "huge reason",
            InvalidArgument,
            Some("reason"),
            |c| {
                done(
                    c.approvals()
                        .resolve_approval(pb::ResolveApprovalRequest {
                            reason: huge(),
                            ..resolve(UNKNOWN_ID, pb::ApprovalDecision::Deny as i32)
                        })
                        .await,
                )
            }
        ),
    ]
}
