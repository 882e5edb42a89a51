//! Event-sourced sessions: the creation record, the append-only event log that is the
//! truth about everything that happened, and live subscriptions to it.

mod handle;
mod history;
mod journal;
mod log;
mod record;
mod sink;
mod store;

pub use handle::{SessionHandle, Subscription};
pub use history::{HistorySnapshot, HistorySummary, HistoryTurn, MEMORY_TURNS};
pub use record::{BundlePin, SessionInfo, SessionRecord, SessionStats};
pub use sink::EventSink;
pub use store::{QuarantinedSession, SessionStore};

#[cfg(test)]
mod tests;
