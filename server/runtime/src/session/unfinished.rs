//! What the log shows of a turn that started and never ended (the server was killed while
//! it ran): its prompt, the steps it completed, the tokens it spent and the model calls it
//! made. Its end is recorded from this, so the session's totals and token budget count what
//! it spent, and the next turn remembers what it did.
//!
//! A step is one model call and the tool calls it asked for. The log holds the answer's
//! text as deltas, each tool call as it started (with its arguments as recorded, secrets
//! and file bodies replaced) and each result; a step counts as completed once it asked for
//! tools and every tool it started has answered. A step whose answer was still streaming,
//! or whose tools were still running, is left out: a tool call without its result is a
//! request no provider accepts.

use crate::chat::{ChatMessage, TokenUsage, ToolCall};
use crate::events::{Event, EventPayload};

/// The events of one unfinished turn, folded as they are read.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct TurnSoFar {
    /// The sequence of its `turn_started`.
    pub first_sequence: u64,
    /// Everything its model calls reported, the history compaction's included.
    pub usage: TokenUsage,
    /// Model calls it made, as far as the log shows (each answer, each compaction).
    pub model_calls: u32,
    /// The prompt, then each completed step's messages.
    messages: Vec<ChatMessage>,
    step: Option<Step>,
    /// Input steered into the turn and not yet sent: the next model call takes it.
    steered: Vec<String>,
}

/// The model call in progress, as far as the log shows.
#[derive(Clone, Debug, Default, PartialEq)]
struct Step {
    text: String,
    calls: Vec<ToolCall>,
    results: Vec<ChatMessage>,
}

impl Step {
    /// Whether the model asked for tools and each of them answered.
    fn is_complete(&self) -> bool {
        !self.calls.is_empty() && self.results.len() == self.calls.len()
    }
}

impl TurnSoFar {
    /// A turn started with `prompt` at `first_sequence`.
    pub fn new(prompt: &str, first_sequence: u64) -> Self {
        Self {
            first_sequence,
            messages: vec![ChatMessage::user(prompt)],
            ..Self::default()
        }
    }

    /// A turn whose runner knows what it spent, and whose steps are not remembered (it
    /// failed).
    pub fn spent(first_sequence: u64, usage: TokenUsage, model_calls: u32) -> Self {
        Self {
            first_sequence,
            usage,
            model_calls,
            ..Self::default()
        }
    }

    /// Folds in the next event of the turn.
    pub fn observe(&mut self, event: &Event) {
        match &event.payload {
            EventPayload::AgentMessageDelta { delta } => self.answering().text.push_str(delta),
            EventPayload::ReasoningDelta { .. } | EventPayload::ReasoningSectionBreak => {
                self.answering();
            }
            EventPayload::TokenUsageReported { call, .. } => {
                self.answering();
                self.usage += *call;
            }
            EventPayload::ToolCallStarted {
                call_id,
                tool,
                arguments,
            } => {
                if self.step.is_none() {
                    self.begin();
                }
                let step = self.step.get_or_insert_with(Step::default);
                let arguments = match arguments {
                    serde_json::Value::String(raw) => raw.clone(),
                    other => other.to_string(),
                };
                step.calls.push(ToolCall {
                    id: call_id.clone(),
                    name: tool.clone(),
                    arguments,
                });
            }
            EventPayload::ToolCallFinished {
                call_id,
                success,
                result,
                ..
            } => {
                if let Some(step) = &mut self.step
                    && step.calls.iter().any(|c| &c.id == call_id)
                {
                    step.results
                        .push(ChatMessage::tool_result(call_id, result, !success));
                }
            }
            EventPayload::HistoryCompacted(compacted) => {
                self.model_calls = self.model_calls.saturating_add(1);
                self.usage += compacted.usage;
            }
            EventPayload::UserInputAdded { text, .. } => self.steered.push(text.clone()),
            _ => {}
        }
    }

    /// The prompt and the completed steps' messages, then the input steered in that no
    /// model call took yet.
    pub fn messages(&self) -> Vec<ChatMessage> {
        let mut messages = self.messages.clone();
        if let Some(step) = self.step.as_ref().filter(|s| s.is_complete()) {
            push_step(&mut messages, step.clone());
        }
        messages.extend(self.steered.iter().map(ChatMessage::user));
        messages
    }

    /// The step an answer's event belongs to: the current one while its answer streams,
    /// a new one once the current one has started its tools.
    fn answering(&mut self) -> &mut Step {
        let streaming = self.step.as_ref().is_some_and(|s| s.calls.is_empty());
        if !streaming {
            self.begin();
        }
        self.step.get_or_insert_with(Step::default)
    }

    /// Ends the current step (kept if completed) and starts the next model call's.
    fn begin(&mut self) -> &mut Step {
        if let Some(done) = self.step.take().filter(Step::is_complete) {
            push_step(&mut self.messages, done);
        }
        // The live turn adds steered input just before the model call it joins.
        self.messages
            .extend(self.steered.drain(..).map(ChatMessage::user));
        self.model_calls = self.model_calls.saturating_add(1);
        self.step.insert(Step::default())
    }
}

