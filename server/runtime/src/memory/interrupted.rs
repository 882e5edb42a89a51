//! How an interrupted turn is remembered: its prompt and the steps it completed, then a
//! short note that it stopped there, so the next turn neither loses the request nor
//! mistakes it for answered.

use crate::chat::{ChatMessage, Role};

/// The messages a later turn is sent for an interrupted one: `messages` (or just `prompt`,
/// when the record holds none) up to the last completed step, then the note, as the
/// assistant's (after the user's prompt or tool results, the assistant speaks next; after
/// an assistant answer, the note joins it).
pub fn remembered(messages: &[ChatMessage], prompt: Option<&str>, why: &str) -> Vec<ChatMessage> {
    let mut kept = completed_steps(messages);
    if kept.is_empty() {
        match prompt {
            Some(prompt) => kept.push(ChatMessage::user(prompt)),
            None => return kept,
        }
    }
    let note = note(why);
    match kept.last_mut() {
        Some(last) if last.role == Role::Assistant && last.tool_calls.is_empty() => {
            if !last.content.is_empty() {
                last.content.push_str("\n\n");
            }
            last.content.push_str(&note);
        }
        _ => kept.push(ChatMessage::assistant(note, Vec::new())),
    }
    kept
}

/// The note closing an interrupted turn.
pub fn note(why: &str) -> String {
    let why = why.trim().trim_end_matches('.');
    if why.is_empty() {
        "[This turn was interrupted before it finished; the steps above are all it did.]".into()
    } else {
        format!(
            "[This turn was interrupted before it finished ({why}); the steps above are all it did.]"
        )
    }
}

/// `messages` cut after the last step that completed: an assistant message whose tool
/// calls all have their results. A tool call without its result is a request no provider
/// accepts.
fn completed_steps(messages: &[ChatMessage]) -> Vec<ChatMessage> {
    let mut end = 0;
    let mut waiting: Vec<&str> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        match message.role {
            Role::Assistant => {
                if !waiting.is_empty() {
                    break;
                }
                waiting = message.tool_calls.iter().map(|c| c.id.as_str()).collect();
            }
            Role::Tool => {
                let answered = message.tool_call_id.as_deref();
                waiting.retain(|id| Some(*id) != answered);
            }
            Role::User | Role::System => {
                if !waiting.is_empty() {
                    break;
                }
            }
        }
        if waiting.is_empty() {
            end = i + 1;
        }
    }
    messages[..end].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::ToolCall;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "Bash".into(),
            arguments: "{}".into(),
        }
    }

    /// Issue 12 item 8: the prompt and completed steps are kept, an unanswered tool call
    /// is not, and a note says the turn stopped.
    #[test]
    fn an_interrupted_turn_keeps_its_completed_steps_and_a_note() {
        let messages = vec![
            ChatMessage::user("fix it"),
            ChatMessage::assistant("first", vec![call("a")]),
            ChatMessage::tool_result("a", "ok", false),
            ChatMessage::assistant("second", vec![call("b"), call("c")]),
            ChatMessage::tool_result("b", "ok", false),
        ];
        let kept = remembered(&messages, None, "the server shut down while this turn ran");
        assert_eq!(kept.len(), 4, "{kept:?}");
        assert_eq!(kept[..3], messages[..3]);
        assert_eq!(kept[3].role, Role::Assistant);
        assert!(kept[3].tool_calls.is_empty());
        assert_eq!(
            kept[3].content,
            "[This turn was interrupted before it finished (the server shut down while this turn ran); the steps above are all it did.]"
        );
    }

    #[test]
    fn a_record_without_messages_keeps_the_prompt_and_a_final_answer_takes_the_note() {
        let kept = remembered(&[], Some("hello"), "");
        assert_eq!(kept.len(), 2);
        assert_eq!(kept[0], ChatMessage::user("hello"));
        assert!(kept[1].content.starts_with("[This turn was interrupted"));
        assert!(remembered(&[], None, "x").is_empty());

        let answered = vec![
            ChatMessage::user("hi"),
            ChatMessage::assistant("Hello!", Vec::new()),
        ];
        let kept = remembered(&answered, None, "stopped");
        assert_eq!(kept.len(), 2);
        assert!(
            kept[1]
                .content
                .starts_with("Hello!\n\n[This turn was interrupted"),
            "{}",
            kept[1].content
        );
    }
}
