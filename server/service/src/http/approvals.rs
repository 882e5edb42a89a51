//! `POST /approvals/{request_id}`: answers a tool call waiting for a human, with the JSON
//! body `{"decision": "allow_once" | "allow_always" | "deny", "reason": "..."}` (the reason
//! is shown to the model on a deny). Answers the resolved request, with its display form
//! (`display`, `control_characters`: what a person should be shown of the call).

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};

use super::Gateway;
use super::error::HttpError;
use odyssey_runtime::events::ApprovalDecision;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResolveBody {
    decision: ApprovalDecision,
    #[serde(default)]
    reason: String,
}

#[derive(Debug, Serialize)]
pub struct Resolved {
    request_id: String,
    session_id: String,
    execution_id: String,
    call_id: String,
    tool: String,
    summary: String,
    /// The call as a person is shown it: control characters as visible escapes.
    display: String,
    control_characters: bool,
    decision: ApprovalDecision,
}

pub async fn resolve(
    State(gateway): State<Gateway>,
    Path(request_id): Path<String>,
    body: Result<Json<ResolveBody>, JsonRejection>,
) -> Result<Json<Resolved>, HttpError> {
    let Json(body) = body.map_err(|rejection| {
        HttpError::bad_request(
            rejection.status(),
            format!(
                "{}; expected {{\"decision\": \"allow_once\" | \"allow_always\" | \"deny\", \"reason\": \"...\"}}",
                rejection.body_text()
            ),
        )
    })?;
    let approval = gateway
        .runtime
        .resolve_approval(&request_id, body.decision, body.reason)?;
    Ok(Json(Resolved {
        request_id: approval.request_id,
        session_id: approval.request.session_id.to_string(),
        execution_id: approval.request.execution_id.to_string(),
        call_id: approval.request.call_id,
        tool: approval.request.tool,
        summary: approval.request.summary,
        display: approval.request.display.text,
        control_characters: approval.request.display.control_characters,
        decision: body.decision,
    }))
}
