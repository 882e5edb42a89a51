//! What the runtime learns from every session's log, without the session module knowing
//! what it is for (metrics, operator event hooks).

use std::sync::Arc;

use uuid::Uuid;

use super::handle::ClosedTurn;
use crate::events::Event;

/// Sees the events of every session of a store.
pub trait EventObserver: Send + Sync {
    /// An event was written to its log. Runs under the session's lock, for every event:
    /// it must be cheap (a counter), never block and never append.
    fn appended(&self, event: &Event);

    /// Whether [`EventObserver::published`] wants events; when not, publishing costs
    /// nothing more.
    fn follows_published(&self) -> bool;

    /// An event subscribers may now see (durable, at durability points). Called once per
    /// event, in sequence order within a session; must never block.
    fn published(&self, event: &Arc<Event>);

    /// `count` events of a session were published too far behind to be handed over
    /// (they left the in-memory ring first).
    fn missed(&self, count: u64);

    /// The end of a turn the log left open was recorded (a crash's, or one whose end could
    /// not be written): nothing runs it any more, and this is how it ended.
    fn turn_closed(&self, _session_id: Uuid, _turn: &ClosedTurn) {}
}
