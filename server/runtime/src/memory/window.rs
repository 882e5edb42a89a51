//! The sliding window: which part of a session's history the next model call is sent.
//!
//! The history is a summary (when older turns were compacted) followed by whole turns,
//! oldest first. A turn is the unit of the window: it starts with the user's prompt and
//! holds every assistant message with its tool calls and every tool result, so cutting
//! only between turns can never separate a tool call from its result (the providers
//! refuse a request where they are apart).
//!
//! The budget is the model's context window minus a safety margin (for the estimate's
//! error), minus room for the answer, minus what every call sends besides history: the
//! system prompt, the tool definitions and the new prompt.
//!
//! Decisions are pure functions of token counts, so they are tested without a model.

use crate::chat::{ChatMessage, Role};
use crate::model::ModelSpec;
use crate::provider::context_window::context_window;

/// Share of the window, in percent, kept free for the estimate's error.
pub const SAFETY_MARGIN_PERCENT: u64 = 10;

/// Room kept for the answer when the model config sets no `max_tokens`, at most (a quarter
/// of the window for small windows).
pub const DEFAULT_OUTPUT_RESERVE: u64 = 8_192;

/// What one turn's history may spend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowBudget {
    pub context_window: u64,
    /// Tokens kept for the model's answer.
    pub output_reserve: u64,
    /// Tokens every call sends besides history: system prompt, tools, the new prompt.
    pub fixed: u64,
}

impl WindowBudget {
    /// The budget of a turn on `model` whose calls send `fixed` tokens besides history.
    pub fn for_model(model: &ModelSpec, fixed: u64) -> Self {
        let context_window = context_window(model);
        Self {
            context_window,
            output_reserve: output_reserve(model, context_window),
            fixed,
        }
    }

    /// Tokens the prior history may take.
    pub fn history(&self) -> u64 {
        let margin = self.context_window * SAFETY_MARGIN_PERCENT / 100;
        self.context_window
            .saturating_sub(margin)
            .saturating_sub(self.output_reserve)
            .saturating_sub(self.fixed)
    }
}

/// The model config's `max_tokens` (at most half the window), else the default reserve
/// (at most a quarter of the window).
pub fn output_reserve(model: &ModelSpec, context_window: u64) -> u64 {
    match model
        .config_value("max_tokens")
        .and_then(serde_json::Value::as_u64)
    {
        Some(max_tokens) => max_tokens.min(context_window / 2),
        None => DEFAULT_OUTPUT_RESERVE.min(context_window / 4),
    }
}

/// The part of the history a call is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Selection {
    /// Whether the summary is sent (false when there is none).
    pub summary: bool,
    /// Index of the first turn sent; every later turn is sent too.
    pub first_turn: usize,
}

/// What to do with a turn's history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Summary and every turn fit.
    Fits,
    /// Summarize the summary and turns `..first_kept` into a new summary; keep the rest.
    Compact { first_kept: usize },
    /// Nothing older can be summarized (only the newest turns or the summary overflow):
    /// send what fits.
    Truncate(Selection),
}

/// Decides between sending everything, compacting and truncating. `summary` and `turns`
/// are token counts; `max_turns` is how many turns the session keeps unsummarized: at
/// that count the history is compacted even when it fits, so that no turn ever leaves
/// the history without being summarized.
pub fn plan(summary: Option<u64>, turns: &[u64], budget: u64, max_turns: usize) -> Plan {
    let total = summary.unwrap_or(0) + turns.iter().sum::<u64>();
    let full = turns.len() >= max_turns.max(2);
    if total <= budget && !full {
        return Plan::Fits;
    }
    // Keep the newest turns that take at most half the budget (room for the summary and
    // for the turns to come, so the next turns do not compact again at once).
    let mut first_kept = turns.len();
    let mut kept = 0;
    while first_kept > 0 && kept + turns[first_kept - 1] <= budget / 2 {
        kept += turns[first_kept - 1];
        first_kept -= 1;
    }
    // The newest turn is kept whole when it leaves a quarter of the budget for the
    // summary: what just happened matters most, word for word.
    if first_kept == turns.len() && turns.last().is_some_and(|t| *t <= budget / 4 * 3) {
        first_kept -= 1;
    }
    if full {
        first_kept = first_kept.max(turns.len() - max_turns.max(2) / 2);
    }
    if first_kept == 0 {
        return Plan::Truncate(fit_newest(summary, turns, budget));
    }
    Plan::Compact { first_kept }
}

