//! Token budgets: the output tokens one turn may produce, and the tokens a session may
//! spend over its life. (Model calls per turn and wall time are the turn loop's and the
//! executor's.)
//!
//! The session budget is checked before every model call, the output budget after every
//! model call. So a turn's final answer may take a session past its budget, and the next
//! turn is refused; a turn that still needs the model once the budget is spent ends with
//! an error instead of calling it.

use super::turn::{Progress, TurnFailure};
use crate::chat::TokenUsage;
use crate::error::{Result, RuntimeError};
use crate::session::{SessionRecord, SessionStats};

/// What a session has spent: the providers' totals, or input plus output where a
/// provider reports no total.
pub fn tokens_spent(usage: &TokenUsage) -> u64 {
    usage
        .total_tokens
        .max(usage.input_tokens + usage.output_tokens)
}

/// Refuses a turn on a session that has spent its budget.
pub(crate) fn ensure_session_budget(record: &SessionRecord, stats: &SessionStats) -> Result<()> {
    match record.token_budget {
        Some(budget) if tokens_spent(&stats.usage) >= budget => {
            Err(RuntimeError::TokenBudgetExhausted {
                session_id: record.id.to_string(),
                budget,
                spent: tokens_spent(&stats.usage),
            })
        }
        _ => Ok(()),
    }
}

/// The token budgets one turn runs under.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TokenBudgets {
    /// Output tokens the turn may produce over all its model calls.
    pub max_output_tokens: Option<u64>,
    /// The session's lifetime budget, if it has one.
    pub session_budget: Option<u64>,
    /// What the session spent before this turn.
    pub session_spent: u64,
}

impl TokenBudgets {
    /// After a model call: the turn's output must be within its budget.
    pub fn check_output(&self, progress: &Progress) -> std::result::Result<(), TurnFailure> {
        match self.max_output_tokens {
            Some(max) if progress.usage.output_tokens > max => Err(TurnFailure {
                code: "output_token_budget_exceeded".into(),
                message: format!(
                    "the turn produced {} output tokens, over its budget of {max}",
                    progress.usage.output_tokens
                ),
            }),
            _ => Ok(()),
        }
    }

    /// What the session has left of its budget with this turn's usage so far; `None`:
    /// it has no budget.
    pub fn left(&self, progress: &Progress) -> Option<u64> {
        let spent = self.session_spent + tokens_spent(&progress.usage);
        self.session_budget
            .map(|budget| budget.saturating_sub(spent))
    }

    /// Before a model call: the session must have tokens left.
    pub fn check_session(&self, progress: &Progress) -> std::result::Result<(), TurnFailure> {
        let spent = self.session_spent + tokens_spent(&progress.usage);
        match self.session_budget {
            Some(budget) if spent >= budget => Err(TurnFailure {
                code: "session_token_budget_exhausted".into(),
                message: format!(
                    "the session has spent its token budget ({spent} of {budget} tokens)"
                ),
            }),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, output: u64, total: u64) -> TokenUsage {
        TokenUsage {
            input_tokens: input,
            output_tokens: output,
            total_tokens: total,
            ..TokenUsage::default()
        }
    }

    fn progress(input: u64, output: u64) -> Progress {
        Progress {
            usage: usage(input, output, 0),
            ..Progress::default()
        }
    }

    #[test]
    fn spent_tokens_prefer_the_providers_total() {
        assert_eq!(tokens_spent(&usage(10, 5, 0)), 15);
        assert_eq!(tokens_spent(&usage(10, 5, 20)), 20);
    }

    #[test]
    fn the_output_budget_ends_a_turn_past_it() {
        let budgets = TokenBudgets {
            max_output_tokens: Some(100),
            ..TokenBudgets::default()
        };
        assert!(budgets.check_output(&progress(1_000, 100)).is_ok());
        let failure = budgets.check_output(&progress(0, 101)).expect_err("over");
        assert_eq!(failure.code, "output_token_budget_exceeded");
        assert!(
            failure
                .message
                .contains("101 output tokens, over its budget of 100")
        );
        assert!(
            TokenBudgets::default()
                .check_output(&progress(0, u64::MAX / 2))
                .is_ok()
        );
    }

    #[test]
    fn the_session_budget_counts_earlier_turns_and_this_one() {
        let budgets = TokenBudgets {
            session_budget: Some(100),
            session_spent: 60,
            ..TokenBudgets::default()
        };
        assert!(budgets.check_session(&progress(30, 9)).is_ok());
        let failure = budgets.check_session(&progress(30, 10)).expect_err("spent");
        assert_eq!(failure.code, "session_token_budget_exhausted");
        assert!(
            failure.message.contains("(100 of 100 tokens)"),
            "{}",
            failure.message
        );
    }
}
