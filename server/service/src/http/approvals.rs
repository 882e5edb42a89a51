//! Approvals over HTTP, answered as the API's messages in their canonical JSON form:
//!
//! - `GET /approvals?session_id=&page_size=&page_token=`: the requests waiting for a human,
//!   as `ListApprovalsResponse` (`{"approvals": [...], "nextPageToken": "..."}`).
//! - `POST /approvals/{request_id}` with the body
//!   `{"decision": "allow_once" | "allow_always" | "deny", "reason": "..."}` (the reason is
//!   shown to the model on a deny): answers a waiting tool call, and returns the resolved
//!   request as `ResolveApprovalResponse` (`{"approval": {...}, "decision": "APPROVAL_DECISION_..."}`),
//!   whose `display` and `controlCharacters` say what a person should be shown of the call.
//!   A request for input (`"kind": "APPROVAL_KIND_INPUT"`, an MCP server's question) is
//!   answered with `{"action": "accept", "answer": {...}}`, `{"action": "decline"}` or
//!   `{"action": "cancel"}`; the answer must match the request's `requestedSchema` (400
//!   naming the field otherwise). A plain `"decision": "deny"` declines it.
//!
//! With a store several servers share, both answer for the requests of turns any of them
//! runs, as the gRPC calls do.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, Query, State};
use odyssey_api::v1 as pb;
use serde::Deserialize;

use super::Gateway;
use super::error::HttpError;
use super::json::ProtoJson;
use crate::grpc::convert;
use odyssey_runtime::events::{ApprovalDecision, InputAction};
use odyssey_runtime::{PageRequest, RuntimeError};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResolveBody {
    #[serde(default)]
    decision: Option<ApprovalDecision>,
    #[serde(default)]
    reason: String,
    /// For a request for input.
    #[serde(default)]
    action: Option<InputAction>,
    #[serde(default)]
    answer: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    session_id: Option<String>,
    #[serde(default)]
    page_size: usize,
    page_token: Option<String>,
}

pub async fn list(
    State(gateway): State<Gateway>,
    Query(query): Query<ListQuery>,
) -> Result<ProtoJson<pb::ListApprovalsResponse>, HttpError> {
    let session = match query.session_id.as_deref() {
        None | Some("") => None,
        Some(id) => Some(uuid::Uuid::parse_str(id).map_err(|_| {
            RuntimeError::invalid(
                "session_id",
                format!("`{}` is not a UUID", crate::grpc::shorten(id)),
            )
        })?),
    };
    let page = PageRequest {
        size: query.page_size,
        token: query.page_token,
    };
    // With a store several servers share, the requests of turns they run too.
    let page = gateway
        .runtime
        .list_approvals_anywhere(session, page)
        .await?;
    Ok(ProtoJson(pb::ListApprovalsResponse {
        approvals: page.items.iter().map(convert::approval).collect(),
        next_page_token: page.next_token.unwrap_or_default(),
    }))
}

const EXPECTED: &str = "expected {\"decision\": \"allow_once\" | \"allow_always\" | \"deny\", \"reason\": \"...\"}, or for a request for input {\"action\": \"accept\" | \"decline\" | \"cancel\", \"answer\": {...}}";

pub async fn resolve(
    State(gateway): State<Gateway>,
    Path(request_id): Path<String>,
    body: Result<Json<ResolveBody>, JsonRejection>,
) -> Result<ProtoJson<pb::ResolveApprovalResponse>, HttpError> {
    let Json(body) = body.map_err(|rejection| {
        HttpError::bad_request(
            rejection.status(),
            format!("{}; {EXPECTED}", rejection.body_text()),
        )
    })?;
    let approval = match (body.action, body.decision) {
        (Some(action), _) => {
            gateway
                .runtime
                .resolve_input_anywhere(&request_id, action, body.answer)
                .await?
        }
        (None, Some(decision)) if body.answer.is_some() => {
            let action = match decision {
                ApprovalDecision::Deny => InputAction::Decline,
                _ => InputAction::Accept,
            };
            gateway
                .runtime
                .resolve_input_anywhere(&request_id, action, body.answer)
                .await?
        }
        (None, Some(decision)) => {
            gateway
                .runtime
                .resolve_approval_anywhere(&request_id, decision, body.reason)
                .await?
        }
        (None, None) => {
            return Err(
                RuntimeError::invalid("decision", format!("is required; {EXPECTED}")).into(),
            );
        }
    };
    let decision = approval
        .resolution
        .as_ref()
        .map_or(0, |r| convert::approval_decision(r.decision));
    Ok(ProtoJson(pb::ResolveApprovalResponse {
        approval: Some(convert::approval(&approval)),
        decision,
    }))
}
