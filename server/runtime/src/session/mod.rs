//! Event-sourced sessions: the creation record, the append-only event log that is the
//! truth about everything that happened, and live subscriptions to it.

mod creation;
mod handle;
mod history;
mod journal;
mod log;
mod observer;
mod record;
mod remote;
mod seam;
mod sink;
mod store;
mod subscription;
mod summary;
mod turns;
mod unfinished;

pub use handle::{ClosedTurn, SessionHandle, TurnEndRef};
pub use history::{HistorySnapshot, HistorySummary, HistoryTurn, MEMORY_TURNS};
pub use observer::EventObserver;
pub use record::{
    BundlePin, ForkOrigin, InheritedRules, ParentLink, SessionInfo, SessionRecord, SessionState,
    SessionStats,
};
pub use remote::Remote as SharedStore;
pub use sink::EventSink;
pub use store::{QuarantinedSession, SessionStore};
pub use subscription::Subscription;
pub use turns::{LoggedDecision, LoggedEnd, LoggedTurn};

/// The log and file names, for the fuzzing harness that writes sessions by hand.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use log::EventLog;
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use record::{LOG_FILE, RECORD_FILE};

#[cfg(test)]
mod tests;
