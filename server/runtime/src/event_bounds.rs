//! Every event fits in one message, whatever a model or a tool made of it.
//!
//! Subscribers receive each event as one gRPC message, and a message larger than the
//! server's limit (4 MiB by default) ends the stream for every client of the session. A
//! model controls most of what events carry: its text, tool names and call ids, the
//! commands whose output tools return, how many calls a step makes (and so how long the
//! turn record in `turn_completed` grows). [`bound`] is applied to every event before it
//! is written or streamed, and cuts what is too long, saying how much was left out. The
//! model itself is unaffected: it was sent everything during the turn. Sources split what
//! they can before it gets here ([`split`]), so a long answer still streams whole.

use crate::chat::{ChatMessage, Role};
use crate::events::{EventPayload, TurnCompleted};

/// Names and ids a model chooses (tool names, call ids).
pub const NAME_BYTES: usize = 256;
/// One streamed piece of text.
pub const DELTA_BYTES: usize = 64 * 1024;
/// One tool result, in its event and in the turn record.
pub const RESULT_BYTES: usize = 64 * 1024;
/// A turn's answer, an assistant message, a summary, an error.
pub const TEXT_BYTES: usize = 256 * 1024;
/// A display form of a call waiting for approval (its arguments are at most 256 KiB).
pub const DISPLAY_BYTES: usize = 1024 * 1024;
/// The text of a whole turn record (its messages, their tool calls' arguments).
pub const RECORD_BYTES: usize = 3 * 1024 * 1024;

/// Cuts the fields of `payload` that exceed their bounds.
pub fn bound(payload: &mut EventPayload) {
    match payload {
        EventPayload::TurnCompleted(completed) => bound_record(completed),
        EventPayload::AgentMessageDelta { delta } | EventPayload::ReasoningDelta { delta } => {
            cut(delta, DELTA_BYTES);
        }
        EventPayload::ToolCallStarted { call_id, tool, .. } => {
            cut(call_id, NAME_BYTES);
            cut(tool, NAME_BYTES);
        }
        EventPayload::ToolCallDelta { call_id, delta } => {
            cut(call_id, NAME_BYTES);
            cut(delta, DELTA_BYTES);
        }
        EventPayload::ToolCallFinished {
            call_id,
            tool,
            result,
            ..
        } => {
            cut(call_id, NAME_BYTES);
            cut(tool, NAME_BYTES);
            cut(result, RESULT_BYTES);
        }
        EventPayload::ExecCommandBegin {
            call_id: Some(call_id),
            ..
        } => cut(call_id, NAME_BYTES),
        EventPayload::ExecCommandOutputDelta { text, .. } => cut(text, DELTA_BYTES),
        EventPayload::PermissionRequested {
            call_id,
            tool,
            summary,
            display,
            ..
        } => {
            cut(call_id, NAME_BYTES);
            cut(tool, NAME_BYTES);
            cut(summary, TEXT_BYTES);
            cut(display, DISPLAY_BYTES);
        }
        EventPayload::ErrorOccurred { message, .. } => cut(message, TEXT_BYTES),
        EventPayload::HumanInputRequested(requested) => {
            cut(&mut requested.call_id, NAME_BYTES);
            cut(&mut requested.tool, NAME_BYTES);
            cut(&mut requested.server, NAME_BYTES);
            cut(&mut requested.message, TEXT_BYTES);
            cut(&mut requested.display, DISPLAY_BYTES);
        }
        EventPayload::HumanInputAnswered(answered) => cut(&mut answered.reason, TEXT_BYTES),
        EventPayload::HistoryCompacted(compacted) => cut(&mut compacted.summary, TEXT_BYTES),
        EventPayload::SubagentStarted(started) => {
            cut(&mut started.call_id, NAME_BYTES);
            cut(&mut started.agent_id, NAME_BYTES);
        }
        EventPayload::SubagentFinished(finished) => {
            cut(&mut finished.call_id, NAME_BYTES);
            cut(&mut finished.agent_id, NAME_BYTES);
            cut(&mut finished.error, TEXT_BYTES);
        }
        _ => {}
    }
}

/// `text` in pieces of at most `max` bytes, cut on character boundaries.
pub fn split(text: &str, max: usize) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while rest.len() > max {
        let end = floor_boundary(rest, max);
        let (piece, tail) = rest.split_at(end);
        pieces.push(piece);
        rest = tail;
    }
    pieces.push(rest);
    pieces
}

