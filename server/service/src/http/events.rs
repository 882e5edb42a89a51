//! `GET /sessions/{session_id}/events`: a session's event log as server-sent events,
//! replayed after a sequence, then live. Each event is sent as
//! `id: <sequence>`, `event: <kind>` (the name of the `SessionEvent.payload` field set:
//! `turn_started`, `permission_requested`, ...) and `data: <SubscribeSessionResponse>` in
//! its proto3 canonical JSON form, the very message grpcurl prints for SubscribeSession
//! (`{"event": {"sequence": "3", "turnStarted": {...}, ...}}`), never the on-disk log's
//! format. A reconnecting `EventSource` sends
//! `Last-Event-ID` and resumes after it with no gap and no duplicate; `?after_sequence=N`
//! does the same for a first connection. Idle streams carry keep-alive comments.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures::Stream;
use http::HeaderMap;
use odyssey_api::v1 as pb;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::Gateway;
use super::error::HttpError;
use super::json::event_message;
use crate::grpc::convert::EventIds;
use odyssey_runtime::RuntimeError;
use odyssey_runtime::events::Event;
use odyssey_runtime::session::Subscription;

#[derive(Debug, Deserialize)]
pub struct EventsQuery {
    after_sequence: Option<u64>,
}

pub async fn stream(
    State(gateway): State<Gateway>,
    Path(session_id): Path<String>,
    Query(query): Query<EventsQuery>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, HttpError> {
    let id = uuid::Uuid::parse_str(&session_id).map_err(|_| {
        RuntimeError::invalid(
            "session_id",
            format!("`{}` is not a UUID", crate::grpc::shorten(&session_id)),
        )
    })?;
    let after = match last_event_id(&headers)? {
        Some(sequence) => sequence,
        None => query.after_sequence.unwrap_or(0),
    };
    let subscription = gateway.runtime.subscribe_session(id, after).await?;
    let events = Events {
        subscription,
        pending: VecDeque::new(),
        ids: EventIds::default(),
        shutdown: gateway.shutdown.clone(),
        done: false,
    };
    let stream = futures::stream::unfold(events, |mut events| async move {
        let next = events.next().await?;
        Some((Ok(next), events))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(gateway.heartbeat)))
}

/// `Last-Event-ID`, which an `EventSource` sends when it reconnects.
fn last_event_id(headers: &HeaderMap) -> Result<Option<u64>, RuntimeError> {
    let Some(value) = headers.get("last-event-id") else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Some)
        .ok_or_else(|| RuntimeError::invalid("Last-Event-ID", "must be an event sequence number"))
}

/// The stream's state: the log cursor, events read but not yet sent, and the end.
struct Events {
    subscription: Subscription,
    pending: VecDeque<Arc<Event>>,
    ids: EventIds,
    shutdown: CancellationToken,
    done: bool,
}

impl Events {
    /// The next SSE message; `None` once the stream is over. A deleted session, a failed
    /// read or a shutdown ends it with an `error` event saying why.
    async fn next(&mut self) -> Option<SseEvent> {
        if self.done {
            return None;
        }
        if let Some(event) = self.pending.pop_front() {
            return Some(self.message(&event));
        }
        let batch = tokio::select! {
            () = self.shutdown.cancelled() => Err(RuntimeError::ShuttingDown),
            batch = self.subscription.next_batch() => batch,
        };
        match batch {
            Ok(Some(events)) => {
                self.pending.extend(events);
                let event = self.pending.pop_front()?;
                Some(self.message(&event))
            }
            Ok(None) => self.end(RuntimeError::not_found(
                "session",
                self.subscription.session().id().to_string(),
            )),
            Err(error) => self.end(error),
        }
    }

    fn end(&mut self, error: RuntimeError) -> Option<SseEvent> {
        self.fail(HttpError::from(error))
    }

    fn fail(&mut self, error: HttpError) -> Option<SseEvent> {
        self.done = true;
        Some(
            SseEvent::default()
                .event("error")
                .data(error.body().to_string()),
        )
    }

    /// One event as SubscribeSession sends it, in the canonical JSON form. An event with no
    /// JSON form (a server defect) ends the stream with an `error` event.
    fn message(&mut self, event: &Event) -> SseEvent {
        let response = event_message(&mut self.ids, event);
        let kind = match &response.item {
            Some(pb::subscribe_session_response::Item::Event(e)) => {
                odyssey_api::json::oneof_case(e, "payload")
            }
            _ => Ok(None),
        };
        match (kind, odyssey_api::json::to_string(&response)) {
            (Ok(kind), Ok(data)) => SseEvent::default()
                .id(event.sequence.to_string())
                .event(kind.unwrap_or_else(|| "event".to_owned()))
                .data(data),
            (Err(error), _) | (_, Err(error)) => {
                let error = HttpError::unencodable(&error);
                self.fail(error).unwrap_or_default()
            }
        }
    }
}
