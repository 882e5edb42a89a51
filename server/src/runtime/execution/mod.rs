//! Running turns: the bounded queue, the worker slots, execution status, and the ReAct
//! loop of one turn.

mod gate;
mod queue;
mod slot;
mod status;
mod turn;

pub use status::{
    CancelSignal, ExecutionHandle, ExecutionRequest, ExecutionState, ExecutionStatus,
};

pub(crate) use gate::Gate;
pub(crate) use queue::{Job, PushError, Queue};
pub(crate) use slot::WorkerSlot;
pub(crate) use status::ExecutionTable;
pub(crate) use turn::{Progress, Turn, TurnFailure};
