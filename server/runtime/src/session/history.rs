//! A session's conversation memory, held while the session is open and rebuilt from its
//! log when it is opened: the latest compaction summary, the completed (and interrupted,
//! by the server or by input) turns after it, and the long-term memory section recalled
//! at its first turn.
//!
//! Each turn's token estimate is computed once, when the turn is added, so sizing a
//! turn's window costs one addition per remembered turn.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::Path;
use std::sync::Arc;

use uuid::Uuid;

use crate::chat::ChatMessage;
use crate::events::{Event, EventPayload, INTERRUPTED_BY_INPUT, TurnOutcome};
use crate::memory::compaction::summary_message;
use crate::memory::estimate::{message_tokens, messages_tokens};
use crate::memory::interrupted;

use super::log::{LogError, scan_from};

/// How many completed turns after the summary are kept. Reaching it makes the next turn
/// compact the older half (see `memory::window::plan`), so a turn leaves the history only
/// through a summary unless that compaction fails.
pub const MEMORY_TURNS: usize = 64;

/// Images the remembered turns keep, the newest turns' first: every later model call sends
/// them again, so together with a running turn's own (`tools::images`) a request stays
/// well within what providers take (Gemini: 20 MB inline, Anthropic: 100 images). Older
/// turns keep only the text describing their images.
pub const HISTORY_IMAGE_BYTES: usize = crate::tools::images::MAX_TURN_IMAGE_BYTES;
pub const HISTORY_IMAGES: usize = crate::tools::images::MAX_TURN_IMAGES;

/// One completed turn's messages (an interrupted turn's as far as it got, with a note).
#[derive(Clone, Debug)]
pub struct HistoryTurn {
    pub turn_id: Uuid,
    pub messages: Arc<Vec<ChatMessage>>,
    /// Estimated tokens of the messages.
    pub tokens: u64,
}

/// The summary standing in for the turns up to `through_turn_id`.
#[derive(Clone, Debug)]
pub struct HistorySummary {
    pub text: Arc<str>,
    pub through_turn_id: Uuid,
    /// Estimated tokens of the summary as it is sent.
    pub tokens: u64,
}

impl HistorySummary {
    pub fn new(text: &str, through_turn_id: Uuid) -> Self {
        Self {
            tokens: message_tokens(&summary_message(text)),
            text: Arc::from(text),
            through_turn_id,
        }
    }
}

/// What a turn starts from.
#[derive(Clone, Debug, Default)]
pub struct HistorySnapshot {
    pub summary: Option<HistorySummary>,
    /// Oldest first.
    pub turns: Vec<HistoryTurn>,
    /// The system prompt's memory section, once recalled.
    pub memory_section: Option<Arc<str>>,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct History {
    summary: Option<HistorySummary>,
    turns: VecDeque<HistoryTurn>,
    memory_section: Option<Arc<str>>,
    /// The prompt of the turn running, for an interrupted turn whose record holds no
    /// messages (it stopped before its first step, or a crash closed it before they were
    /// recorded).
    prompt: Option<String>,
}

impl History {
    /// Folds one event of the log in; live appends and replay both come through here.
    pub fn observe(&mut self, event: &Event) {
        match &event.payload {
            EventPayload::TurnStarted(started) => self.prompt = Some(started.prompt.clone()),
            EventPayload::TurnCompleted(done) => {
                let prompt = self.prompt.take();
                let messages = match done.outcome {
                    TurnOutcome::Completed => done.messages.clone(),
                    TurnOutcome::Interrupted => {
                        interrupted::remembered(&done.messages, prompt.as_deref(), &done.error)
                    }
                    // Stopped for the input that runs next: that turn is sent what this
                    // one did, as for a turn the server interrupted.
                    TurnOutcome::Cancelled if done.reason == INTERRUPTED_BY_INPUT => {
                        interrupted::remembered(&done.messages, prompt.as_deref(), &done.error)
                    }
                    TurnOutcome::Failed | TurnOutcome::Cancelled => return,
                };
                if messages.is_empty() {
                    return;
                }
                if self.turns.len() == MEMORY_TURNS {
                    self.turns.pop_front();
                }
                self.turns.push_back(HistoryTurn {
                    turn_id: event.turn_id.unwrap_or_default(),
                    tokens: messages_tokens(&messages),
                    messages: Arc::new(messages),
                });
                self.forget_old_images();
            }
            EventPayload::HistoryCompacted(compacted) => {
                // The covered turns are gone already if the ring dropped them.
                if let Some(at) = self
                    .turns
                    .iter()
                    .position(|t| t.turn_id == compacted.through_turn_id)
                {
                    self.turns.drain(..=at);
                }
                self.summary = Some(HistorySummary::new(
                    &compacted.summary,
                    compacted.through_turn_id,
                ));
            }
            EventPayload::MemoryRecalled { section, .. } => {
                self.memory_section = Some(Arc::from(section.as_str()));
            }
            // What a rewind goes back to is read from the log (see `History::until`).
            _ => {}
        }
    }

