//! Whether a tool call may run: the agent's permission rules, the session's approval
//! policy, operator hooks, and the store of calls waiting for a human.
//!
//! This is one of the two independent settings of a session (the other is the sandbox
//! mode): the sandbox bounds what a process can reach, these decide whether a call runs at
//! all. The turn loop asks [`PermissionRules::decide`], tightens the answer with
//! [`apply_hooks`], and on `Ask` files a [`PendingApproval`] with the [`ApprovalStore`] and
//! waits for its resolution. Every request carries its [display form](display_call): what
//! a person is shown before deciding.

pub mod approvals;
pub mod bash_split;
pub mod decide;
pub mod display;
pub mod error;
pub mod hooks;
pub mod patterns;
pub mod rules;

#[cfg(test)]
mod tests;

pub use approvals::input::{InputAnswer, InputError, InputRequest, check_answer};
pub use approvals::{
    Approval, ApprovalChange, ApprovalStore, ApprovalUpdate, ApprovalWaiter, ApprovalWatch,
    DEFAULT_APPROVAL_TIMEOUT, PendingApproval, RequestsElsewhere, Resolution,
};
pub use bash_split::{SplitCommand, split_command};
pub use decide::{Decision, always_asks};
pub use display::{CallDisplay, display_call};
pub use error::{ApprovalError, RuleError};
pub use hooks::{HookConfig, apply_hooks};
pub use rules::{BASH_TOOL, PermissionRules, Rule, RuleAction};
