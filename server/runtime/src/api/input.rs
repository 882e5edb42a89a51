//! Input sent to a session while a turn may be running: steered into the running turn,
//! queued after it, or interrupting it (see `execution::inbox` for how steered input
//! reaches the turn). With no turn running, every mode starts one.

use std::sync::Arc;

use uuid::Uuid;

use super::OdysseyRuntime;
use super::executions::validate_prompt;
use crate::error::{Result, RuntimeError};
use crate::events::{EventPayload, INTERRUPTED_BY_INPUT, InputMode, TurnOutcome};
use crate::execution::{ExecutionRequest, ExecutionState, MAX_WAITING_INPUTS, Offered};
use crate::session::SessionHandle;

/// How long input sent to a turn another server runs waits to be seen in its log.
const STEER_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// How long a caller is told to wait when a turn has too much input waiting.
const INPUTS_WAITING_RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// Input for a session, and how it is to be taken.
#[derive(Clone, Debug)]
pub struct SessionInput {
    pub session_id: Uuid,
    /// Bounded like a turn's prompt.
    pub text: String,
    pub mode: InputMode,
}

/// What became of input sent with [`OdysseyRuntime::send_input`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputDisposition {
    /// It joined the running turn, before that turn's next model call.
    Steered,
    /// A new turn waits behind the session's running or queued turns.
    Queued,
    /// The running turn was stopped; the new turn runs next.
    Interrupted,
    /// Nothing was running or queued: the new turn starts (or waits for a free worker).
    Started,
}

/// Where input went, so a caller can follow it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InputReceipt {
    pub session_id: Uuid,
    pub disposition: InputDisposition,
    /// The turn the text is part of: the running one it steered, or the new one.
    pub execution_id: Uuid,
    /// The turn stopped for it ([`InputDisposition::Interrupted`] only).
    pub interrupted_execution_id: Option<Uuid>,
}

impl OdysseyRuntime {
    /// Gives a session input while a turn may be running.
    ///
    /// - [`InputMode::Steer`]: the text joins the running turn as a user message before
    ///   its next model call, recorded by a `user_input_added` event (durable when this
    ///   returns). A turn waiting for an approval takes it after the approval, before its
    ///   next model call; a turn whose model answered while the text waited asks the model
    ///   once more. When the turn has already taken its last model call, the text starts a
    ///   turn of its own instead, as in [`InputMode::Queue`]. At most
    ///   [`MAX_WAITING_INPUTS`] wait at once (then `ResourceExhausted`, `INPUTS_WAITING`).
    /// - [`InputMode::Queue`]: a new turn, as [`OdysseyRuntime::submit`] queues it.
    /// - [`InputMode::Interrupt`]: a new turn is queued ahead of the session's waiting
    ///   turns, then the running turn is stopped (its record: cancelled, reason
    ///   `interrupted_by_input`) and this returns once it has ended.
    pub async fn send_input(&self, input: SessionInput) -> Result<InputReceipt> {
        self.ensure_running()?;
        validate_prompt("text", &input.text)?;
        let session = self.inner.sessions.get(input.session_id).await?;
        let session_id = session.id();
        if input.mode == InputMode::Steer
            && let Some(execution_id) = self.steer(&session, &input.text, None).await?
        {
            return Ok(InputReceipt {
                session_id,
                disposition: InputDisposition::Steered,
                execution_id,
                interrupted_execution_id: None,
            });
        }
        if input.mode == InputMode::Steer
            && let Some(execution_id) = self.steer_elsewhere(&session, &input.text).await?
        {
            return Ok(InputReceipt {
                session_id,
                disposition: InputDisposition::Steered,
                execution_id,
                interrupted_execution_id: None,
            });
        }
        let interrupt = input.mode == InputMode::Interrupt;
        let request = ExecutionRequest {
            session_id,
            prompt: input.text,
            ..ExecutionRequest::default()
        };
        let (handle, placed) = self.enqueue(request, interrupt).await?;
        let mut receipt = InputReceipt {
            session_id,
            disposition: match placed.running {
                None if placed.ahead == 0 => InputDisposition::Started,
                _ => InputDisposition::Queued,
            },
            execution_id: handle.execution_id,
            interrupted_execution_id: None,
        };
        if let (true, Some(running)) = (interrupt, placed.running)
            && self.interrupt(running, handle.execution_id).await?
        {
            receipt.disposition = InputDisposition::Interrupted;
            receipt.interrupted_execution_id = Some(running);
        }
        Ok(receipt)
    }

