//! One turn's slice of a session's event log.

use odyssey_api::v1 as pb;
use pb::session_event::Payload;

use crate::error::ClientError;
use crate::events::EventStream;

/// The events of one turn, live, ending after its `turn_completed`. Made by
/// [`crate::OdysseyClient::run_turn`]; reconnects like the [`EventStream`] under it.
#[derive(Debug)]
pub struct TurnStream {
    events: EventStream,
    execution_id: String,
    completed: Option<pb::TurnCompleted>,
}

impl TurnStream {
    pub(crate) fn new(events: EventStream, execution_id: String) -> Self {
        Self {
            events,
            execution_id,
            completed: None,
        }
    }

    /// The next event of this turn; `Ok(None)` once its `turn_completed` was returned.
    pub async fn next(&mut self) -> Result<Option<pb::SessionEvent>, ClientError> {
        if self.completed.is_some() {
            return Ok(None);
        }
        loop {
            let Some(event) = self.events.next().await? else {
                return Err(ClientError::Protocol(format!(
                    "the event stream ended before turn {} completed",
                    self.execution_id
                )));
            };
            if event.turn_id != self.execution_id {
                continue;
            }
            if let Some(Payload::TurnCompleted(done)) = &event.payload {
                self.completed = Some(done.clone());
            }
            return Ok(Some(event));
        }
    }

    /// Reads the rest of the turn and returns how it ended.
    pub async fn finish(mut self) -> Result<pb::TurnCompleted, ClientError> {
        while self.next().await?.is_some() {}
        self.completed
            .ok_or_else(|| ClientError::Protocol("the turn ended without turn_completed".into()))
    }

    /// The execution id (= the `turn_id` of this turn's events).
    pub fn execution_id(&self) -> &str {
        &self.execution_id
    }

    /// How the turn ended, once its last event was read.
    pub fn completion(&self) -> Option<&pb::TurnCompleted> {
        self.completed.as_ref()
    }

    /// The session stream underneath (sequence, heartbeats, reconnects).
    pub fn events(&self) -> &EventStream {
        &self.events
    }
}