fn push_step(messages: &mut Vec<ChatMessage>, step: Step) {
    messages.push(ChatMessage::assistant(step.text, step.calls));
    messages.extend(step.results);
}

#[cfg(test)]
mod tests {
    use uuid::Uuid;

    use super::*;

    fn event(payload: EventPayload) -> Event {
        Event {
            id: Uuid::new_v4(),
            session_id: Uuid::nil(),
            sequence: 2,
            created_at_ms: 1,
            turn_id: None,
            payload,
        }
    }

    fn text(delta: &str) -> EventPayload {
        EventPayload::AgentMessageDelta {
            delta: delta.into(),
        }
    }

    fn usage(input: u64, output: u64) -> EventPayload {
        let call = TokenUsage {
            input_tokens: input,
            output_tokens: output,
            ..TokenUsage::default()
        };
        EventPayload::TokenUsageReported {
            call,
            turn_total: call,
        }
    }

    fn started(id: &str) -> EventPayload {
        EventPayload::ToolCallStarted {
            call_id: id.into(),
            tool: "Bash".into(),
            arguments: serde_json::json!({ "command": "ls" }),
        }
    }

    fn finished(id: &str) -> EventPayload {
        EventPayload::ToolCallFinished {
            call_id: id.into(),
            tool: "Bash".into(),
            success: true,
            result: format!("{id} done"),
        }
    }

    /// Issue 12 item 8: what an interrupted turn did is rebuilt from its log, its
    /// completed steps only, with every token its calls reported.
    #[test]
    fn completed_steps_and_usage_are_rebuilt_from_the_log() {
        let mut turn = TurnSoFar::new("fix it", 1);
        for payload in [
            text("Looking"),
            text(" around."),
            usage(100, 10),
            started("a"),
            finished("a"),
            started("b"),
            finished("b"),
            // The second call: no text, one tool, still running when the log ends.
            usage(200, 20),
            started("c"),
        ] {
            turn.observe(&event(payload));
        }
        assert_eq!(turn.model_calls, 2);
        assert_eq!(turn.usage.input_tokens, 300);
        assert_eq!(turn.usage.output_tokens, 30);
        let messages = turn.messages();
        assert_eq!(messages.len(), 4, "{messages:?}");
        assert_eq!(messages[0], ChatMessage::user("fix it"));
        assert_eq!(messages[1].content, "Looking around.");
        let ids: Vec<&str> = messages[1]
            .tool_calls
            .iter()
            .map(|c| c.id.as_str())
            .collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(messages[1].tool_calls[0].arguments, r#"{"command":"ls"}"#);
        assert_eq!(messages[3].tool_call_id.as_deref(), Some("b"));

        // Once c answers, the second step is complete too; an answer streaming after it
        // is a third call, not yet complete.
        turn.observe(&event(finished("c")));
        turn.observe(&event(text("Almost")));
        assert_eq!(turn.model_calls, 3);
        let messages = turn.messages();
        assert_eq!(messages.len(), 6, "{messages:?}");
        assert_eq!(messages[5].tool_call_id.as_deref(), Some("c"));
    }

    fn steered(text: &str) -> EventPayload {
        EventPayload::UserInputAdded {
            text: text.into(),
            mode: crate::events::InputMode::Steer,
        }
    }

    /// Input steered in joins where the live turn put it: before the model call after it,
    /// after the step the turn was running; input no call took yet comes last.
    #[test]
    fn steered_input_is_rebuilt_before_the_model_call_that_took_it() {
        let mut turn = TurnSoFar::new("fix it", 1);
        for payload in [
            usage(10, 1),
            started("a"),
            steered("use the tests"),
            finished("a"),
            usage(20, 2),
            started("b"),
            finished("b"),
            steered("and be quick"),
        ] {
            turn.observe(&event(payload));
        }
        let messages = turn.messages();
        let users: Vec<(usize, &str)> = messages
            .iter()
            .enumerate()
            .filter(|(_, m)| m.role == crate::chat::Role::User)
            .map(|(i, m)| (i, m.content.as_str()))
            .collect();
        assert_eq!(
            users,
            [(0, "fix it"), (3, "use the tests"), (6, "and be quick")],
            "{messages:?}"
        );
        assert_eq!(messages[2].tool_call_id.as_deref(), Some("a"));
        assert_eq!(messages[5].tool_call_id.as_deref(), Some("b"));
    }

    #[test]
    fn a_turn_killed_while_its_first_answer_streamed_keeps_only_its_prompt() {
        let mut turn = TurnSoFar::new("hello", 7);
        turn.observe(&event(text("Hel")));
        assert_eq!(turn.messages(), [ChatMessage::user("hello")]);
        assert_eq!(turn.model_calls, 1);
        assert_eq!(turn.first_sequence, 7);
    }
}