    /// Adds `text` to the session's running turn (only if it is `only`, when given); the
    /// turn's id, or `None` when no such turn takes input now.
    async fn steer(
        &self,
        session: &Arc<SessionHandle>,
        text: &str,
        only: Option<Uuid>,
    ) -> Result<Option<Uuid>> {
        let Some(inbox) = self.inner.inputs.of_session(session.id()) else {
            return Ok(None);
        };
        let added = inbox.offer(text, |execution_id| {
            if only.is_some_and(|only| only != execution_id) {
                return Err(None);
            }
            let event = EventPayload::UserInputAdded {
                text: text.to_owned(),
                mode: InputMode::Steer,
            };
            session
                .append_now(Some(execution_id), event)
                .map(|_| execution_id)
                .map_err(Some)
        });
        let execution_id = match added {
            Offered::Closed | Offered::Recorded(Err(None)) => return Ok(None),
            Offered::Full => {
                return Err(RuntimeError::InputsWaiting {
                    waiting: MAX_WAITING_INPUTS,
                    retry_after: INPUTS_WAITING_RETRY,
                });
            }
            Offered::Recorded(Err(Some(e))) => return Err(e),
            Offered::Recorded(Ok(execution_id)) => execution_id,
        };
        // The caller is told only once the log keeps it.
        session.sync().await?;
        Ok(Some(execution_id))
    }

    /// Applies input another server was sent for turn `execution_id`, which this server
    /// runs: as [`Self::steer`], into that turn only.
    pub(super) async fn steer_turn(
        &self,
        session_id: Uuid,
        execution_id: Uuid,
        text: &str,
    ) -> Result<()> {
        let session = self.inner.sessions.get(session_id).await?;
        match self.steer(&session, text, Some(execution_id)).await? {
            Some(_) => Ok(()),
            None => Err(RuntimeError::FailedPrecondition(format!(
                "turn {execution_id} takes no more input"
            ))),
        }
    }

    /// Adds `text` to the session's turn another server sharing the store runs: it is
    /// sent there (see `signals.rs`), and taken when the session's log shows it recorded
    /// in that turn; `None` when the turn ends first, or no server runs a turn of the
    /// session (the text then starts a turn of its own, as here).
    async fn steer_elsewhere(
        &self,
        session: &Arc<SessionHandle>,
        text: &str,
    ) -> Result<Option<Uuid>> {
        let Some(signals) = self.inner.turn_signals.clone() else {
            return Ok(None);
        };
        self.inner.sessions.refresh(session).await?;
        let Some((turn, _, _)) = session.waiting_requests() else {
            return Ok(None);
        };
        if self.inner.executions.get(turn).is_some() {
            return Ok(None);
        }
        // Following the log before sending: the outcome cannot slip in between.
        let mut log = session.subscribe(session.last_sequence());
        let signal = crate::store::TurnSignal::Steer {
            session_id: session.id(),
            execution_id: turn,
            text: text.to_owned(),
        };
        if signals.send(signal).await?.is_none() {
            return Ok(None);
        }
        let outcome = tokio::time::timeout(STEER_WAIT, async {
            loop {
                let Ok(Some(batch)) = log.next_batch().await else {
                    return None;
                };
                for event in batch.iter().filter(|e| e.turn_id == Some(turn)) {
                    match &event.payload {
                        EventPayload::UserInputAdded {
                            text: added,
                            mode: InputMode::Steer,
                        } if added == text => return Some(true),
                        EventPayload::TurnCompleted(_) => return Some(false),
                        _ => {}
                    }
                }
            }
        })
        .await;
        match outcome {
            Ok(Some(true)) => Ok(Some(turn)),
            Ok(Some(false)) => Ok(None),
            Ok(None) => Err(RuntimeError::not_found("session", session.id().to_string())),
            Err(_) => Err(RuntimeError::FailedPrecondition(format!(
                "the server running turn {turn} did not take the input within {} s (a turn \
                 takes at most {MAX_WAITING_INPUTS} inputs waiting for its next model call); \
                 retry, or send the input in queue mode",
                STEER_WAIT.as_secs()
            ))),
        }
    }

    /// Stops the running turn for the input queued ahead of the others; whether it was
    /// this that stopped it (it may have ended on its own, or been cancelled, first).
    async fn interrupt(&self, running: Uuid, next: Uuid) -> Result<bool> {
        let why = format!("interrupted by new input (execution {next})");
        let Some(signal) = self.inner.executions.cancel_signal(running) else {
            return self.interrupt_elsewhere(running, &why).await;
        };
        signal.stop(TurnOutcome::Cancelled, why, INTERRUPTED_BY_INPUT);
        let ended = self.wait(running).await?;
        Ok(ended.state == ExecutionState::Cancelled && signal.code() == INTERRUPTED_BY_INPUT)
    }

    /// [`Self::interrupt`] for a turn another server sharing the store runs: it is sent
    /// the stop, and its end is read from the session's log (see `signals.rs`). Whether
    /// this stopped it: its end carries `why`, which names the new turn.
    async fn interrupt_elsewhere(&self, running: Uuid, why: &str) -> Result<bool> {
        if self.inner.turn_signals.is_none() {
            return Ok(false);
        }
        match self.stop_elsewhere(running, why, true).await {
            Ok(ended) => Ok(ended.state == ExecutionState::Cancelled && ended.error == why),
            // Ended and forgotten meanwhile: not by this.
            Err(RuntimeError::NotFound { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}
