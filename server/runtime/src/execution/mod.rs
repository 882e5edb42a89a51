//! Running turns: the bounded queue, the worker slots, execution status, a turn from its
//! job to its record (`run`), how it ended (`end`), and the ReAct loop of one turn.

pub mod arguments;
mod budget;
mod end;
mod gate;
mod history;
mod long_term_memory;
mod queue;
mod run;
mod slot;
mod status;
mod subagent;
mod turn;

pub use status::{
    CancelSignal, ExecutionHandle, ExecutionRequest, ExecutionState, ExecutionStatus,
};

pub use budget::tokens_spent;
pub(crate) use budget::{TokenBudgets, ensure_session_budget};
pub(crate) use gate::Gate;
pub(crate) use long_term_memory::TurnMemory;
pub(crate) use queue::{Job, PushError, Queue};
pub(crate) use slot::WorkerSlot;
pub(crate) use status::ExecutionTable;
pub(crate) use subagent::Delegation;
pub(crate) use turn::{Progress, Turn, TurnFailure};
