//! Input steered into a running turn. Each running turn has an inbox, open from its start
//! until it ends; the turn takes what is waiting before each model call. Offering input
//! and closing the inbox share one lock, so input either joins the turn (and its event is
//! in the log before the turn's end) or finds the inbox closed and is given a turn of its
//! own: it never falls between the two.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use uuid::Uuid;

/// How many inputs may wait for a turn's next model call. Each is at most a prompt's size,
/// so a turn waiting for an approval holds a bounded amount, however often it is steered.
pub const MAX_WAITING_INPUTS: usize = 16;

/// What became of input offered to a turn.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Offered<T, E> {
    /// The turn takes no more input (it is ending).
    Closed,
    /// [`MAX_WAITING_INPUTS`] already wait.
    Full,
    /// Recorded (or not, if recording failed) and, when recorded, added.
    Recorded(Result<T, E>),
}

/// The inbox of one running turn.
pub(crate) struct Inbox {
    execution_id: Uuid,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    closed: bool,
    pending: Vec<String>,
}

impl Inbox {
    fn new(execution_id: Uuid) -> Self {
        Self {
            execution_id,
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }

    /// Adds `text` for the turn's next model call, calling `record` first (under the
    /// lock, so what it records precedes the turn's end). Nothing is added when the turn
    /// takes no more input, when too much waits already, or when `record` fails.
    pub fn offer<T, E>(
        &self,
        text: &str,
        record: impl FnOnce(Uuid) -> Result<T, E>,
    ) -> Offered<T, E> {
        let mut state = self.lock();
        if state.closed {
            return Offered::Closed;
        }
        if state.pending.len() >= MAX_WAITING_INPUTS {
            return Offered::Full;
        }
        let recorded = record(self.execution_id);
        if recorded.is_ok() {
            state.pending.push(text.to_owned());
        }
        Offered::Recorded(recorded)
    }

    /// Everything waiting, oldest first.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut self.lock().pending)
    }

    /// Closes the inbox if nothing waits in it; `false` when input arrived (the turn
    /// takes it with one more model call instead of ending).
    pub fn close_if_empty(&self) -> bool {
        let mut state = self.lock();
        if state.pending.is_empty() {
            state.closed = true;
        }
        state.closed
    }

    /// Closes the inbox and returns what no model call took.
    fn close(&self) -> Vec<String> {
        let mut state = self.lock();
        state.closed = true;
        std::mem::take(&mut state.pending)
    }
}

/// The inboxes of the running turns, by session (one turn runs at a time per session).
#[derive(Default)]
pub(crate) struct Inboxes {
    running: Mutex<HashMap<Uuid, Arc<Inbox>>>,
}

impl Inboxes {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, Arc<Inbox>>> {
        crate::sync::lock(&self.running)
    }

    /// Opens the inbox of the turn `execution_id`, now running in `session_id`.
    pub fn open(&self, session_id: Uuid, execution_id: Uuid) -> Arc<Inbox> {
        let inbox = Arc::new(Inbox::new(execution_id));
        self.lock().insert(session_id, inbox.clone());
        inbox
    }

    /// The inbox of the session's running turn, if it has one open.
    pub fn of_session(&self, session_id: Uuid) -> Option<Arc<Inbox>> {
        self.lock().get(&session_id).cloned()
    }

    /// Closes the turn's inbox and returns the input no model call took.
    pub fn close(&self, session_id: Uuid, execution_id: Uuid) -> Vec<String> {
        let inbox = {
            let mut running = self.lock();
            match running.get(&session_id) {
                Some(inbox) if inbox.execution_id == execution_id => running.remove(&session_id),
                _ => None,
            }
        };
        inbox.map(|inbox| inbox.close()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer(inbox: &Inbox, text: &str) -> Option<Uuid> {
        match inbox.offer(text, Ok::<_, ()>) {
            Offered::Recorded(Ok(id)) => Some(id),
            Offered::Closed => None,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn input_offered_before_the_close_is_taken_and_after_it_is_refused() {
        let inboxes = Inboxes::default();
        let (session, turn) = (Uuid::new_v4(), Uuid::new_v4());
        let inbox = inboxes.open(session, turn);
        assert_eq!(offer(&inbox, "first"), Some(turn));
        assert_eq!(inbox.take(), ["first"]);
        assert_eq!(offer(&inbox, "second"), Some(turn));
        // The turn's answer came while "second" waited: it must make another call.
        assert!(!inbox.close_if_empty());
        assert_eq!(inbox.take(), ["second"]);
        assert!(inbox.close_if_empty());
        assert_eq!(offer(&inbox, "late"), None);
        assert!(inbox.take().is_empty());
    }

    #[test]
    fn closing_hands_back_what_was_never_taken_and_forgets_the_turn() {
        let inboxes = Inboxes::default();
        let (session, turn) = (Uuid::new_v4(), Uuid::new_v4());
        let inbox = inboxes.open(session, turn);
        assert!(offer(&inbox, "pending").is_some());
        // Another turn's id closes nothing.
        assert!(inboxes.close(session, Uuid::new_v4()).is_empty());
        assert!(inboxes.of_session(session).is_some());
        assert_eq!(inboxes.close(session, turn), ["pending"]);
        assert!(inboxes.of_session(session).is_none());
        assert_eq!(offer(&inbox, "late"), None);
    }

    #[test]
    fn input_whose_record_fails_is_not_added() {
        let inbox = Inbox::new(Uuid::new_v4());
        assert_eq!(
            inbox.offer("x", |_| Err::<(), _>("disk full")),
            Offered::Recorded(Err("disk full"))
        );
        assert!(inbox.take().is_empty());
    }

    #[test]
    fn a_turn_holds_a_bounded_number_of_waiting_inputs() {
        let inbox = Inbox::new(Uuid::new_v4());
        for i in 0..MAX_WAITING_INPUTS {
            assert!(offer(&inbox, &i.to_string()).is_some());
        }
        let mut recorded = false;
        let full = inbox.offer("one more", |_| {
            recorded = true;
            Ok::<_, ()>(())
        });
        assert_eq!(full, Offered::Full);
        assert!(!recorded, "nothing is recorded for refused input");
        assert_eq!(inbox.take().len(), MAX_WAITING_INPUTS);
        assert!(offer(&inbox, "room again").is_some());
    }
}