    /// Drops the images of the older turns beyond [`HISTORY_IMAGE_BYTES`] and
    /// [`HISTORY_IMAGES`], counting from the newest turn; a turn keeps all its images or
    /// none.
    fn forget_old_images(&mut self) {
        let (mut count, mut bytes) = (0, 0);
        let mut full = false;
        for turn in self.turns.iter_mut().rev() {
            let images = turn.messages.iter().flat_map(|m| &m.images);
            let (n, b) = images.fold((0, 0), |(n, b), image| (n + 1, b + image.byte_len()));
            if n == 0 {
                continue;
            }
            if !full && count + n <= HISTORY_IMAGES && bytes + b <= HISTORY_IMAGE_BYTES {
                count += n;
                bytes += b;
                continue;
            }
            full = true;
            let mut messages = (*turn.messages).clone();
            for message in &mut messages {
                message.images.clear();
            }
            turn.tokens = messages_tokens(&messages);
            turn.messages = Arc::new(messages);
        }
    }

    /// The history as it stood once the event at `to_sequence` of the log at `log` was
    /// folded in, rewinds included: a `session_rewound` puts back the history of the
    /// sequence it names. Two reads of the log: the first finds the sequences rewinds go
    /// back to, the second keeps a copy of the history at each of them.
    pub fn until(log: &Path, to_sequence: u64) -> Result<Self, LogError> {
        let mut targets = HashSet::new();
        scan_from(log, 0, |event| {
            if event.sequence <= to_sequence
                && let EventPayload::SessionRewound(rewound) = &event.payload
            {
                targets.insert(rewound.to_sequence);
            }
        })?;
        let mut history = Self::default();
        let mut kept: HashMap<u64, Self> = HashMap::new();
        scan_from(log, 0, |event| {
            if event.sequence > to_sequence {
                return;
            }
            match &event.payload {
                EventPayload::SessionRewound(rewound) => {
                    if let Some(earlier) = kept.get(&rewound.to_sequence) {
                        history = earlier.clone();
                    }
                }
                _ => history.observe(&event),
            }
            if targets.contains(&event.sequence) {
                kept.insert(event.sequence, history.clone());
            }
        })?;
        Ok(history)
    }