/// The summary if it fits, then as many of the newest turns as fit in what is left.
pub fn fit_newest(summary: Option<u64>, turns: &[u64], budget: u64) -> Selection {
    let summary_fits = summary.is_some_and(|s| s <= budget);
    let mut left = budget
        - if summary_fits {
            summary.unwrap_or(0)
        } else {
            0
        };
    let mut first_turn = turns.len();
    while first_turn > 0 && turns[first_turn - 1] <= left {
        left -= turns[first_turn - 1];
        first_turn -= 1;
    }
    Selection {
        summary: summary_fits,
        first_turn,
    }
}

/// Whether every tool call in `messages` has its result and every result its call, in
/// order: what a window must preserve.
pub fn is_paired(messages: &[ChatMessage]) -> bool {
    let mut open: Vec<&str> = Vec::new();
    for message in messages {
        match message.role {
            Role::Tool => {
                let Some(id) = message.tool_call_id.as_deref() else {
                    return false;
                };
                let Some(at) = open.iter().position(|o| *o == id) else {
                    return false;
                };
                open.remove(at);
            }
            _ if !open.is_empty() => return false,
            Role::Assistant => open.extend(message.tool_calls.iter().map(|c| c.id.as_str())),
            _ => {}
        }
    }
    open.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::ToolCall;
    use crate::memory::estimate::messages_tokens;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "Read".into(),
            arguments: r#"{"path":"a"}"#.into(),
        }
    }

    /// A turn: the prompt, `rounds` assistant messages each calling `calls` tools with
    /// their results, then the answer.
    fn turn(n: usize, rounds: usize, calls: usize, body: usize) -> Vec<ChatMessage> {
        let mut messages = vec![ChatMessage::user(format!("prompt {n}"))];
        for r in 0..rounds {
            let ids: Vec<String> = (0..calls).map(|c| format!("t{n}r{r}c{c}")).collect();
            messages.push(ChatMessage::assistant(
                "looking",
                ids.iter().map(|id| call(id)).collect(),
            ));
            for id in &ids {
                messages.push(ChatMessage::tool_result(
                    id.clone(),
                    "y".repeat(body),
                    false,
                ));
            }
        }
        messages.push(ChatMessage::assistant(format!("answer {n}"), Vec::new()));
        messages
    }

    #[test]
    fn the_window_never_splits_a_tool_call_from_its_result() {
        let turns: Vec<Vec<ChatMessage>> = (0..12)
            .map(|n| turn(n, n % 4, 1 + n % 3, 10 + 37 * n))
            .collect();
        let tokens: Vec<u64> = turns.iter().map(|t| messages_tokens(t)).collect();
        for turn in &turns {
            assert!(is_paired(turn));
        }
        let total: u64 = tokens.iter().sum();
        for budget in 0..=total + 10 {
            for summary in [None, Some(40)] {
                // The selection, and the tokens of the summary it may send (a new summary
                // of 30 tokens after a compaction).
                let (selection, summary_sent) = match plan(summary, &tokens, budget, 64) {
                    Plan::Fits => (
                        Selection {
                            summary: summary.is_some(),
                            first_turn: 0,
                        },
                        summary.unwrap_or(0),
                    ),
                    Plan::Truncate(selection) => (selection, summary.unwrap_or(0)),
                    Plan::Compact { first_kept } => {
                        let s = fit_newest(Some(30), &tokens[first_kept..], budget);
                        let selection = Selection {
                            first_turn: s.first_turn + first_kept,
                            ..s
                        };
                        (selection, 30)
                    }
                };
                let sent: Vec<ChatMessage> = turns[selection.first_turn..]
                    .iter()
                    .flatten()
                    .cloned()
                    .collect();
                assert!(is_paired(&sent), "budget {budget}: {selection:?}");
                let sent_tokens: u64 = tokens[selection.first_turn..].iter().sum::<u64>()
                    + if selection.summary { summary_sent } else { 0 };
                let fits_all = summary.unwrap_or(0) + total <= budget;
                assert!(
                    fits_all || sent_tokens <= budget,
                    "budget {budget}: sent {sent_tokens} tokens"
                );
            }
        }
    }

    #[test]
    fn pairing_is_detected() {
        let t = turn(1, 1, 2, 3);
        assert!(is_paired(&t));
        // A result without its call, a call without its result, a message in between.
        assert!(!is_paired(&t[2..]));
        assert!(!is_paired(&t[..3]));
        let mut between = t.clone();
        between.insert(3, ChatMessage::user("interrupting"));
        assert!(!is_paired(&between));
    }

    #[test]
    fn everything_is_sent_while_it_fits() {
        assert_eq!(plan(None, &[10, 20, 30], 60, 64), Plan::Fits);
        assert_eq!(plan(Some(5), &[10, 20, 30], 65, 64), Plan::Fits);
        assert_eq!(plan(None, &[], 0, 64), Plan::Fits);
    }

    #[test]
    fn overflow_compacts_the_older_turns_and_keeps_half_the_budget_of_new_ones() {
        // Budget 100: keep the newest turns within 50 tokens (30 + 20), compact the rest.
        assert_eq!(
            plan(None, &[40, 40, 30, 20], 100, 64),
            Plan::Compact { first_kept: 2 }
        );
        // The newest turn alone is over half the budget: it is still kept, every older
        // turn is compacted.
        assert_eq!(
            plan(Some(10), &[40, 40, 70], 100, 64),
            Plan::Compact { first_kept: 2 }
        );
        // A newest turn too big to send is summarized too.
        assert_eq!(
            plan(None, &[10, 500], 100, 64),
            Plan::Compact { first_kept: 2 }
        );
        assert_eq!(plan(None, &[500], 100, 64), Plan::Compact { first_kept: 1 });
    }

    #[test]
    fn with_no_turn_to_compact_the_summary_is_left_out() {
        // The turns take less than half the budget; only the summary overflows.
        assert_eq!(
            plan(Some(90), &[10, 10], 45, 64),
            Plan::Truncate(Selection {
                summary: false,
                first_turn: 0
            })
        );
    }

    #[test]
    fn a_full_history_compacts_even_when_it_fits() {
        assert_eq!(
            plan(None, &[1; 8], 1000, 8),
            Plan::Compact { first_kept: 4 }
        );
        assert_eq!(plan(None, &[1; 7], 1000, 8), Plan::Fits);
    }

    #[test]
    fn truncation_keeps_the_summary_then_the_newest_turns() {
        assert_eq!(
            fit_newest(Some(30), &[40, 30, 20], 80),
            Selection {
                summary: true,
                first_turn: 1
            }
        );
        assert_eq!(
            fit_newest(Some(100), &[40, 30, 20], 80),
            Selection {
                summary: false,
                first_turn: 1
            }
        );
        assert_eq!(
            fit_newest(None, &[40, 30, 200], 80),
            Selection {
                summary: false,
                first_turn: 3
            }
        );
    }

    #[test]
    fn the_budget_leaves_room_for_margin_answer_and_fixed_parts() {
        let mut model = ModelSpec::new("replay", "main");
        model.config = serde_json::json!({ "context_window": 1000 })
            .as_object()
            .cloned();
        let budget = WindowBudget::for_model(&model, 50);
        assert_eq!(budget.context_window, 1000);
        assert_eq!(budget.output_reserve, 250, "a quarter of a small window");
        assert_eq!(budget.history(), 1000 - 100 - 250 - 50);
        model.config = serde_json::json!({ "context_window": 1000, "max_tokens": 100 })
            .as_object()
            .cloned();
        assert_eq!(
            WindowBudget::for_model(&model, 50).history(),
            1000 - 100 - 100 - 50
        );
        let huge = WindowBudget {
            fixed: 5000,
            ..WindowBudget::for_model(&model, 0)
        };
        assert_eq!(huge.history(), 0, "never negative");
        assert_eq!(
            WindowBudget::for_model(&ModelSpec::new("openai", "gpt-4o"), 0).output_reserve,
            DEFAULT_OUTPUT_RESERVE
        );
    }
}
