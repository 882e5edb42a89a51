//! The history a turn sends: the session's summary and earlier turns, windowed to the
//! model's context window, compacted first when they no longer fit (see
//! `runtime::memory`). A compaction that fails leaves the turn running on what fits,
//! newest turns first, with a non-fatal error event saying so.

use super::turn::{Progress, Turn, TurnFailure};
use crate::chat::ChatMessage;
use crate::events::{EventPayload, HistoryCompacted};
use crate::memory::compaction::{self, summarize, summary_limit, summary_message};
use crate::memory::estimate::{message_tokens, system_tokens, tools_tokens};
use crate::memory::window::{Plan, Selection, WindowBudget, fit_newest, plan};
use crate::provider::ToolSpec;
use crate::session::{HistorySummary, HistoryTurn, MEMORY_TURNS};

impl Turn {
    /// The prior messages every model call of this turn is sent, oldest first.
    pub(super) async fn windowed_history(
        &self,
        prompt: &str,
        tools: &[ToolSpec],
        progress: &mut Progress,
    ) -> Result<Vec<ChatMessage>, TurnFailure> {
        let history = &self.history;
        let fixed = system_tokens(&self.system_prompt)
            + tools_tokens(tools)
            + message_tokens(&ChatMessage::user(prompt));
        let budget = WindowBudget::for_model(&self.model, fixed).history();
        let summary_tokens = history.summary.as_ref().map(|s| s.tokens);
        let turn_tokens: Vec<u64> = history.turns.iter().map(|t| t.tokens).collect();
        let selection = match plan(summary_tokens, &turn_tokens, budget, MEMORY_TURNS) {
            Plan::Fits => Selection {
                summary: true,
                first_turn: 0,
            },
            Plan::Truncate(selection) => selection,
            Plan::Compact { first_kept } => {
                match self.compact(first_kept, budget, progress).await? {
                    Some(summary) => {
                        let kept = &history.turns[first_kept..];
                        let fit =
                            fit_newest(Some(summary.tokens), &turn_tokens[first_kept..], budget);
                        return Ok(assemble(
                            fit.summary.then_some(&summary),
                            &kept[fit.first_turn..],
                        ));
                    }
                    None => fit_newest(summary_tokens, &turn_tokens, budget),
                }
            }
        };
        let summary = history.summary.as_ref().filter(|_| selection.summary);
        Ok(assemble(summary, &history.turns[selection.first_turn..]))
    }

    /// Asks the model to summarize the summary and turns `..first_kept`; records the new
    /// summary as an event, or the failure as a non-fatal error.
    async fn compact(
        &self,
        first_kept: usize,
        budget: u64,
        progress: &mut Progress,
    ) -> Result<Option<HistorySummary>, TurnFailure> {
        self.budgets.check_session(progress)?;
        let history = &self.history;
        let older = &history.turns[..first_kept];
        let Some(through) = older.last().map(|t| t.turn_id) else {
            return Ok(None);
        };
        let summary_tokens = summary_limit(budget);
        let transcript: Vec<&[ChatMessage]> = older.iter().map(|t| t.messages.as_slice()).collect();
        let request = compaction::request(
            &self.model,
            history.summary.as_ref().map(|s| &*s.text),
            &transcript,
            summary_tokens,
            self.prior_model_calls + u64::from(progress.model_calls),
        );
        progress.model_calls += 1;
        let (summary, usage) = summarize(self.provider.as_ref(), request, summary_tokens).await;
        progress.usage += usage;
        let summary = match summary {
            Ok(text) => HistorySummary::new(&text, through),
            Err(e) => {
                self.emit(EventPayload::ErrorOccurred {
                    code: "history_compaction_failed".into(),
                    message: format!(
                        "the history no longer fits the model's context window and could not be compacted ({e}); the oldest turns are left out"
                    ),
                    fatal: false,
                })?;
                self.budgets.check_output(progress)?;
                return Ok(None);
            }
        };
        let tokens = |turns: &[HistoryTurn]| turns.iter().map(|t| t.tokens).sum::<u64>();
        self.emit(EventPayload::HistoryCompacted(HistoryCompacted {
            summary: summary.text.to_string(),
            through_turn_id: through,
            turns_compacted: u32::try_from(first_kept).unwrap_or(u32::MAX),
            tokens_before: history.summary.as_ref().map_or(0, |s| s.tokens)
                + tokens(&history.turns),
            tokens_after: summary.tokens + tokens(&history.turns[first_kept..]),
            usage,
        }))?;
        self.budgets.check_output(progress)?;
        Ok(Some(summary))
    }
}

/// The summary's message, then the turns' messages.
fn assemble(summary: Option<&HistorySummary>, turns: &[HistoryTurn]) -> Vec<ChatMessage> {
    summary
        .map(|s| summary_message(&s.text))
        .into_iter()
        .chain(turns.iter().flat_map(|t| t.messages.iter().cloned()))
        .collect()
}
