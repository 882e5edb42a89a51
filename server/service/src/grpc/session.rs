//! `odyssey.v1.SessionService`, including the live event stream.

use std::pin::Pin;
use std::time::{Duration, SystemTime};

use futures::{Stream, StreamExt};
use odyssey_api::v1 as pb;
use odyssey_api::v1::session_service_server::SessionService;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use super::convert;
use super::status::{invalid, parse_uuid, to_status, to_status_at};
use odyssey_runtime::session::Subscription;
use odyssey_runtime::{ForkPoint, OdysseyRuntime, PageRequest, SessionFilter, SessionSpec};

/// Batches of events (up to a subscription batch, 256, each) buffered per subscriber
/// between the log and the network. Small on purpose: a slow client backs up into this
/// buffer, then into the log cursor, which costs nothing.
const STREAM_BUFFER: usize = 2;

/// Bytes per ExportSessionCassette message: well under any message size limit.
const CASSETTE_CHUNK: usize = 256 * 1024;

pub struct Sessions {
    runtime: OdysseyRuntime,
    heartbeat: Duration,
    shutdown: CancellationToken,
}

impl Sessions {
    pub fn new(runtime: OdysseyRuntime, heartbeat: Duration, shutdown: CancellationToken) -> Self {
        Self {
            runtime,
            heartbeat,
            shutdown,
        }
    }
}

type EventStream = Pin<Box<dyn Stream<Item = Result<pb::SubscribeSessionResponse, Status>> + Send>>;
type CassetteStream =
    Pin<Box<dyn Stream<Item = Result<pb::ExportSessionCassetteResponse, Status>> + Send>>;

#[tonic::async_trait]
impl SessionService for Sessions {
    async fn create_session(
        &self,
        request: Request<pb::CreateSessionRequest>,
    ) -> Result<Response<pb::CreateSessionResponse>, Status> {
        let r = request.into_inner();
        let spec = SessionSpec {
            bundle_reference: r.bundle_reference,
            agent_id: Some(r.agent_id).filter(|a| !a.is_empty()),
            model: convert::model_from(r.model.as_ref()),
            sandbox_mode: convert::sandbox_mode_from(r.sandbox_mode)
                .map_err(|m| invalid("sandbox_mode", m))?,
            approval_policy: convert::approval_policy_from(r.approval_policy)
                .map_err(|m| invalid("approval_policy", m))?,
            metadata: r.metadata.into_iter().collect(),
            token_budget: Some(r.token_budget).filter(|b| *b > 0),
        };
        let info = self
            .runtime
            .create_session(spec)
            .await
            .map_err(|e| to_status_at(e, super::bundle::BUNDLE_REFERENCE))?;
        Ok(Response::new(pb::CreateSessionResponse {
            session: Some(convert::session(&info)),
        }))
    }

    async fn get_session(
        &self,
        request: Request<pb::GetSessionRequest>,
    ) -> Result<Response<pb::GetSessionResponse>, Status> {
        let id = parse_uuid("session_id", &request.into_inner().session_id)?;
        let info = self.runtime.get_session(id).await.map_err(to_status)?;
        Ok(Response::new(pb::GetSessionResponse {
            session: Some(convert::session(&info)),
        }))
    }

    async fn list_sessions(
        &self,
        request: Request<pb::ListSessionsRequest>,
    ) -> Result<Response<pb::ListSessionsResponse>, Status> {
        let r = request.into_inner();
        let page = PageRequest {
            size: usize::try_from(r.page_size)
                .map_err(|_| invalid("page_size", "must not be negative"))?,
            token: Some(r.page_token),
        };
        let filter = SessionFilter {
            bundle: Some(r.bundle).filter(|b| !b.is_empty()),
            agent_id: Some(r.agent_id).filter(|a| !a.is_empty()),
            parent_session_id: if r.parent_session_id.is_empty() {
                None
            } else {
                Some(parse_uuid("parent_session_id", &r.parent_session_id)?)
            },
        };
        let page = self
            .runtime
            .list_sessions(filter, page)
            .await
            .map_err(to_status)?;
        Ok(Response::new(pb::ListSessionsResponse {
            sessions: page.items.iter().map(convert::session).collect(),
            next_page_token: page.next_token.unwrap_or_default(),
        }))
    }

    async fn delete_session(
        &self,
        request: Request<pb::DeleteSessionRequest>,
    ) -> Result<Response<pb::DeleteSessionResponse>, Status> {
        let id = parse_uuid("session_id", &request.into_inner().session_id)?;
        self.runtime.delete_session(id).await.map_err(to_status)?;
        Ok(Response::new(pb::DeleteSessionResponse {}))
    }

    async fn fork_session(
        &self,
        request: Request<pb::ForkSessionRequest>,
    ) -> Result<Response<pb::ForkSessionResponse>, Status> {
        use pb::fork_session_request::Point;
        let r = request.into_inner();
        let id = parse_uuid("session_id", &r.session_id)?;
        let point = match r.point {
            Some(Point::AfterTurn(turn)) => ForkPoint::AfterTurn(turn),
            Some(Point::AtSequence(sequence)) => ForkPoint::AtSequence(sequence),
            None => {
                return Err(invalid(
                    "point",
                    "set after_turn (a turn number) or at_sequence (a turn's end)",
                ));
            }
        };
        let info = self
            .runtime
            .fork_session(id, point)
            .await
            .map_err(to_status)?;
        Ok(Response::new(pb::ForkSessionResponse {
            session: Some(convert::session(&info)),
        }))
    }