/// A turn's answer or error as its record keeps it (and as its execution status shows it):
/// at most [`TEXT_BYTES`], with a note of what was left out.
pub fn bound_text(text: &mut String) {
    cut(text, TEXT_BYTES);
}

/// A tool's result as its event and the turn record keep it: at most [`RESULT_BYTES`],
/// with a note of what was left out.
pub fn bound_result(text: &mut String) {
    cut(text, RESULT_BYTES);
}

/// Each message within its own bound, then the largest piece cut further until the
/// whole record fits [`RECORD_BYTES`]. The user's prompt is cut last. Arguments of tool
/// calls are replaced whole (by a small JSON object saying how much was left out), so the
/// record stays something a provider accepts as history.
fn bound_record(completed: &mut TurnCompleted) {
    bound_text(&mut completed.response);
    bound_text(&mut completed.error);
    for message in &mut completed.messages {
        let max = match message.role {
            Role::Tool => RESULT_BYTES,
            _ => TEXT_BYTES,
        };
        cut(&mut message.content, max);
        if let Some(id) = &mut message.tool_call_id {
            cut(id, NAME_BYTES);
        }
        for call in &mut message.tool_calls {
            cut(&mut call.id, NAME_BYTES);
            cut(&mut call.name, NAME_BYTES);
            if call.arguments.len() > RESULT_BYTES {
                omit_arguments(&mut call.arguments);
            }
        }
    }
    bound_images(&mut completed.messages);
    let mut total: usize = completed.messages.iter().map(size).sum();
    while total > RECORD_BYTES {
        // The largest piece: a message's text (the prompt only when nothing else is left)
        // or a call's arguments.
        let mut largest: Option<(bool, usize, &mut String, bool)> = None;
        for message in &mut completed.messages {
            let is_prompt = message.role == Role::User;
            for call in &mut message.tool_calls {
                if call.arguments.len() > NOTE_ROOM
                    && largest
                        .as_ref()
                        .is_none_or(|(p, len, ..)| (true, call.arguments.len()) > (!*p, *len))
                {
                    largest = Some((false, call.arguments.len(), &mut call.arguments, true));
                }
            }
            let len = message.content.len();
            if len > NOTE_ROOM
                && largest
                    .as_ref()
                    .is_none_or(|(p, l, ..)| (!is_prompt, len) > (!*p, *l))
            {
                largest = Some((is_prompt, len, &mut message.content, false));
            }
        }
        let Some((_, before, text, arguments)) = largest else {
            break;
        };
        if arguments {
            omit_arguments(text);
        } else {
            cut(text, before / 2);
        }
        total = total - before + text.len();
    }
}

/// The images of a turn record within a turn's limits (a turn keeps no more as it
/// runs; a record read from elsewhere is held to them too): the first ones are kept.
fn bound_images(messages: &mut [ChatMessage]) {
    use crate::tools::images::{MAX_TURN_IMAGE_BYTES, MAX_TURN_IMAGES};
    let (mut count, mut bytes) = (0, 0);
    for message in messages {
        message.images.retain(|image| {
            count += 1;
            bytes += image.byte_len();
            count <= MAX_TURN_IMAGES && bytes <= MAX_TURN_IMAGE_BYTES
        });
    }
}

