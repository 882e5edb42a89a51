//! Human-readable events: one line per stored event (`events`, `demo`), and the live view of
//! a turn (`run`) that streams the answer to stdout and everything else to stderr.

use std::io;

use odyssey_api::v1 as pb;
use pb::session_event::Payload;

use super::json::{event_kind, value_to_json};
use super::output::Output;

/// Longest tool-argument text shown on a tool line.
const ARGS_WIDTH: usize = 80;
/// Longest tool result shown on a tool line.
const RESULT_WIDTH: usize = 100;
/// Longest text shown in an event line's detail column.
const DETAIL_WIDTH: usize = 100;

/// `text` on one line, cut to `max` characters with an ellipsis.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        return one_line;
    }
    let mut cut: String = one_line.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// `Tool(key=value, ...)` with JSON values, shortened.
pub(crate) fn tool_call(tool: &str, arguments: Option<&prost_types::Struct>) -> String {
    let args = arguments
        .map(|a| {
            a.fields
                .iter()
                .map(|(k, v)| format!("{k}={}", value_to_json(v)))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    format!("{tool}({})", shorten(&args, ARGS_WIDTH))
}

/// `182 in · 74 out · 256 total` (plus cached and reasoning tokens when there are any).
pub(crate) fn usage(usage: Option<&pb::TokenUsage>) -> String {
    let Some(u) = usage else {
        return "no usage reported".to_owned();
    };
    let mut text = format!(
        "{} in · {} out · {} total",
        u.input_tokens, u.output_tokens, u.total_tokens
    );
    if u.cached_input_tokens > 0 {
        text.push_str(&format!(" · {} cached", u.cached_input_tokens));
    }
    if u.reasoning_tokens > 0 {
        text.push_str(&format!(" · {} reasoning", u.reasoning_tokens));
    }
    text
}

/// `completed`, `failed`, ... for a turn outcome.
pub(crate) fn outcome(value: i32) -> &'static str {
    match pb::TurnOutcome::try_from(value) {
        Ok(pb::TurnOutcome::Completed) => "completed",
        Ok(pb::TurnOutcome::Failed) => "failed",
        Ok(pb::TurnOutcome::Cancelled) => "cancelled",
        Ok(pb::TurnOutcome::Interrupted) => "interrupted",
        Ok(pb::TurnOutcome::Unspecified) | Err(_) => "unknown",
    }
}

/// The short name of an enum value: `SANDBOX_MODE_READ_ONLY` → `read_only`.
pub(crate) fn enum_label(full: &str, prefix: &str) -> String {
    full.strip_prefix(prefix)
        .unwrap_or(full)
        .to_ascii_lowercase()
}

/// What an event says, in a few words (the detail column of an event line).
pub(crate) fn detail(event: &pb::SessionEvent) -> String {
    let Some(payload) = &event.payload else {
        return String::new();
    };
    match payload {
        Payload::TurnStarted(p) => format!("{:?}", shorten(&p.prompt, DETAIL_WIDTH)),
        Payload::TurnCompleted(p) => match pb::TurnOutcome::try_from(p.outcome) {
            Ok(pb::TurnOutcome::Completed) => format!("completed · {}", usage(p.usage.as_ref())),
            _ => format!(
                "{}: {}",
                outcome(p.outcome),
                shorten(&p.error, DETAIL_WIDTH)
            ),
        },
        Payload::AgentMessageDelta(p) => format!("{:?}", p.delta),
        Payload::ReasoningDelta(p) => format!("{:?}", p.delta),
        Payload::ReasoningSectionBreak(_) => String::new(),
        Payload::ToolCallStarted(p) => format!("→ {}", tool_call(&p.tool, p.arguments.as_ref())),
        Payload::ToolCallDelta(p) => format!("{} {:?}", p.call_id, shorten(&p.delta, DETAIL_WIDTH)),
        Payload::ToolCallFinished(p) => {
            format!("← {} {}", p.tool, tool_result(p.success, &p.result))
        }
        Payload::ExecCommandBegin(p) => format!("$ {}", shorten(&p.argv.join(" "), DETAIL_WIDTH)),
        Payload::ExecCommandOutputDelta(p) => format!("{:?}", shorten(&p.text, DETAIL_WIDTH)),
        Payload::ExecCommandEnd(p) => {
            let mut text = format!("exit {} after {} ms", p.exit_code, p.duration_ms);
            if p.timed_out {
                text.push_str(" (timed out)");
            }
            if p.output_truncated {
                text.push_str(" (output truncated)");
            }
            text
        }
        Payload::PermissionRequested(p) => format!(
            "{} wants to run: {} [{}]",
            p.tool,
            shorten(&p.summary, 60),
            p.request_id
        ),
        Payload::ApprovalResolved(p) => {
            let decision = pb::ApprovalDecision::try_from(p.decision)
                .map(|d| enum_label(d.as_str_name(), "APPROVAL_DECISION_"))
                .unwrap_or_else(|_| p.decision.to_string());
            let resolution = pb::ApprovalResolution::try_from(p.resolution)
                .map(|r| enum_label(r.as_str_name(), "APPROVAL_RESOLUTION_"))
                .unwrap_or_else(|_| p.resolution.to_string());
            format!("{decision} ({resolution}) [{}]", p.request_id)
        }
        Payload::PlanUpdated(p) => {
            let done = p
                .steps
                .iter()
                .filter(|s| s.status == i32::from(pb::PlanStepStatus::Completed))
                .count();
            format!("{done}/{} steps done", p.steps.len())
        }
        Payload::TokenUsageReported(p) => format!("turn so far: {}", usage(p.turn_total.as_ref())),
        Payload::ErrorOccurred(p) => {
            let fatal = if p.fatal { " (fatal)" } else { "" };
            format!("{}: {}{fatal}", p.code, shorten(&p.message, DETAIL_WIDTH))
        }
    }
}

/// `ok: result` or `error: result`, shortened.
fn tool_result(success: bool, result: &str) -> String {
    let label = if success { "ok" } else { "error" };
    if result.trim().is_empty() {
        label.to_owned()
    } else {
        format!("{label}: {}", shorten(result, RESULT_WIDTH))
    }
}

/// `   12  agent_message_delta        "Hello"`: sequence, kind, detail.
pub(crate) fn event_line(event: &pb::SessionEvent) -> String {
    format!(
        "{:>6}  {:<26} {}",
        event.sequence,
        event_kind(event),
        detail(event)
    )
    .trim_end()
    .to_owned()
}

/// The live view of one turn for `odyssey run`: the answer streams to stdout as it
/// arrives; reasoning (dimmed or prefixed), tool activity and the usage line go to stderr
/// so stdout holds only the answer.
#[derive(Default)]
pub(crate) struct TurnPrinter {
    /// The answer's current line has text and no newline yet.
    text_open: bool,
    /// A reasoning line is open on stderr.
    reasoning_open: bool,
}

impl TurnPrinter {
    pub fn event(&mut self, output: &mut Output<'_>, event: &pb::SessionEvent) -> io::Result<()> {
        let Some(payload) = &event.payload else {
            return Ok(());
        };
        if !matches!(payload, Payload::ReasoningDelta(_)) {
            self.close_reasoning(output)?;
        }
        match payload {
            Payload::AgentMessageDelta(p) => {
                output.out.write_all(p.delta.as_bytes())?;
                output.out.flush()?;
                self.text_open = !p.delta.ends_with('\n');
            }
            Payload::ReasoningDelta(p) => {
                if !self.reasoning_open {
                    self.close_text(output)?;
                    if !output.style.color {
                        output.err.write_all(b"[reasoning] ")?;
                    }
                    self.reasoning_open = true;
                }
                let text = output.dim(&p.delta.replace('\n', " "));
                output.err.write_all(text.as_bytes())?;
                output.err.flush()?;
            }
            Payload::ToolCallStarted(p) => {
                self.close_text(output)?;
                output.note(format!("→ {}", tool_call(&p.tool, p.arguments.as_ref())))?;
            }
            Payload::ToolCallFinished(p) => {
                self.close_text(output)?;
                output.note(format!("← {}", tool_result(p.success, &p.result)))?;
            }
            Payload::PermissionRequested(p) => {
                self.close_text(output)?;
                output.note(format!(
                    "? {} waits for approval: {} (request {})",
                    p.tool,
                    shorten(&p.summary, 60),
                    p.request_id
                ))?;
            }
            Payload::ApprovalResolved(_) | Payload::ErrorOccurred(_) => {
                self.close_text(output)?;
                output.note(format!("{}: {}", event_kind(event), detail(event)))?;
            }
            Payload::TurnCompleted(p) => {
                self.close_text(output)?;
                // How a failed turn ended is the command's error line, not repeated here.
                output.note(output.dim(&format!("tokens: {}", usage(p.usage.as_ref()))))?;
            }
            _ => {}
        }
        Ok(())
    }

    fn close_text(&mut self, output: &mut Output<'_>) -> io::Result<()> {
        if self.text_open {
            output.out.write_all(b"\n")?;
            output.out.flush()?;
            self.text_open = false;
        }
        Ok(())
    }

    fn close_reasoning(&mut self, output: &mut Output<'_>) -> io::Result<()> {
        if self.reasoning_open {
            output.err.write_all(b"\n")?;
            self.reasoning_open = false;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::output::Style;

    fn event(sequence: u64, payload: Payload) -> pb::SessionEvent {
        pb::SessionEvent {
            sequence,
            payload: Some(payload),
            ..Default::default()
        }
    }

    #[test]
    fn shortens_to_one_line() {
        assert_eq!(shorten("a\nb   c", 10), "a b c");
        assert_eq!(shorten("abcdefghij", 5), "abcd…");
    }

    #[test]
    fn event_lines_show_sequence_kind_and_detail() {
        let line = event_line(&event(
            3,
            Payload::AgentMessageDelta(pb::AgentMessageDelta {
                delta: "Hi ".into(),
            }),
        ));
        assert_eq!(line, "     3  agent_message_delta        \"Hi \"");
    }

    #[test]
    fn turn_printer_splits_answer_and_activity() {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut output = Output {
            out: &mut out,
            err: &mut err,
            json: false,
            style: Style::plain(),
        };
        let mut printer = TurnPrinter::default();
        let mut args = std::collections::BTreeMap::new();
        args.insert(
            "path".to_owned(),
            prost_types::Value::from("README.md".to_owned()),
        );
        let events = [
            Payload::ReasoningDelta(pb::ReasoningDelta {
                delta: "thinking".into(),
            }),
            Payload::AgentMessageDelta(pb::AgentMessageDelta {
                delta: "Hello ".into(),
            }),
            Payload::ToolCallStarted(pb::ToolCallStarted {
                call_id: "c1".into(),
                tool: "Read".into(),
                arguments: Some(prost_types::Struct { fields: args }),
            }),
            Payload::ToolCallFinished(pb::ToolCallFinished {
                call_id: "c1".into(),
                tool: "Read".into(),
                success: true,
                result: "# Demo\nline two".into(),
            }),
            Payload::AgentMessageDelta(pb::AgentMessageDelta {
                delta: "world".into(),
            }),
            Payload::TurnCompleted(pb::TurnCompleted {
                outcome: pb::TurnOutcome::Completed.into(),
                usage: Some(pb::TokenUsage {
                    input_tokens: 3,
                    output_tokens: 2,
                    total_tokens: 5,
                    ..Default::default()
                }),
                ..Default::default()
            }),
        ];
        for (i, payload) in events.into_iter().enumerate() {
            printer
                .event(&mut output, &event(i as u64 + 1, payload))
                .unwrap();
        }
        assert_eq!(String::from_utf8(out).unwrap(), "Hello \nworld\n");
        assert_eq!(
            String::from_utf8(err).unwrap(),
            "[reasoning] thinking\n→ Read(path=\"README.md\")\n← ok: # Demo line two\ntokens: 3 in · 2 out · 5 total\n"
        );
    }
}