    async fn rewind_session(
        &self,
        request: Request<pb::RewindSessionRequest>,
    ) -> Result<Response<pb::RewindSessionResponse>, Status> {
        let r = request.into_inner();
        let id = parse_uuid("session_id", &r.session_id)?;
        let rewound = self
            .runtime
            .rewind_session(id, r.to_turn)
            .await
            .map_err(to_status)?;
        Ok(Response::new(pb::RewindSessionResponse {
            session: Some(convert::session(&rewound.session)),
            event: Some(convert::EventIds::default().event(&rewound.event)),
        }))
    }

    async fn get_turn_changes(
        &self,
        request: Request<pb::GetTurnChangesRequest>,
    ) -> Result<Response<pb::GetTurnChangesResponse>, Status> {
        let r = request.into_inner();
        let id = parse_uuid("session_id", &r.session_id)?;
        let changes = self
            .runtime
            .turn_changes(id, r.turn)
            .await
            .map_err(to_status)?;
        Ok(Response::new(convert::turn_changes(&changes)))
    }

    type ExportSessionCassetteStream = CassetteStream;

    async fn export_session_cassette(
        &self,
        request: Request<pb::ExportSessionCassetteRequest>,
    ) -> Result<Response<Self::ExportSessionCassetteStream>, Status> {
        let id = parse_uuid("session_id", &request.into_inner().session_id)?;
        let cassette = self.runtime.session_cassette(id).await.map_err(to_status)?;
        let chunks: Vec<Vec<u8>> = cassette
            .chunks(CASSETTE_CHUNK)
            .map(<[u8]>::to_vec)
            .collect();
        let messages = chunks
            .into_iter()
            .map(|chunk| Ok(pb::ExportSessionCassetteResponse { chunk }));
        Ok(Response::new(Box::pin(futures::stream::iter(messages))))
    }

    type SubscribeSessionStream = EventStream;

    async fn subscribe_session(
        &self,
        request: Request<pb::SubscribeSessionRequest>,
    ) -> Result<Response<Self::SubscribeSessionStream>, Status> {
        let r = request.into_inner();
        let id = parse_uuid("session_id", &r.session_id)?;
        let subscription = self
            .runtime
            .subscribe_session(id, r.after_sequence)
            .await
            .map_err(to_status)?;
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        tokio::spawn(forward(
            subscription,
            tx,
            self.heartbeat,
            self.shutdown.clone(),
        ));
        // One channel message per batch, not per event: the stream flattens them.
        let messages =
            tokio_stream::wrappers::ReceiverStream::new(rx).flat_map(futures::stream::iter);
        Ok(Response::new(Box::pin(messages)))
    }

    async fn list_session_tools(
        &self,
        request: Request<pb::ListSessionToolsRequest>,
    ) -> Result<Response<pb::ListSessionToolsResponse>, Status> {
        let r = request.into_inner();
        let id = parse_uuid("session_id", &r.session_id)?;
        let page = PageRequest {
            size: usize::try_from(r.page_size)
                .map_err(|_| invalid("page_size", "must not be negative"))?,
            token: Some(r.page_token),
        };
        let listed = self
            .runtime
            .list_session_tools(id, page)
            .await
            .map_err(to_status)?;
        Ok(Response::new(convert::session_tools(&listed)))
    }
}

/// Pumps a subscription into the response stream, with heartbeats while idle. Ends when
/// the client goes away, the session is deleted, or the server shuts down.
async fn forward(
    mut subscription: Subscription,
    tx: mpsc::Sender<Vec<Result<pb::SubscribeSessionResponse, Status>>>,
    heartbeat: Duration,
    shutdown: CancellationToken,
) {
    use pb::subscribe_session_response::Item;
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + heartbeat, heartbeat);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut ids = convert::EventIds::default();
    loop {
        let (message, last) = tokio::select! {
            () = shutdown.cancelled() => {
                let _ = tx.send(vec![Err(Status::unavailable("the server is shutting down; resubscribe with the last sequence you saw"))]).await;
                return;
            }
            () = tx.closed() => return,
            _ = ticker.tick() => (vec![Ok(pb::SubscribeSessionResponse {
                item: Some(Item::Heartbeat(pb::Heartbeat {
                    sent_at: Some(convert::timestamp(SystemTime::now())),
                    last_sequence: subscription.session().visible_sequence(),
                })),
            })], false),
            batch = subscription.next_batch() => match batch {
                Ok(Some(events)) => {
                    ticker.reset();
                    let message = events
                        .iter()
                        .map(|e| Ok(pb::SubscribeSessionResponse { item: Some(Item::Event(ids.event(e))) }))
                        .collect();
                    (message, false)
                }
                Ok(None) => (vec![Err(Status::not_found("the session was deleted"))], true),
                Err(e) => (vec![Err(to_status(e))], true),
            },
        };
        if tx.send(message).await.is_err() || last {
            return;
        }
    }
}
