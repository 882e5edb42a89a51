//! Running turns: the bounded queue, the worker slots, execution status, a turn from its
//! job to its record (`run`), how it ended (`end`), the ReAct loop of one turn, and the
//! input steered into a running turn (`inbox`).

pub mod arguments;
mod budget;
mod end;
mod gate;
mod history;
mod inbox;
mod long_term_memory;
mod queue;
mod run;
mod slot;
mod snapshot;
mod status;
mod subagent;
mod turn;

pub use status::{
    CancelSignal, ExecutionHandle, ExecutionRequest, ExecutionState, ExecutionStatus,
};

pub use budget::tokens_spent;
pub(crate) use budget::{TokenBudgets, ensure_session_budget};
pub(crate) use gate::Gate;
pub use inbox::MAX_WAITING_INPUTS;
pub(crate) use inbox::{Inbox, Inboxes, Offered};
pub(crate) use long_term_memory::TurnMemory;
pub(crate) use queue::Queue;
pub use queue::{Job, Placed};
pub(crate) use slot::WorkerSlot;
pub(crate) use status::ExecutionTable;
pub(crate) use subagent::Delegation;
pub(crate) use turn::{Progress, Turn, TurnFailure};