/// Replaces a call's arguments by a note that is still a JSON object.
fn omit_arguments(arguments: &mut String) {
    *arguments = format!(r#"{{"omitted_bytes":{}}}"#, arguments.len());
}

/// Room kept for the note a cut adds.
const NOTE_ROOM: usize = 64;

fn size(message: &ChatMessage) -> usize {
    message.content.len()
        + message
            .tool_calls
            .iter()
            .map(|call| call.arguments.len() + call.name.len() + call.id.len())
            .sum::<usize>()
}

/// Cuts `text` to about `max` bytes, on a character boundary, with a note of how many
/// bytes were left out.
fn cut(text: &mut String, max: usize) {
    if text.len() <= max {
        return;
    }
    let end = floor_boundary(text, max.saturating_sub(NOTE_ROOM));
    let left_out = text.len() - end;
    text.truncate(end);
    text.push_str(&format!("\n[… {left_out} more bytes not recorded]"));
}

fn floor_boundary(text: &str, at: usize) -> usize {
    crate::text::byte_prefix(text, at).len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::{TokenUsage, ToolCall};
    use crate::events::TurnOutcome;

    fn turn(messages: Vec<ChatMessage>) -> EventPayload {
        EventPayload::TurnCompleted(TurnCompleted {
            outcome: TurnOutcome::Completed,
            response: "é".repeat(TEXT_BYTES),
            error: String::new(),
            usage: TokenUsage::default(),
            messages,
            model_calls: 1,
            reason: String::new(),
        })
    }

    /// A turn whose model asked for many large outputs: every event, the turn record above
    /// all, stays within the bounds (an event over the gRPC limit ended every stream).
    #[test]
    fn a_turn_of_huge_tool_results_records_within_its_bounds() {
        let mut messages = vec![ChatMessage::user("go")];
        for i in 0..200 {
            let call = ToolCall {
                id: format!("call-{i}-{}", "x".repeat(1000)),
                name: "Bash".into(),
                arguments: "{}".into(),
            };
            messages.push(ChatMessage::assistant("", vec![call]));
            messages.push(ChatMessage::tool_result(
                format!("call-{i}"),
                "out\n".repeat(500_000),
                false,
            ));
        }
        let mut payload = turn(messages);
        bound(&mut payload);
        let EventPayload::TurnCompleted(completed) = &payload else {
            panic!("still a turn end");
        };
        let total: usize = completed.messages.iter().map(size).sum();
        assert!(total <= RECORD_BYTES, "{total}");
        assert_eq!(completed.messages[0].content, "go");
        assert!(completed.response.len() <= TEXT_BYTES);
        assert!(completed.response.ends_with("more bytes not recorded]"));
        assert!(
            completed.messages[2]
                .content
                .ends_with("more bytes not recorded]")
        );
        assert!(
            completed.messages[1].tool_calls[0].id.len()
                <= NAME_BYTES + "\n[… 999 more bytes not recorded]".len()
        );
    }

    #[test]
    fn long_names_results_and_deltas_are_cut_with_a_note() {
        let mut finished = EventPayload::ToolCallFinished {
            call_id: "c".repeat(10_000),
            tool: "t".repeat(10_000),
            success: true,
            result: "r".repeat(RESULT_BYTES * 3),
        };
        bound(&mut finished);
        let EventPayload::ToolCallFinished {
            call_id,
            tool,
            result,
            ..
        } = &finished
        else {
            panic!("same event");
        };
        assert!(call_id.len() < NAME_BYTES + 64 && tool.len() < NAME_BYTES + 64);
        assert!(result.len() <= RESULT_BYTES);
        assert!(result.ends_with("more bytes not recorded]"));

        let mut small = EventPayload::AgentMessageDelta { delta: "hi".into() };
        bound(&mut small);
        assert_eq!(
            small,
            EventPayload::AgentMessageDelta { delta: "hi".into() }
        );
    }

    #[test]
    fn split_keeps_every_character() {
        let text = "aé😀".repeat(10_000);
        let pieces = split(&text, 1000);
        assert!(pieces.iter().all(|p| p.len() <= 1000));
        assert_eq!(pieces.concat(), text);
        assert_eq!(split("", 10), vec![""]);
    }

    #[test]
    fn a_turn_record_keeps_images_within_a_turns_limits() {
        use crate::chat::ChatImage;
        use crate::tools::images::{MAX_TURN_IMAGE_BYTES, MAX_TURN_IMAGES};
        let image = |bytes: usize| ChatImage {
            mime_type: "image/png".into(),
            data: "A".repeat(bytes / 3 * 4),
        };
        let result = |images: Vec<ChatImage>| ChatMessage {
            images,
            ..ChatMessage::tool_result("c", "[image image/png]", false)
        };
        let half = MAX_TURN_IMAGE_BYTES / 2;
        let mut payload = turn(vec![
            ChatMessage::user("go"),
            result(vec![image(half), image(half)]),
            result(vec![image(30)]),
            result(vec![image(30); MAX_TURN_IMAGES]),
        ]);
        bound(&mut payload);
        let EventPayload::TurnCompleted(completed) = &payload else {
            panic!("still a turn end");
        };
        let kept: Vec<usize> = completed.messages.iter().map(|m| m.images.len()).collect();
        assert_eq!(kept, [0, 2, 0, 0], "the first ones, up to the bytes");
    }
}
