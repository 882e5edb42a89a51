//! The live view of one turn for `odyssey run`: the answer streams to stdout as it
//! arrives; reasoning (dimmed or prefixed), tool calls, the processes they start, plans,
//! approvals and the usage line go to stderr, so stdout holds only the answer.
//!
//! Permission requests print nothing here: the approval responder shows them, together
//! with the question or the commands that answer them.
//!
//! The answer is copied to stdout as it comes: byte for byte to a pipe or a file, with its
//! control characters shown as escapes on a terminal. Everything on stderr is escaped.

use std::io;

use odyssey_api::v1 as pb;
use pb::session_event::Payload;

use super::json::event_kind;
use super::output::Output;
use super::render::{
    approval_outcome, command_line, detail, exec_end, step_mark, tool_call, tool_result, usage,
};

#[derive(Default)]
pub(crate) struct TurnPrinter {
    /// The answer's current line has text and no newline yet.
    text_open: bool,
    /// A reasoning line is open on stderr.
    reasoning_open: bool,
    /// A process's output is on stderr without its final newline.
    exec_open: bool,
}

impl TurnPrinter {
    pub fn event(&mut self, output: &mut Output<'_>, event: &pb::SessionEvent) -> io::Result<()> {
        let Some(payload) = &event.payload else {
            return Ok(());
        };
        if !matches!(payload, Payload::ReasoningDelta(_)) {
            self.close_reasoning(output)?;
        }
        if !matches!(payload, Payload::ExecCommandOutputDelta(_)) {
            self.close_exec(output)?;
        }
        match payload {
            Payload::AgentMessageDelta(p) => {
                output.copy_out(&p.delta)?;
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
            Payload::ExecCommandBegin(p) => {
                self.close_text(output)?;
                output.note(format!("  {}", command_line(p)))?;
            }
            Payload::ExecCommandOutputDelta(p) => {
                if p.text.is_empty() {
                    return Ok(());
                }
                self.close_text(output)?;
                output.err.write_all(output.dim(&p.text).as_bytes())?;
                output.err.flush()?;
                self.exec_open = !p.text.ends_with('\n');
            }
            Payload::ExecCommandEnd(p) => {
                self.close_text(output)?;
                let end = output.dim(&exec_end(p));
                writeln!(output.err, "  {end}")?;
            }
            Payload::PlanUpdated(p) => {
                self.close_text(output)?;
                output.note("plan:")?;
                for step in &p.steps {
                    output.note(format!("  {} {}", step_mark(step.status), step.text))?;
                }
            }
            // Shown by the responder, with the question or how to answer.
            Payload::PermissionRequested(_) => self.close_text(output)?,
            Payload::ApprovalResolved(p) => {
                self.close_text(output)?;
                let mark = if p.decision == i32::from(pb::ApprovalDecision::Deny)
                    || p.resolution != i32::from(pb::ApprovalResolution::Decided)
                {
                    "✗"
                } else {
                    "✓"
                };
                output.note(format!(
                    "{mark} {} (request {})",
                    approval_outcome(p),
                    p.request_id
                ))?;
            }
            Payload::HistoryCompacted(_)
            | Payload::MemoryRecalled(_)
            | Payload::NetworkConnectionAttempted(_)
            | Payload::UserInputAdded(_)
            | Payload::SessionRewound(_) => {
                self.close_text(output)?;
                let line = format!("{}: {}", event_kind(event), detail(event));
                output.dim_note(&line)?;
            }
            Payload::SubagentStarted(_) | Payload::SubagentFinished(_) => {
                self.close_text(output)?;
                output.note(format!("{}: {}", event_kind(event), detail(event)))?;
            }
            Payload::ErrorOccurred(_) => {
                self.close_text(output)?;
                output.note(format!("{}: {}", event_kind(event), detail(event)))?;
            }
            Payload::TurnCompleted(p) => {
                self.close_text(output)?;
                // How a failed turn ended is the command's error line, not repeated here.
                output.dim_note(&format!("tokens: {}", usage(p.usage.as_ref())))?;
            }
            _ => {}
        }
        output.err.flush()
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

    fn close_exec(&mut self, output: &mut Output<'_>) -> io::Result<()> {
        if self.exec_open {
            output.err.write_all(b"\n")?;
            self.exec_open = false;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::output::Style;

    /// Feeds `payloads` to a fresh printer; returns (stdout, stderr).
    fn print(payloads: Vec<Payload>) -> (String, String) {
        print_with(Style::plain(), payloads)
    }

    fn print_with(style: Style, payloads: Vec<Payload>) -> (String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut output = Output {
            out: &mut out,
            err: &mut err,
            json: false,
            style,
        };
        let mut printer = TurnPrinter::default();
        for (i, payload) in payloads.into_iter().enumerate() {
            let event = pb::SessionEvent {
                sequence: i as u64 + 1,
                payload: Some(payload),
                ..Default::default()
            };
            printer.event(&mut output, &event).unwrap();
        }
        (
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    fn arguments(key: &str, value: &str) -> Option<prost_types::Struct> {
        let mut fields = BTreeMap::new();
        fields.insert(key.to_owned(), prost_types::Value::from(value.to_owned()));
        Some(prost_types::Struct { fields })
    }

    #[test]
    fn the_answer_goes_to_stdout_and_activity_to_stderr() {
        let (out, err) = print(vec![
            Payload::ReasoningDelta(pb::ReasoningDelta {
                delta: "thinking".into(),
            }),
            Payload::AgentMessageDelta(pb::AgentMessageDelta {
                delta: "Hello ".into(),
            }),
            Payload::ToolCallStarted(pb::ToolCallStarted {
                call_id: "c1".into(),
                tool: "Read".into(),
                arguments: arguments("path", "README.md"),
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
        ]);
        assert_eq!(out, "Hello \nworld\n");
        assert_eq!(
            err,
            "[reasoning] thinking\n→ Read(path=\"README.md\")\n← ok: # Demo line two\ntokens: 3 in · 2 out · 5 total\n"
        );
    }

    #[test]
    fn processes_stream_their_output_between_begin_and_end() {
        let (out, err) = print(vec![
            Payload::AgentMessageDelta(pb::AgentMessageDelta {
                delta: "Listing".into(),
            }),
            Payload::ToolCallStarted(pb::ToolCallStarted {
                call_id: "c1".into(),
                tool: "Bash".into(),
                arguments: arguments("command", "ls"),
            }),
            Payload::ExecCommandBegin(pb::ExecCommandBegin {
                exec_id: "x1".into(),
                argv: vec!["bash".into(), "-c".into(), "ls".into()],
                cwd: String::new(),
                call_id: "c1".into(),
            }),
            Payload::ExecCommandOutputDelta(pb::ExecCommandOutputDelta {
                exec_id: "x1".into(),
                stream: pb::OutputStream::Stdout.into(),
                text: "README.md\nno".into(),
            }),
            Payload::ExecCommandOutputDelta(pb::ExecCommandOutputDelta {
                exec_id: "x1".into(),
                stream: pb::OutputStream::Stdout.into(),
                text: "tes".into(),
            }),
            Payload::ExecCommandEnd(pb::ExecCommandEnd {
                exec_id: "x1".into(),
                exit_code: 2,
                duration_ms: 7,
                timed_out: true,
                output_truncated: false,
            }),
            Payload::ToolCallFinished(pb::ToolCallFinished {
                call_id: "c1".into(),
                tool: "Bash".into(),
                success: false,
                result: "timed out".into(),
            }),
        ]);
        assert_eq!(out, "Listing\n");
        assert_eq!(
            err,
            "→ Bash(command=\"ls\")\n  $ bash -c ls\nREADME.md\nnotes\n  exit 2 after 7 ms (timed out, killed)\n← error: timed out\n"
        );
    }

    #[test]
    fn plans_and_approval_outcomes_are_shown() {
        let (_, err) = print(vec![
            Payload::PlanUpdated(pb::PlanUpdated {
                steps: vec![
                    pb::PlanStep {
                        text: "list files".into(),
                        status: pb::PlanStepStatus::Completed.into(),
                    },
                    pb::PlanStep {
                        text: "run ls".into(),
                        status: pb::PlanStepStatus::InProgress.into(),
                    },
                ],
            }),
            Payload::PermissionRequested(crate::prompt::tests::bash_request("ls")),
            Payload::ApprovalResolved(pb::ApprovalResolved {
                request_id: "req-1".into(),
                decision: pb::ApprovalDecision::AllowOnce.into(),
                resolution: pb::ApprovalResolution::Decided.into(),
                reason: String::new(),
            }),
            Payload::ApprovalResolved(pb::ApprovalResolved {
                request_id: "req-2".into(),
                decision: pb::ApprovalDecision::Deny.into(),
                resolution: pb::ApprovalResolution::Decided.into(),
                reason: "denied by the CLI (non-interactive)".into(),
            }),
        ]);
        assert_eq!(
            err,
            "plan:\n  [x] list files\n  [>] run ls\n\
             ✓ allowed once (request req-1)\n\
             ✗ denied by the CLI (non-interactive) (request req-2)\n"
        );
    }

    /// What a hostile model or tool writes: CSI (clear, colour, erase line), OSC (title,
    /// clipboard), a carriage return that overwrites, bidi overrides, a C1 CSI.
    const HOSTILE: &str =
        "a\x1b[2J\x1b[31mRED\x1b]0;TITLE\x07\x1b]52;c;cm0gLXJm\x07\rb\u{202e}c\u{9b}2J";
    const SHOWN: &str =
        "a\\x1b[2J\\x1b[31mRED\\x1b]0;TITLE\\x07\\x1b]52;c;cm0gLXJm\\x07\\rb\\u202ec\\u009b2J";

    fn hostile_turn() -> Vec<Payload> {
        vec![
            Payload::ReasoningDelta(pb::ReasoningDelta {
                delta: HOSTILE.into(),
            }),
            Payload::AgentMessageDelta(pb::AgentMessageDelta {
                delta: format!("{HOSTILE}\n"),
            }),
            Payload::ToolCallStarted(pb::ToolCallStarted {
                call_id: "c1".into(),
                tool: "LS".into(),
                arguments: arguments("path", HOSTILE),
            }),
            Payload::ExecCommandBegin(pb::ExecCommandBegin {
                exec_id: "x1".into(),
                argv: vec!["bash".into(), "-c".into(), HOSTILE.into()],
                cwd: HOSTILE.into(),
                call_id: "c1".into(),
            }),
            Payload::ExecCommandOutputDelta(pb::ExecCommandOutputDelta {
                exec_id: "x1".into(),
                stream: pb::OutputStream::Stdout.into(),
                text: format!("{HOSTILE}\n"),
            }),
            Payload::ToolCallFinished(pb::ToolCallFinished {
                call_id: "c1".into(),
                tool: "LS".into(),
                success: true,
                result: HOSTILE.into(),
            }),
            Payload::PlanUpdated(pb::PlanUpdated {
                steps: vec![pb::PlanStep {
                    text: HOSTILE.into(),
                    status: pb::PlanStepStatus::Pending.into(),
                }],
            }),
            Payload::ApprovalResolved(pb::ApprovalResolved {
                request_id: "r1".into(),
                decision: pb::ApprovalDecision::Deny.into(),
                resolution: pb::ApprovalResolution::Decided.into(),
                reason: HOSTILE.into(),
            }),
            Payload::ErrorOccurred(pb::ErrorOccurred {
                code: "x".into(),
                message: HOSTILE.into(),
                fatal: false,
            }),
        ]
    }

    /// Issue 23: on a terminal nothing a model or tool wrote reaches it raw; the CLI's own
    /// colours stay.
    #[test]
    fn a_hostile_turn_is_shown_escaped_on_a_terminal() {
        let terminal = Style {
            color: true,
            interactive: true,
            stdout_terminal: true,
            stderr_terminal: true,
        };
        let (out, err) = print_with(terminal, hostile_turn());
        assert_eq!(out, format!("{SHOWN}\n"));
        assert!(!odyssey_visible::has_controls(&out), "{out:?}");
        // The only ESC left on stderr opens or closes the CLI's own dim text.
        let without_own_codes = err.replace("\x1b[2m", "").replace("\x1b[0m", "");
        assert!(
            !odyssey_visible::has_controls(&without_own_codes),
            "{without_own_codes:?}"
        );
        assert!(err.contains("\x1b[2m"), "dim reasoning stays: {err:?}");
        assert!(err.contains(SHOWN), "{err}");
        for line in [
            "→ LS(path=",
            "  $ bash -c ",
            "← ok: ",
            "  [ ] ",
            "✗ denied: ",
        ] {
            assert!(err.contains(line), "{line}: {err}");
        }
    }

    /// Issue 23: with stdout not a terminal the answer is written byte for byte, as `cat`
    /// would; activity on stderr is still escaped.
    #[test]
    fn off_a_terminal_the_answer_is_unchanged() {
        let (out, err) = print(hostile_turn());
        assert_eq!(out, format!("{HOSTILE}\n"));
        assert!(!odyssey_visible::has_controls(&err), "{err:?}");
        assert!(err.contains(SHOWN), "{err}");
    }
}
