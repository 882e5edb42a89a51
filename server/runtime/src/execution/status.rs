//! Execution handles and their status. Finished executions stay queryable for a bounded
//! number of later executions, so memory does not grow with the server's uptime.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::chat::TokenUsage;
use crate::events::TurnOutcome;
use crate::model::ModelSpec;

/// A turn to run.
#[derive(Clone, Debug, Default)]
pub struct ExecutionRequest {
    pub session_id: Uuid,
    pub prompt: String,
    /// Working directory for this turn, relative to the session workspace.
    pub cwd: Option<String>,
    /// Model for this turn instead of the session's.
    pub model: Option<ModelSpec>,
    pub metadata: BTreeMap<String, String>,
}

/// What `submit` returns at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExecutionHandle {
    pub execution_id: Uuid,
    pub session_id: Uuid,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecutionState {
    Queued,
    Running,
    WaitingApproval,
    Completed,
    Failed,
    Cancelled,
    Interrupted,
}

impl ExecutionState {
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Completed | Self::Failed | Self::Cancelled | Self::Interrupted
        )
    }

    pub fn from_outcome(outcome: TurnOutcome) -> Self {
        match outcome {
            TurnOutcome::Completed => Self::Completed,
            TurnOutcome::Failed => Self::Failed,
            TurnOutcome::Cancelled => Self::Cancelled,
            TurnOutcome::Interrupted => Self::Interrupted,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ExecutionStatus {
    pub execution_id: Uuid,
    pub session_id: Uuid,
    pub state: ExecutionState,
    pub response: String,
    pub error: String,
    pub usage: TokenUsage,
    pub first_sequence: u64,
    pub last_sequence: u64,
}

/// How to stop an execution, and why it was stopped.
#[derive(Default)]
pub struct CancelSignal {
    token: CancellationToken,
    why: OnceLock<Stop>,
}

/// Why an execution was asked to stop.
#[derive(Clone, Debug)]
struct Stop {
    outcome: TurnOutcome,
    why: String,
    /// The turn record's machine-readable reason, if any.
    code: &'static str,
}

impl CancelSignal {
    /// Asks the execution to stop; the first reason given wins.
    pub fn cancel(&self, outcome: TurnOutcome, why: impl Into<String>) {
        self.stop(outcome, why, "");
    }

    /// Like [`cancel`](Self::cancel), with the machine-readable reason its turn record
    /// carries (`interrupted_by_input`).
    pub fn stop(&self, outcome: TurnOutcome, why: impl Into<String>, code: &'static str) {
        let _ = self.why.set(Stop {
            outcome,
            why: why.into(),
            code,
        });
        self.token.cancel();
    }

    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    pub fn reason(&self) -> (TurnOutcome, String) {
        self.why
            .get()
            .map(|s| (s.outcome, s.why.clone()))
            .unwrap_or((TurnOutcome::Cancelled, "cancelled".into()))
    }

    /// The machine-readable reason given with the stop; empty when none was.
    pub fn code(&self) -> &'static str {
        self.why.get().map_or("", |s| s.code)
    }
}

pub(crate) struct Entry {
    pub status: watch::Sender<ExecutionStatus>,
    pub cancel: Arc<CancelSignal>,
}

/// Every execution the server knows: live ones, and the most recent finished ones.
pub(crate) struct ExecutionTable {
    inner: Mutex<Table>,
    keep_finished: usize,
}

struct Table {
    entries: HashMap<Uuid, Entry>,
    finished: VecDeque<Uuid>,
}

impl ExecutionTable {
    pub fn new(keep_finished: usize) -> Self {
        Self {
            inner: Mutex::new(Table {
                entries: HashMap::new(),
                finished: VecDeque::new(),
            }),
            keep_finished: keep_finished.max(1),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        crate::sync::lock(&self.inner)
    }

    /// Registers a new queued execution.
    pub fn insert(&self, execution_id: Uuid, session_id: Uuid) -> Arc<CancelSignal> {
        let (status, _) = watch::channel(ExecutionStatus {
            execution_id,
            session_id,
            state: ExecutionState::Queued,
            response: String::new(),
            error: String::new(),
            usage: TokenUsage::default(),
            first_sequence: 0,
            last_sequence: 0,
        });
        let cancel = Arc::new(CancelSignal::default());
        self.lock().entries.insert(
            execution_id,
            Entry {
                status,
                cancel: cancel.clone(),
            },
        );
        cancel
    }

    /// Drops an execution that never made it into the queue.
    pub fn forget(&self, execution_id: Uuid) {
        self.lock().entries.remove(&execution_id);
    }

    pub fn get(&self, execution_id: Uuid) -> Option<ExecutionStatus> {
        self.lock()
            .entries
            .get(&execution_id)
            .map(|e| e.status.borrow().clone())
    }

    pub fn cancel_signal(&self, execution_id: Uuid) -> Option<Arc<CancelSignal>> {
        self.lock()
            .entries
            .get(&execution_id)
            .map(|e| e.cancel.clone())
    }

    /// A receiver that sees every status change of the execution.
    pub fn watch(&self, execution_id: Uuid) -> Option<watch::Receiver<ExecutionStatus>> {
        self.lock()
            .entries
            .get(&execution_id)
            .map(|e| e.status.subscribe())
    }

    /// Changes a status; a terminal one also ages the oldest finished entries out.
    pub fn update(&self, execution_id: Uuid, change: impl FnOnce(&mut ExecutionStatus)) {
        let mut table = self.lock();
        let Some(entry) = table.entries.get(&execution_id) else {
            return;
        };
        let mut terminal = false;
        entry.status.send_modify(|s| {
            let was_terminal = s.state.is_terminal();
            change(s);
            terminal = !was_terminal && s.state.is_terminal();
        });
        if terminal {
            table.finished.push_back(execution_id);
            while table.finished.len() > self.keep_finished {
                if let Some(old) = table.finished.pop_front() {
                    table.entries.remove(&old);
                }
            }
        }
    }

    /// Records how a turn ended that no worker ran to its end (a crash left it open in its
    /// session's log): replaces what the table knew of it, or adds it as finished.
    pub fn record_closed(&self, status: ExecutionStatus) {
        let execution_id = status.execution_id;
        if self.lock().entries.contains_key(&execution_id) {
            self.update(execution_id, |s| *s = status);
            return;
        }
        let (sender, _) = watch::channel(ExecutionStatus {
            state: ExecutionState::Queued,
            ..status.clone()
        });
        self.lock().entries.insert(
            execution_id,
            Entry {
                status: sender,
                cancel: Arc::new(CancelSignal::default()),
            },
        );
        self.update(execution_id, |s| *s = status);
    }

    /// Live (not finished) executions of a session.
    pub fn live_of_session(&self, session_id: Uuid) -> Vec<Uuid> {
        self.lock()
            .entries
            .iter()
            .filter(|(_, e)| {
                let s = e.status.borrow();
                s.session_id == session_id && !s.state.is_terminal()
            })
            .map(|(id, _)| *id)
            .collect()
    }

    /// Cancel signals of every execution not finished yet.
    pub fn live_signals(&self) -> Vec<(Uuid, Arc<CancelSignal>)> {
        self.lock()
            .entries
            .iter()
            .filter(|(_, e)| !e.status.borrow().state.is_terminal())
            .map(|(id, e)| (*id, e.cancel.clone()))
            .collect()
    }

    /// Counts of queued and running executions.
    pub fn counts(&self) -> (usize, usize) {
        let table = self.lock();
        let mut queued = 0;
        let mut running = 0;
        for entry in table.entries.values() {
            match entry.status.borrow().state {
                ExecutionState::Queued => queued += 1,
                ExecutionState::Running | ExecutionState::WaitingApproval => running += 1,
                _ => {}
            }
        }
        (queued, running)
    }
}
