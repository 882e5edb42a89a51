//! Tables for the permission rules, decisions, approvals and hooks. The Bash splitter's
//! own table sits beside it (`bash_split/tests.rs`).

mod approvals;
mod decide;
mod display;
mod hooks;
mod rules;
