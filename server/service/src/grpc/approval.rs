//! `odyssey.v1.ApprovalService`.

use std::pin::Pin;
use std::time::{Duration, SystemTime};

use futures::Stream;
use odyssey_api::v1 as pb;
use odyssey_api::v1::approval_service_server::ApprovalService;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use super::convert;
use super::status::{invalid, parse_uuid, to_status};
use odyssey_runtime::events::{ApprovalDecision, InputAction};
use odyssey_runtime::permissions::{ApprovalChange, ApprovalUpdate, ApprovalWatch};
use odyssey_runtime::{OdysseyRuntime, PageRequest};

/// Updates buffered per watcher; a slow watcher makes the runtime's channel lag, which
/// ends in a fresh snapshot, never in a lost change.
const WATCH_BUFFER: usize = 16;

pub struct Approvals {
    runtime: OdysseyRuntime,
    heartbeat: Duration,
    shutdown: CancellationToken,
}

impl Approvals {
    pub fn new(runtime: OdysseyRuntime, heartbeat: Duration, shutdown: CancellationToken) -> Self {
        Self {
            runtime,
            heartbeat,
            shutdown,
        }
    }
}

type WatchStream = Pin<Box<dyn Stream<Item = Result<pb::WatchApprovalsResponse, Status>> + Send>>;

#[tonic::async_trait]
impl ApprovalService for Approvals {
    type WatchApprovalsStream = WatchStream;

    async fn watch_approvals(
        &self,
        request: Request<pb::WatchApprovalsRequest>,
    ) -> Result<Response<Self::WatchApprovalsStream>, Status> {
        let r = request.into_inner();
        let session = match r.session_id.as_str() {
            "" => None,
            id => Some(parse_uuid("session_id", id)?),
        };
        let watch = self
            .runtime
            .watch_approvals_anywhere(session)
            .await
            .map_err(to_status)?;
        let (tx, rx) = mpsc::channel(WATCH_BUFFER);
        tokio::spawn(forward(watch, tx, self.heartbeat, self.shutdown.clone()));
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(rx),
        )))
    }

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
            .list_approvals_anywhere(session, page)
            .await
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
        let request_id = parse_uuid("request_id", &r.request_id)?;
        let action = match pb::HumanInputAction::try_from(r.action) {
            Ok(pb::HumanInputAction::Unspecified) => None,
            Ok(pb::HumanInputAction::Accept) => Some(InputAction::Accept),
            Ok(pb::HumanInputAction::Decline) => Some(InputAction::Decline),
            Ok(pb::HumanInputAction::Cancel) => Some(InputAction::Cancel),
            Err(_) => {
                return Err(invalid("action", format!("unknown action {}", r.action)));
            }
        };
        let answer = r
            .answer
            .as_ref()
            .map(|s| serde_json::Value::Object(convert::struct_to_json(s)));
        let decision = match pb::ApprovalDecision::try_from(r.decision) {
            Ok(pb::ApprovalDecision::AllowOnce) => Some(ApprovalDecision::AllowOnce),
            Ok(pb::ApprovalDecision::AllowAlways) => Some(ApprovalDecision::AllowAlways),
            Ok(pb::ApprovalDecision::Deny) => Some(ApprovalDecision::Deny),
            Ok(pb::ApprovalDecision::Unspecified) => None,
            Err(_) => {
                return Err(invalid(
                    "decision",
                    format!("unknown decision {}", r.decision),
                ));
            }
        };
        let resolved = match (action, decision) {
            (Some(action), _) => self
                .runtime
                .resolve_input_anywhere(&request_id.to_string(), action, answer)
                .await
                .map_err(to_status)?,
            // A decision with an answer accepts it (ALLOW_ONCE) or is refused as the
            // runtime sees fit; without an answer it is a plain decision.
            (None, Some(decision)) if answer.is_some() => {
                let action = match decision {
                    ApprovalDecision::Deny => InputAction::Decline,
                    _ => InputAction::Accept,
                };
                self.runtime
                    .resolve_input_anywhere(&request_id.to_string(), action, answer)
                    .await
                    .map_err(to_status)?
            }
            (None, Some(decision)) => self
                .runtime
                .resolve_approval_anywhere(&request_id.to_string(), decision, r.reason)
                .await
                .map_err(to_status)?,
            (None, None) => {
                return Err(invalid(
                    "decision",
                    "is required: ALLOW_ONCE, ALLOW_ALWAYS or DENY (or, for a request for \
                     input, an action: ACCEPT, DECLINE or CANCEL)",
                ));
            }
        };
        let decision = resolved
            .resolution
            .as_ref()
            .map_or(r.decision, |res| convert::approval_decision(res.decision));
        Ok(Response::new(pb::ResolveApprovalResponse {
            approval: Some(convert::approval(&resolved)),
            decision,
        }))
    }
}

/// Pumps a watch into the response stream, with heartbeats while nothing changes. Ends
/// when the client goes away or the server shuts down.
async fn forward(
    mut watch: ApprovalWatch,
    tx: mpsc::Sender<Result<pb::WatchApprovalsResponse, Status>>,
    heartbeat: Duration,
    shutdown: CancellationToken,
) {
    use pb::watch_approvals_response::Item;
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + heartbeat, heartbeat);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // How many requests the watcher holds, for the heartbeat.
    let mut pending: u32 = 0;
    loop {
        let item = tokio::select! {
            () = shutdown.cancelled() => {
                let _ = tx.send(Err(Status::unavailable("the server is shutting down; watch again to get a fresh snapshot"))).await;
                return;
            }
            () = tx.closed() => return,
            _ = ticker.tick() => Item::Heartbeat(pb::ApprovalsHeartbeat {
                sent_at: Some(convert::timestamp(SystemTime::now())),
                pending,
            }),
            update = watch.next() => {
                ticker.reset();
                match update {
                    Some(ApprovalUpdate::Snapshot(approvals)) => {
                        pending = u32::try_from(approvals.len()).unwrap_or(u32::MAX);
                        Item::Snapshot(pb::ApprovalSnapshot {
                            approvals: approvals.iter().map(convert::approval).collect(),
                        })
                    }
                    Some(ApprovalUpdate::Change(ApprovalChange::Added(a))) => {
                        pending = pending.saturating_add(1);
                        Item::Added(convert::approval(&a))
                    }
                    Some(ApprovalUpdate::Change(ApprovalChange::Removed(a))) => {
                        pending = pending.saturating_sub(1);
                        Item::Removed(convert::approval_removed(&a))
                    }
                    None => return,
                }
            }
        };
        let message = pb::WatchApprovalsResponse { item: Some(item) };
        if tx.send(Ok(message)).await.is_err() {
            return;
        }
    }
}
