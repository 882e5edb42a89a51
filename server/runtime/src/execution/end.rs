//! How a turn ended, decided in one place: the turn's own result, the cancel signal and
//! the wall-clock budget meet here, so nothing downstream has to guess from an empty error.

use super::{CancelSignal, TurnFailure};
use crate::events::TurnOutcome;

/// The end of one turn.
pub(crate) enum TurnEnd {
    /// It ran to its answer.
    Done,
    /// It failed: an error the log records, with its code.
    Failed(TurnFailure),
    /// Stopped by a request to cancel it: why, in words, and the record's machine-readable
    /// reason (empty when none was given).
    Cancelled(String, &'static str),
    /// Stopped by the server shutting down; the turn can be asked again.
    Interrupted(String),
}

impl TurnEnd {
    /// How the signal stopped the turn.
    pub fn stopped(signal: &CancelSignal) -> Self {
        match signal.reason() {
            (TurnOutcome::Interrupted, why) => Self::Interrupted(why),
            (_, why) => Self::Cancelled(why, signal.code()),
        }
    }

    /// A failure, unless the turn was being stopped: then whatever broke did so because it
    /// was stopped, and the stop is what happened.
    pub fn failed(failure: TurnFailure, signal: &CancelSignal) -> Self {
        if signal.token().is_cancelled() {
            Self::stopped(signal)
        } else {
            Self::Failed(failure)
        }
    }

    /// Whom a pending approval is closed for, when the turn was stopped.
    pub fn stopped_by(&self) -> Option<TurnOutcome> {
        match self {
            Self::Done | Self::Failed(_) => None,
            Self::Cancelled(..) => Some(TurnOutcome::Cancelled),
            Self::Interrupted(_) => Some(TurnOutcome::Interrupted),
        }
    }

    /// The turn record's outcome, error text and reason code.
    pub fn into_outcome(self) -> (TurnOutcome, String, &'static str) {
        match self {
            Self::Done => (TurnOutcome::Completed, String::new(), ""),
            Self::Failed(failure) => (TurnOutcome::Failed, failure.message, ""),
            Self::Cancelled(why, code) => (TurnOutcome::Cancelled, why, code),
            Self::Interrupted(why) => (TurnOutcome::Interrupted, why, ""),
        }
    }
}
