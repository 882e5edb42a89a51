//! Where a turn's tools write their events.

use std::sync::Arc;

use uuid::Uuid;

use super::SessionHandle;
use crate::error::Result;
use crate::events::EventPayload;
use crate::sandbox::ConnectionReporter;

/// Appends events to one session's log on behalf of one turn (or of no turn, for
/// operator commands).
#[derive(Clone)]
pub struct EventSink {
    session: Arc<SessionHandle>,
    turn_id: Option<Uuid>,
}

impl EventSink {
    pub fn new(session: Arc<SessionHandle>, turn_id: Option<Uuid>) -> Self {
        Self { session, turn_id }
    }

    /// Appends at once (not synced); subscribers see it immediately.
    pub fn emit(&self, payload: EventPayload) -> Result<()> {
        self.session.append_now(self.turn_id, payload).map(|_| ())
    }

    /// Appends and syncs at durability points (approval requests and resolutions).
    pub async fn emit_durable(&self, payload: EventPayload) -> Result<()> {
        self.session.append(self.turn_id, payload).await.map(|_| ())
    }

    pub fn session(&self) -> &Arc<SessionHandle> {
        &self.session
    }

    pub fn turn_id(&self) -> Option<Uuid> {
        self.turn_id
    }

    /// Records the connection attempts of the session's networked processes. They belong
    /// to the session, not to this sink's turn: the proxy serves every process of the
    /// session, and a process may outlive the turn that started it.
    pub fn connection_reporter(&self) -> ConnectionReporter {
        let session = self.session.clone();
        Arc::new(move |attempt| {
            let payload = EventPayload::NetworkConnectionAttempted(attempt);
            if let Err(e) = session.append_now(None, payload) {
                tracing::warn!(session = %session.id(), error = %e, "cannot record a connection attempt");
            }
        })
    }
}

impl std::fmt::Debug for EventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSink")
            .field("session", &self.session.id())
            .field("turn_id", &self.turn_id)
            .finish()
    }
}