    pub fn snapshot(&self) -> HistorySnapshot {
        HistorySnapshot {
            summary: self.summary.clone(),
            turns: self.turns.iter().cloned().collect(),
            memory_section: self.memory_section.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{HistoryCompacted, TurnCompleted};

    fn event(turn_id: Uuid, payload: EventPayload) -> Event {
        Event {
            id: Uuid::new_v4(),
            session_id: Uuid::nil(),
            sequence: 1,
            created_at_ms: 1,
            turn_id: Some(turn_id),
            payload,
        }
    }

    fn completed(outcome: TurnOutcome, text: &str) -> EventPayload {
        EventPayload::TurnCompleted(TurnCompleted {
            outcome,
            response: text.into(),
            error: String::new(),
            usage: Default::default(),
            messages: vec![
                ChatMessage::user(text),
                ChatMessage::assistant(text, vec![]),
            ],
            model_calls: 1,
            reason: String::new(),
        })
    }

    #[test]
    fn completed_turns_are_kept_and_a_compaction_replaces_the_ones_it_covers() {
        let mut history = History::default();
        let ids: Vec<Uuid> = (0..4).map(|_| Uuid::now_v7()).collect();
        for (i, id) in ids.iter().enumerate() {
            history.observe(&event(
                *id,
                completed(TurnOutcome::Completed, &format!("t{i}")),
            ));
        }
        history.observe(&event(
            Uuid::now_v7(),
            completed(TurnOutcome::Failed, "lost"),
        ));
        let snapshot = history.snapshot();
        assert_eq!(snapshot.turns.len(), 4, "failed turns are not remembered");
        assert_eq!(
            snapshot.turns[0].tokens,
            messages_tokens(&snapshot.turns[0].messages)
        );

        history.observe(&event(
            ids[3],
            EventPayload::HistoryCompacted(HistoryCompacted {
                summary: "t0 and t1 happened".into(),
                through_turn_id: ids[1],
                turns_compacted: 2,
                tokens_before: 100,
                tokens_after: 50,
                usage: Default::default(),
            }),
        ));
        let snapshot = history.snapshot();
        let kept: Vec<Uuid> = snapshot.turns.iter().map(|t| t.turn_id).collect();
        assert_eq!(kept, [ids[2], ids[3]]);
        let summary = snapshot.summary.expect("summary");
        assert_eq!(&*summary.text, "t0 and t1 happened");
        assert_eq!(
            summary.tokens,
            message_tokens(&summary_message("t0 and t1 happened"))
        );

        history.observe(&event(
            ids[3],
            EventPayload::MemoryRecalled {
                records: 1,
                section: "## Memory".into(),
            },
        ));
        assert_eq!(
            history.snapshot().memory_section.as_deref(),
            Some("## Memory")
        );
    }

    #[test]
    fn the_ring_keeps_the_newest_turns() {
        let mut history = History::default();
        for i in 0..MEMORY_TURNS + 3 {
            history.observe(&event(
                Uuid::now_v7(),
                completed(TurnOutcome::Completed, &format!("t{i}")),
            ));
        }
        let snapshot = history.snapshot();
        assert_eq!(snapshot.turns.len(), MEMORY_TURNS);
        assert_eq!(snapshot.turns[0].messages[0].content, "t3");
    }

    #[test]
    fn only_the_newest_turns_keep_their_images() {
        use crate::chat::ChatImage;
        // A turn whose one tool result holds `n` images of `bytes` each (base64 length).
        let turn_with = |n: usize, bytes: usize| {
            let image = ChatImage {
                mime_type: "image/png".into(),
                data: "A".repeat(bytes / 3 * 4),
            };
            EventPayload::TurnCompleted(TurnCompleted {
                outcome: TurnOutcome::Completed,
                response: "seen".into(),
                error: String::new(),
                usage: Default::default(),
                messages: vec![
                    ChatMessage::user("look"),
                    ChatMessage {
                        images: vec![image; n],
                        ..ChatMessage::tool_result("c", "[image image/png]", false)
                    },
                    ChatMessage::assistant("seen", vec![]),
                ],
                model_calls: 2,
                reason: String::new(),
            })
        };
        let images = |history: &History| -> Vec<usize> {
            history
                .snapshot()
                .turns
                .iter()
                .map(|t| t.messages.iter().map(|m| m.images.len()).sum())
                .collect()
        };
        let mut history = History::default();
        let third = HISTORY_IMAGE_BYTES / 3;
        history.observe(&event(Uuid::now_v7(), turn_with(1, third)));
        history.observe(&event(Uuid::now_v7(), turn_with(2, third)));
        assert_eq!(images(&history), [1, 2], "both fit");
        history.observe(&event(Uuid::now_v7(), turn_with(1, third)));
        assert_eq!(images(&history), [0, 2, 1], "the oldest gave its up");
        let snapshot = history.snapshot();
        assert_eq!(
            snapshot.turns[0].tokens,
            messages_tokens(&snapshot.turns[0].messages),
            "its estimate follows"
        );
        history.observe(&event(Uuid::now_v7(), turn_with(HISTORY_IMAGES, 10)));
        assert_eq!(images(&history), [0, 0, 0, HISTORY_IMAGES], "by count too");
    }
}
