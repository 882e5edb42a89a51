//! Human-readable events: one line per stored event (`events`, `demo`), and the words the
//! live view of a turn (`printer`) shares with it. Text from models, tools and files is
//! shown with its control characters as visible escapes (`odyssey-visible`).

use odyssey_api::v1 as pb;
use pb::session_event::Payload;

use super::call_view::CallView;
use super::json::{event_kind, value_to_json};

/// Longest tool-argument text shown on a tool line.
const ARGS_WIDTH: usize = 80;
/// Longest tool result shown on a tool line.
const RESULT_WIDTH: usize = 100;
/// Longest text shown in an event line's detail column.
const DETAIL_WIDTH: usize = 100;

/// `text` on one line, cut to `max` characters with an ellipsis. Control characters are
/// escaped first, so a `\r` is shown, not taken for a space.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    let escaped = odyssey_visible::escape(text);
    let one_line: String = escaped.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        return one_line;
    }
    let mut cut: String = one_line.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// `"text"` on one line, whole: newlines as `\n`, control characters escaped.
pub(crate) fn quoted(text: &str) -> String {
    format!("\"{}\"", odyssey_visible::escape_line(text))
}

/// `Tool(key=value, ...)`, shortened: strings quoted with their control characters
/// escaped as everywhere else, other values as JSON.
pub(crate) fn tool_call(tool: &str, arguments: Option<&prost_types::Struct>) -> String {
    use prost_types::value::Kind;
    let args = arguments
        .map(|a| {
            a.fields
                .iter()
                .map(|(k, v)| match &v.kind {
                    Some(Kind::StringValue(text)) => format!("{k}={}", quoted(text)),
                    _ => format!("{k}={}", value_to_json(v)),
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    format!(
        "{}({})",
        odyssey_visible::escape_line(tool),
        shorten(&args, ARGS_WIDTH)
    )
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
        Payload::TurnStarted(p) => format!("\"{}\"", shorten(&p.prompt, DETAIL_WIDTH)),
        Payload::TurnCompleted(p) => match pb::TurnOutcome::try_from(p.outcome) {
            Ok(pb::TurnOutcome::Completed) => format!("completed · {}", usage(p.usage.as_ref())),
            _ => format!(
                "{}: {}",
                outcome(p.outcome),
                shorten(&p.error, DETAIL_WIDTH)
            ),
        },
        Payload::AgentMessageDelta(p) => quoted(&p.delta),
        Payload::ReasoningDelta(p) => quoted(&p.delta),
        Payload::ReasoningSectionBreak(_) => String::new(),
        Payload::ToolCallStarted(p) => format!("→ {}", tool_call(&p.tool, p.arguments.as_ref())),
        Payload::ToolCallDelta(p) => {
            format!("{} \"{}\"", p.call_id, shorten(&p.delta, DETAIL_WIDTH))
        }
        Payload::ToolCallFinished(p) => {
            format!("← {} {}", p.tool, tool_result(p.success, &p.result))
        }
        Payload::ExecCommandBegin(p) => command_line(p),
        Payload::ExecCommandOutputDelta(p) => {
            let text = format!("\"{}\"", shorten(&p.text, DETAIL_WIDTH));
            if p.stream == i32::from(pb::OutputStream::Stderr) {
                format!("stderr {text}")
            } else {
                text
            }
        }
        Payload::ExecCommandEnd(p) => exec_end(p),
        Payload::PermissionRequested(p) => format!(
            "{} asks to run: {} [{}]",
            p.tool,
            CallView::of_request(p).one_line(60),
            p.request_id
        ),
        Payload::ApprovalResolved(p) => format!(
            "{} [{}]",
            shorten(&approval_outcome(p), DETAIL_WIDTH),
            p.request_id
        ),
        Payload::PlanUpdated(p) => {
            let done = p
                .steps
                .iter()
                .filter(|s| s.status == i32::from(pb::PlanStepStatus::Completed))
                .count();
            let steps: Vec<String> = p
                .steps
                .iter()
                .map(|s| format!("{} {}", step_mark(s.status), s.text))
                .collect();
            shorten(
                &format!("{done}/{} done: {}", p.steps.len(), steps.join(" · ")),
                DETAIL_WIDTH,
            )
        }
        Payload::TokenUsageReported(p) => format!("turn so far: {}", usage(p.turn_total.as_ref())),
        Payload::ErrorOccurred(p) => {
            let fatal = if p.fatal { " (fatal)" } else { "" };
            format!("{}: {}{fatal}", p.code, shorten(&p.message, DETAIL_WIDTH))
        }
        Payload::HistoryCompacted(p) => history_compacted(p),
        Payload::MemoryRecalled(p) => format!("{} record(s) from earlier sessions", p.records),
        Payload::NetworkConnectionAttempted(p) => network_attempt(p),
        Payload::UserInputAdded(p) => {
            shorten(&format!("steered in: {}", quoted(&p.text)), DETAIL_WIDTH)
        }
        Payload::SessionRewound(p) => format!(
            "back to the end of turn {} ({} later turn(s) left the history)",
            p.to_turn, p.turns_left
        ),
        Payload::SubagentStarted(p) => format!(
            "{} in session {} ({} workspace)",
            p.agent_id, p.child_session_id, p.workspace
        ),
        Payload::HumanInputRequested(p) => format!(
            "MCP server {} asks for input: {} [{}]",
            p.server,
            quoted(&shorten(&p.message, DETAIL_WIDTH)),
            p.request_id
        ),
        Payload::HumanInputAnswered(p) => {
            format!("{} [{}]", input_outcome(p), p.request_id)
        }
        Payload::SubagentFinished(p) => match pb::TurnOutcome::try_from(p.outcome) {
            Ok(pb::TurnOutcome::Completed) => format!(
                "{} in session {}: completed · {}",
                p.agent_id,
                p.child_session_id,
                usage(p.usage.as_ref())
            ),
            _ => format!(
                "{} in session {}: {}: {}",
                p.agent_id,
                p.child_session_id,
                outcome(p.outcome),
                shorten(&p.error, DETAIL_WIDTH)
            ),
        },
    }
}

/// `allowed example.com:443 (93.184.215.14): the name matches …`, or `denied …`.
pub(crate) fn network_attempt(p: &pb::NetworkConnectionAttempted) -> String {
    let verdict = if p.allowed { "allowed" } else { "denied" };
    let address = if p.address.is_empty() {
        String::new()
    } else {
        format!(" ({})", p.address)
    };
    shorten(
        &format!("{verdict} {}:{}{address}: {}", p.host, p.port, p.reason),
        DETAIL_WIDTH,
    )
}

/// `3 turns summarized · ~2400 → ~600 tokens: "The user …"`.
pub(crate) fn history_compacted(p: &pb::HistoryCompacted) -> String {
    shorten(
        &format!(
            "{} turn(s) summarized · ~{} → ~{} tokens: {}",
            p.turns_compacted,
            p.tokens_before,
            p.tokens_after,
            quoted(&p.summary)
        ),
        DETAIL_WIDTH,
    )
}

/// `ok: result` or `error: result`, shortened.
pub(crate) fn tool_result(success: bool, result: &str) -> String {
    let label = if success { "ok" } else { "error" };
    if result.trim().is_empty() {
        label.to_owned()
    } else {
        format!("{label}: {}", shorten(result, RESULT_WIDTH))
    }
}

/// `$ ls -la (in data/src)`: a process about to run.
pub(crate) fn command_line(begin: &pb::ExecCommandBegin) -> String {
    let argv = shorten(&begin.argv.join(" "), DETAIL_WIDTH);
    if begin.cwd.is_empty() {
        format!("$ {argv}")
    } else {
        format!("$ {argv} (in {})", odyssey_visible::escape_line(&begin.cwd))
    }
}

/// `exit 0 after 12 ms`, plus whether it timed out or lost output.
pub(crate) fn exec_end(end: &pb::ExecCommandEnd) -> String {
    let mut text = format!("exit {} after {} ms", end.exit_code, end.duration_ms);
    if end.timed_out {
        text.push_str(" (timed out, killed)");
    }
    if end.output_truncated {
        text.push_str(" (output truncated)");
    }
    text
}

/// How an approval request ended, in words: who decided what, and the reason the model
/// was given for a deny.
/// `accepted`, `declined`, `cancelled: nobody answered in time`, ...
pub(crate) fn input_outcome(answered: &pb::HumanInputAnswered) -> String {
    use pb::{ApprovalResolution as R, HumanInputAction as A};
    let action = match A::try_from(answered.action) {
        Ok(A::Accept) => "accepted",
        Ok(A::Decline) => "declined",
        _ => "cancelled",
    };
    match R::try_from(answered.resolution) {
        Ok(R::TimedOut) => format!("{action}: nobody answered in time"),
        Ok(R::Cancelled) => format!("{action}: the call or the turn ended first"),
        Ok(R::Interrupted) => format!("{action}: the server stopped"),
        _ => action.to_owned(),
    }
}

pub(crate) fn approval_outcome(resolved: &pb::ApprovalResolved) -> String {
    use pb::{ApprovalDecision as D, ApprovalResolution as R};
    let with_reason = |text: &str| {
        if resolved.reason.trim().is_empty() {
            text.to_owned()
        } else {
            format!("{text}: {}", resolved.reason.trim())
        }
    };
    match R::try_from(resolved.resolution) {
        Ok(R::TimedOut) => return with_reason("denied: nobody answered in time"),
        Ok(R::Cancelled) => return with_reason("cancelled with the turn"),
        Ok(R::Interrupted) => return with_reason("interrupted (the server stopped)"),
        Ok(R::Decided | R::Unspecified) | Err(_) => {}
    }
    match D::try_from(resolved.decision) {
        Ok(D::AllowOnce) => "allowed once".to_owned(),
        Ok(D::AllowAlways) => "allowed for the rest of the session (this exact call)".to_owned(),
        // The CLI's and the prompt's reasons already start with "denied".
        Ok(D::Deny) if resolved.reason.trim_start().starts_with("denied") => {
            resolved.reason.trim().to_owned()
        }
        Ok(D::Deny) => with_reason("denied"),
        Ok(D::Unspecified) | Err(_) => with_reason(&format!("resolved ({})", resolved.decision)),
    }
}

/// `[x]` completed, `[>]` in progress, `[ ]` pending: a plan step's checkbox.
pub(crate) fn step_mark(status: i32) -> &'static str {
    match pb::PlanStepStatus::try_from(status) {
        Ok(pb::PlanStepStatus::Completed) => "[x]",
        Ok(pb::PlanStepStatus::InProgress) => "[>]",
        Ok(pb::PlanStepStatus::Pending | pb::PlanStepStatus::Unspecified) | Err(_) => "[ ]",
    }
}

/// `   12  agent_message_delta        "Hello"`: sequence, kind, detail, on one line
/// whatever the detail holds.
pub(crate) fn event_line(event: &pb::SessionEvent) -> String {
    format!(
        "{:>6}  {:<26} {}",
        event.sequence,
        event_kind(event),
        odyssey_visible::escape_line(&detail(event))
    )
    .trim_end()
    .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn lines(payloads: Vec<Payload>) -> Vec<String> {
        payloads
            .into_iter()
            .enumerate()
            .map(|(i, payload)| event_line(&event(i as u64 + 1, payload)))
            .collect()
    }

    #[test]
    fn approval_events_read_as_sentences() {
        let request = crate::prompt::tests::bash_request("git push");
        let resolved =
            |decision: pb::ApprovalDecision, resolution: pb::ApprovalResolution, reason: &str| {
                Payload::ApprovalResolved(pb::ApprovalResolved {
                    request_id: "req-1".into(),
                    decision: decision.into(),
                    resolution: resolution.into(),
                    reason: reason.into(),
                })
            };
        use pb::{ApprovalDecision as D, ApprovalResolution as R};
        assert_eq!(
            lines(vec![
                Payload::PermissionRequested(request),
                resolved(D::AllowOnce, R::Decided, ""),
                resolved(D::AllowAlways, R::Decided, ""),
                resolved(D::Deny, R::Decided, "not on main"),
                resolved(D::Deny, R::TimedOut, ""),
                resolved(D::Deny, R::Cancelled, ""),
            ]),
            [
                "     1  permission_requested       Bash asks to run: git push [req-1]",
                "     2  approval_resolved          allowed once [req-1]",
                "     3  approval_resolved          allowed for the rest of the session (this exact call) [req-1]",
                "     4  approval_resolved          denied: not on main [req-1]",
                "     5  approval_resolved          denied: nobody answered in time [req-1]",
                "     6  approval_resolved          cancelled with the turn [req-1]",
            ]
        );
    }

    #[test]
    fn memory_events_read_as_lines() {
        assert_eq!(
            lines(vec![
                Payload::MemoryRecalled(pb::MemoryRecalled {
                    records: 2,
                    section: "## Memory".into(),
                }),
                Payload::HistoryCompacted(pb::HistoryCompacted {
                    summary: "The user picked teal.".into(),
                    through_turn_id: "t3".into(),
                    turns_compacted: 3,
                    tokens_before: 2400,
                    tokens_after: 600,
                    usage: None,
                }),
                Payload::ErrorOccurred(pb::ErrorOccurred {
                    code: "history_compaction_failed".into(),
                    message: "no summary".into(),
                    fatal: false,
                }),
            ]),
            [
                "     1  memory_recalled            2 record(s) from earlier sessions",
                "     2  history_compacted          3 turn(s) summarized · ~2400 → ~600 tokens: \"The user picked teal.\"",
                "     3  error_occurred             history_compaction_failed: no summary",
            ]
        );
    }

    #[test]
    fn network_connection_attempts_say_allowed_or_denied_and_why() {
        let attempt = |host: &str, address: &str, allowed: bool, reason: &str| {
            Payload::NetworkConnectionAttempted(pb::NetworkConnectionAttempted {
                host: host.into(),
                port: 443,
                address: address.into(),
                allowed,
                reason: reason.into(),
            })
        };
        assert_eq!(
            lines(vec![
                attempt(
                    "files.pypi.org",
                    "151.101.0.223",
                    true,
                    "the name matches `*.pypi.org` and 151.101.0.223 is a public address"
                ),
                attempt(
                    "pypi.org",
                    "",
                    false,
                    "`pypi.org` is not in the bundle's network list"
                ),
            ]),
            [
                "     1  network_connection_attempted allowed files.pypi.org:443 (151.101.0.223): the name matches `*.pypi.org` and 151.101.0.223 is a pu…",
                "     2  network_connection_attempted denied pypi.org:443: `pypi.org` is not in the bundle's network list",
            ]
        );
    }

    #[test]
    fn tool_exec_and_plan_events_read_as_lines() {
        let mut args = std::collections::BTreeMap::new();
        args.insert(
            "command".to_owned(),
            prost_types::Value::from("ls".to_owned()),
        );
        assert_eq!(
            lines(vec![
                Payload::ToolCallStarted(pb::ToolCallStarted {
                    call_id: "c1".into(),
                    tool: "Bash".into(),
                    arguments: Some(prost_types::Struct { fields: args }),
                }),
                Payload::ExecCommandBegin(pb::ExecCommandBegin {
                    exec_id: "x1".into(),
                    argv: vec!["bash".into(), "-c".into(), "ls".into()],
                    cwd: "data".into(),
                    call_id: "c1".into(),
                }),
                Payload::ExecCommandOutputDelta(pb::ExecCommandOutputDelta {
                    exec_id: "x1".into(),
                    stream: pb::OutputStream::Stdout.into(),
                    text: "README.md\nnotes\n".into(),
                }),
                Payload::ExecCommandOutputDelta(pb::ExecCommandOutputDelta {
                    exec_id: "x1".into(),
                    stream: pb::OutputStream::Stderr.into(),
                    text: "warning".into(),
                }),
                Payload::ExecCommandEnd(pb::ExecCommandEnd {
                    exec_id: "x1".into(),
                    exit_code: 0,
                    duration_ms: 12,
                    timed_out: false,
                    output_truncated: true,
                }),
                Payload::ToolCallFinished(pb::ToolCallFinished {
                    call_id: "c1".into(),
                    tool: "Bash".into(),
                    success: true,
                    result: "README.md\nnotes".into(),
                }),
                Payload::PlanUpdated(pb::PlanUpdated {
                    steps: vec![
                        pb::PlanStep {
                            text: "list".into(),
                            status: pb::PlanStepStatus::Completed.into(),
                        },
                        pb::PlanStep {
                            text: "read".into(),
                            status: pb::PlanStepStatus::InProgress.into(),
                        },
                        pb::PlanStep {
                            text: "run".into(),
                            status: pb::PlanStepStatus::Pending.into(),
                        },
                    ],
                }),
            ]),
            [
                "     1  tool_call_started          → Bash(command=\"ls\")",
                "     2  exec_command_begin         $ bash -c ls (in data)",
                "     3  exec_command_output_delta  \"README.md notes\"",
                "     4  exec_command_output_delta  stderr \"warning\"",
                "     5  exec_command_end           exit 0 after 12 ms (output truncated)",
                "     6  tool_call_finished         ← Bash ok: README.md notes",
                "     7  plan_updated               1/3 done: [x] list · [>] read · [ ] run",
            ]
        );
    }

    /// Issue 23: `odyssey events` lines show what models, tools and files wrote with
    /// control characters as escapes, whatever the event.
    #[test]
    fn event_lines_never_carry_control_characters() {
        let hostile = "x\x1b]0;TITLE\x07\r\x1b[2Ky\u{202e}z";
        let mut args = std::collections::BTreeMap::new();
        args.insert(
            "command".to_owned(),
            prost_types::Value::from(hostile.to_owned()),
        );
        let mut request = crate::prompt::tests::bash_request(hostile);
        request.display = String::new();
        let all = lines(vec![
            Payload::TurnStarted(pb::TurnStarted {
                prompt: hostile.into(),
                ..Default::default()
            }),
            Payload::AgentMessageDelta(pb::AgentMessageDelta {
                delta: hostile.into(),
            }),
            Payload::ReasoningDelta(pb::ReasoningDelta {
                delta: hostile.into(),
            }),
            Payload::ToolCallStarted(pb::ToolCallStarted {
                call_id: "c1".into(),
                tool: "Bash".into(),
                arguments: Some(prost_types::Struct { fields: args }),
            }),
            Payload::ToolCallDelta(pb::ToolCallDelta {
                call_id: "c1".into(),
                delta: hostile.into(),
            }),
            Payload::ToolCallFinished(pb::ToolCallFinished {
                call_id: "c1".into(),
                tool: hostile.into(),
                success: true,
                result: hostile.into(),
            }),
            Payload::ExecCommandOutputDelta(pb::ExecCommandOutputDelta {
                exec_id: "x1".into(),
                stream: pb::OutputStream::Stdout.into(),
                text: hostile.into(),
            }),
            Payload::PermissionRequested(request),
            Payload::HistoryCompacted(pb::HistoryCompacted {
                summary: hostile.into(),
                ..Default::default()
            }),
            Payload::ErrorOccurred(pb::ErrorOccurred {
                code: "c".into(),
                message: hostile.into(),
                fatal: false,
            }),
        ]);
        for line in &all {
            assert!(!odyssey_visible::has_controls(line), "{line:?}");
        }
        assert_eq!(
            all[1],
            "     2  agent_message_delta        \"x\\x1b]0;TITLE\\x07\\r\\x1b[2Ky\\u202ez\""
        );
        assert!(
            all[7].ends_with("Bash asks to run: x\\x1b]0;TITLE\\x07\\r\\x1b[2Ky\\u202ez [contains control characters] [req-1]"),
            "{}",
            all[7]
        );
    }
}
