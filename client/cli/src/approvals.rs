//! `odyssey approvals|approve|deny`: the tool calls waiting for a human, and the MCP
//! servers' requests for input, from any shell.
//! The counterpart of `run`'s prompt for turns started elsewhere (`submit`, scripts, other
//! clients), or when `run` is not attached to a terminal.
//!
//! Calls are shown as the server's display form ([`CallView`]): control characters as
//! visible escapes, flagged; a call cut to fit the table says so, and `--full` shows every
//! call whole.

use std::time::SystemTime;

use odyssey_api::v1 as pb;
use odyssey_api::v1::watch_approvals_response::Item;
use odyssey_client::{ApprovalsChange, ReconnectPolicy};

use super::call_view::{CallView, SEE_ALL};
use super::error::CliError;
use super::input_request;
use super::output::Output;
use super::time::age;
use super::{Global, json};

/// Longest call in the approvals table.
const CALL_WIDTH: usize = 60;

#[derive(Debug, clap::Args)]
pub(crate) struct ApprovalsArgs {
    /// Only requests of this session.
    #[arg(long, value_name = "SESSION")]
    session: Option<String>,
    /// Show each call whole, one request after the other, instead of a table (where
    /// long calls are cut).
    #[arg(long)]
    full: bool,
    /// Keep watching: after the pending requests, print each request filed (`+`) and each
    /// that ends (`-`, with how), until interrupted. With --json, one WatchApprovals
    /// message per line.
    #[arg(long)]
    watch: bool,
}

#[derive(Debug, clap::Args)]
pub(crate) struct ApproveArgs {
    /// The request id (shown by `approvals` and in `permission_requested` events).
    request: String,
    /// Also allow this exact call (for Bash, this exact command) for the rest of the
    /// session, until the server restarts.
    #[arg(long, conflicts_with = "answer")]
    always: bool,
    /// For a request for input (an MCP server's question): the answer, a JSON object of
    /// the requested fields (`{"name": "Ada"}`). Without it, each field is asked on the
    /// terminal.
    #[arg(long, value_name = "JSON")]
    answer: Option<String>,
}

#[derive(Debug, clap::Args)]
pub(crate) struct DenyArgs {
    /// The request id (shown by `approvals` and in `permission_requested` events).
    request: String,
    /// Why, for the model: it sees this with the refusal.
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,
    /// For a request for input: cancel it (dismissed without a choice) instead of
    /// declining it.
    #[arg(long, conflicts_with = "reason")]
    cancel: bool,
}

pub(crate) async fn list(
    args: ApprovalsArgs,
    global: &Global,
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    let client = global.connect().await?;
    if args.watch {
        return watch(&client, &args, output).await;
    }
    let approvals = client.list_approvals(args.session.as_deref()).await?;
    show_list(&approvals, SystemTime::now(), args.full, output)
}

/// `approvals --watch`: the pending requests, then every change, as it happens.
async fn watch(
    client: &odyssey_client::OdysseyClient,
    args: &ApprovalsArgs,
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    let mut watcher = client
        .watch_approvals(args.session.as_deref(), ReconnectPolicy::default())
        .await?;
    while let Some(change) = watcher.next().await? {
        if output.json {
            let item = match change {
                ApprovalsChange::Snapshot(approvals) => {
                    Item::Snapshot(pb::ApprovalSnapshot { approvals })
                }
                ApprovalsChange::Added(a) => Item::Added(a),
                ApprovalsChange::Removed(r) => Item::Removed(r),
            };
            let message = pb::WatchApprovalsResponse { item: Some(item) };
            output.json_line(&json::message(&message)?)?;
            continue;
        }
        match change {
            ApprovalsChange::Snapshot(approvals) => {
                show_list(&approvals, SystemTime::now(), args.full, output)?;
            }
            ApprovalsChange::Added(a) => output.line(added_text(&a, args.full))?,
            ApprovalsChange::Removed(r) => output.line(removed_text(&r))?,
        }
    }
    Ok(())
}

/// `+ request r1 · session s1 · Bash: git push`: a request filed, its call on one line
/// (whole with `--full`, indented below).
fn added_text(a: &pb::Approval, full: bool) -> String {
    let view = CallView::of_approval(a);
    let head = format!(
        "+ request {} · session {} · {}",
        a.request_id, a.session_id, a.tool
    );
    if !full {
        // The one-line form flags control characters itself.
        return format!("{head}: {}", view.one_line(CALL_WIDTH));
    }
    let mut text = format!("{head}\n{}", view.full("    "));
    if view.control_characters() {
        text.push_str(&format!("\n    ! {}", super::call_view::CONTROL_NOTE));
    }
    text
}

/// `- request r1: denied (not today)`: a request that ended, and how.
fn removed_text(r: &pb::ApprovalResolved) -> String {
    let how = match pb::ApprovalResolution::try_from(r.resolution) {
        Ok(pb::ApprovalResolution::TimedOut) => "timed out (denied)",
        Ok(pb::ApprovalResolution::Cancelled) => "cancelled",
        Ok(pb::ApprovalResolution::Interrupted) => "interrupted by a shutdown",
        _ => match pb::ApprovalDecision::try_from(r.decision) {
            Ok(pb::ApprovalDecision::AllowOnce) => "allowed once",
            Ok(pb::ApprovalDecision::AllowAlways) => "allowed for the rest of the session",
            Ok(pb::ApprovalDecision::Deny) => "denied",
            Ok(pb::ApprovalDecision::Unspecified) | Err(_) => "resolved",
        },
    };
    let reason = odyssey_visible::escape_line(&r.reason);
    if reason.is_empty() {
        format!("- request {}: {how}", r.request_id)
    } else {
        format!("- request {}: {how} ({reason})", r.request_id)
    }
}

fn show_list(
    approvals: &[pb::Approval],
    now: SystemTime,
    full: bool,
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    if output.json {
        for approval in approvals {
            output.json_line(&json::message(approval)?)?;
        }
        return Ok(());
    }
    if approvals.is_empty() {
        output.note("No pending approvals.")?;
        return Ok(());
    }
    if full {
        for (i, a) in approvals.iter().enumerate() {
            if i > 0 {
                output.line("")?;
            }
            output.line(format!(
                "request {} · session {} · {} · waiting {}",
                a.request_id,
                a.session_id,
                a.tool,
                age(a.requested_at.as_ref(), now)
            ))?;
            if input_request::is_input(a) {
                output.line(format!("    {} asks for input:", a.summary))?;
                output.line(input_request::block(a, "    "))?;
                continue;
            }
            let view = CallView::of_approval(a);
            output.line(view.full("    "))?;
            if view.control_characters() {
                output.line(format!("    ! {}", super::call_view::CONTROL_NOTE))?;
            }
        }
        return Ok(());
    }
    let mut cut = false;
    let mut inputs = false;
    let rows: Vec<Vec<String>> = approvals
        .iter()
        .map(|a| {
            let view = CallView::of_approval(a);
            cut |= view.cut_at(CALL_WIDTH);
            if input_request::is_input(a) {
                inputs = true;
                return vec![
                    a.request_id.clone(),
                    a.session_id.clone(),
                    a.tool.clone(),
                    format!("asks for input: {}", view.one_line(CALL_WIDTH)),
                    age(a.requested_at.as_ref(), now),
                ];
            }
            vec![
                a.request_id.clone(),
                a.session_id.clone(),
                a.tool.clone(),
                view.one_line(CALL_WIDTH),
                age(a.requested_at.as_ref(), now),
            ]
        })
        .collect();
    output.table(&["REQUEST", "SESSION", "TOOL", "CALL", "AGE"], &rows)?;
    if cut {
        output.note(format!(
            "Some calls are cut to fit: {SEE_ALL} shows each whole."
        ))?;
    }
    if inputs {
        output.note(
            "Requests for input: --full shows the fields asked; answer with `odyssey approve \
             REQUEST --answer JSON` (or field by field on a terminal), refuse with `odyssey deny`.",
        )?;
    }
    Ok(())
}

pub(crate) async fn approve(
    args: ApproveArgs,
    global: &Global,
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    let client = global.connect().await?;
    if let Some(answer) = &args.answer {
        let answer = input_request::parse_answer(answer)?;
        let resolved = client
            .resolve_input(&args.request, pb::HumanInputAction::Accept, Some(answer))
            .await?;
        return show_resolved(&args.request, &resolved, output);
    }
    // A request for input is answered field by field, on the terminal.
    let pending = client.list_approvals(None).await?;
    if let Some(asked) = pending
        .iter()
        .find(|a| a.request_id == args.request && input_request::is_input(a))
    {
        if !output.style.interactive {
            return Err(CliError::Usage(format!(
                "request {} asks for input: give the answer with --answer JSON (its fields: {})",
                args.request,
                input_request::fields(asked).join("; ")
            )));
        }
        let answer = {
            let stdin = std::io::stdin();
            let mut input = stdin.lock();
            input_request::prompt(asked, &mut input, &mut *output.err)?
        };
        let resolved = client
            .resolve_input(&args.request, pb::HumanInputAction::Accept, Some(answer))
            .await?;
        return show_resolved(&args.request, &resolved, output);
    }
    let decision = if args.always {
        pb::ApprovalDecision::AllowAlways
    } else {
        pb::ApprovalDecision::AllowOnce
    };
    let resolved = client
        .resolve_approval(&args.request, decision, None)
        .await?;
    show_resolved(&args.request, &resolved, output)
}

pub(crate) async fn deny(
    args: DenyArgs,
    global: &Global,
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    let client = global.connect().await?;
    let resolved = if args.cancel {
        client
            .resolve_input(&args.request, pb::HumanInputAction::Cancel, None)
            .await?
    } else {
        // A deny of a request for input declines it.
        client
            .resolve_approval(
                &args.request,
                pb::ApprovalDecision::Deny,
                args.reason.as_deref(),
            )
            .await?
    };
    show_resolved(&args.request, &resolved, output)
}

fn show_resolved(
    request_id: &str,
    resolved: &pb::ResolveApprovalResponse,
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    if output.json {
        output.json_line(&json::message(resolved)?)?;
        return Ok(());
    }
    output.line(resolved_text(request_id, resolved))?;
    Ok(())
}

/// `Allowed once: Bash (request r1, session s1)`, then the call it allowed, whole or with
/// what was cut, and whether it holds control characters.
fn resolved_text(request_id: &str, resolved: &pb::ResolveApprovalResponse) -> String {
    if let Some(a) = resolved
        .approval
        .as_ref()
        .filter(|a| input_request::is_input(a))
    {
        let verb = match pb::ApprovalDecision::try_from(resolved.decision) {
            Ok(pb::ApprovalDecision::AllowOnce | pb::ApprovalDecision::AllowAlways) => "Answered",
            _ => "Refused",
        };
        return format!(
            "{verb}: {} (request {}, session {})\n{}",
            a.summary,
            a.request_id,
            a.session_id,
            input_request::block(a, "    ")
        );
    }
    let verb = match pb::ApprovalDecision::try_from(resolved.decision) {
        Ok(pb::ApprovalDecision::AllowOnce) => "Allowed once",
        Ok(pb::ApprovalDecision::AllowAlways) => "Allowed for the rest of the session",
        Ok(pb::ApprovalDecision::Deny) => "Denied",
        Ok(pb::ApprovalDecision::Unspecified) | Err(_) => "Resolved",
    };
    match &resolved.approval {
        Some(a) => format!(
            "{verb}: {} (request {}, session {})\n{}",
            a.tool,
            a.request_id,
            a.session_id,
            CallView::of_approval(a).block(
                "    ",
                &format!(
                    "the session's events hold it whole (odyssey events --json {})",
                    a.session_id
                )
            )
        ),
        None => format!("{verb}: request {request_id}"),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::output::Style;

    /// A pending Bash request as a server sends it: the display form is the escaped
    /// command.
    fn pending(id: &str, command: &str, seconds: i64) -> pb::Approval {
        pb::Approval {
            request_id: id.into(),
            session_id: "s1".into(),
            tool: "Bash".into(),
            summary: command.into(),
            display: odyssey_visible::escape(command).into_owned(),
            control_characters: odyssey_visible::has_controls(command),
            requested_at: Some(prost_types::Timestamp { seconds, nanos: 0 }),
            ..Default::default()
        }
    }

    fn render(approvals: &[pb::Approval], json: bool, full: bool) -> (String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut output = Output {
            out: &mut out,
            err: &mut err,
            json,
            style: Style::plain(),
        };
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        show_list(approvals, now, full, &mut output).unwrap();
        (
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn watched_changes_are_one_line_each_with_how_a_request_ended() {
        assert_eq!(
            added_text(&pending("r1", "git push", 990), false),
            "+ request r1 · session s1 · Bash: git push"
        );
        let hidden = added_text(&pending("r2", "ls \x1b[2K", 990), false);
        assert!(hidden.contains("ls \\x1b[2K"), "{hidden}");
        assert!(hidden.contains("[contains control characters]"), "{hidden}");
        let whole = added_text(&pending("r2", "ls \x1b[2K", 990), true);
        assert!(whole.contains(crate::call_view::CONTROL_NOTE), "{whole}");
        let denied = pb::ApprovalResolved {
            request_id: "r1".into(),
            decision: pb::ApprovalDecision::Deny as i32,
            resolution: pb::ApprovalResolution::Decided as i32,
            reason: "not\x1b[31m\nnow".into(),
        };
        assert_eq!(
            removed_text(&denied),
            "- request r1: denied (not\\x1b[31m\\nnow)"
        );
        let timed_out = pb::ApprovalResolved {
            resolution: pb::ApprovalResolution::TimedOut as i32,
            reason: String::new(),
            ..denied
        };
        assert_eq!(removed_text(&timed_out), "- request r1: timed out (denied)");
    }

    #[test]
    fn pending_requests_are_a_table() {
        let (out, err) = render(
            &[
                pending("r1", "git push", 990),
                pending("r22", "cat <<EOF > a.md\nhi\nEOF", 700),
            ],
            false,
            false,
        );
        assert_eq!(
            out,
            "REQUEST  SESSION  TOOL  CALL                       AGE\n\
             r1       s1       Bash  git push                   10s\n\
             r22      s1       Bash  cat <<EOF > a.md\\nhi\\nEOF  5m\n"
        );
        assert_eq!(err, "");
    }

    /// Issue 23: a command that would erase itself on a terminal is listed as it is,
    /// flagged; a long one says how long it is, and `--full` shows every call whole.
    #[test]
    fn hidden_and_long_calls_are_shown_and_never_cut_silently() {
        let hidden = "rm -rf ~/important \r\x1b[2Kls -la";
        let long = format!("echo {}", "x".repeat(200));
        let approvals = [pending("r1", hidden, 990), pending("r2", &long, 990)];
        let (out, err) = render(&approvals, false, false);
        assert!(
            out.contains("rm -rf ~/important \\r\\x1b[2Kls -la [contains control characters]"),
            "{out}"
        );
        assert!(out.contains("… (205 characters)"), "{out}");
        assert!(!odyssey_visible::has_controls(&out), "{out:?}");
        assert_eq!(
            err,
            "Some calls are cut to fit: odyssey approvals --full shows each whole.\n"
        );
        let (out, _) = render(&approvals, false, true);
        assert_eq!(
            out,
            format!(
                "request r1 · session s1 · Bash · waiting 10s\n    \
                 rm -rf ~/important \\r\\x1b[2Kls -la\n    ! {}\n\n\
                 request r2 · session s1 · Bash · waiting 10s\n    {long}\n",
                crate::call_view::CONTROL_NOTE
            )
        );
    }

    #[test]
    fn no_requests_is_a_note_and_json_is_one_line_each() {
        let (out, err) = render(&[], false, false);
        assert_eq!(
            (out.as_str(), err.as_str()),
            ("", "No pending approvals.\n")
        );
        let (out, _) = render(
            &[pending("r1", "x", 0), pending("r2", "y\u{202e}", 0)],
            true,
            false,
        );
        let lines: Vec<serde_json::Value> = out
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .collect();
        assert_eq!(lines[0]["requestId"], "r1");
        assert_eq!(lines[1]["requestId"], "r2");
        assert_eq!(lines[1]["summary"], "y\u{202e}");
        assert_eq!(lines[1]["display"], "y\\u202e");
        assert_eq!(lines[1]["controlCharacters"], true);
        assert!(!odyssey_visible::has_controls(&out), "{out:?}");
    }

    #[test]
    fn resolutions_say_what_was_decided() {
        let response = pb::ResolveApprovalResponse {
            approval: Some(pending("r1", "ls", 0)),
            decision: pb::ApprovalDecision::AllowOnce.into(),
        };
        assert_eq!(
            resolved_text("r1", &response),
            "Allowed once: Bash (request r1, session s1)\n    ls"
        );
        let hidden = pb::ResolveApprovalResponse {
            approval: Some(pending("r1", "ls \x1b]0;title\x07", 0)),
            decision: pb::ApprovalDecision::Deny.into(),
        };
        assert_eq!(
            resolved_text("r1", &hidden),
            format!(
                "Denied: Bash (request r1, session s1)\n    ls \\x1b]0;title\\x07\n    ! {}",
                crate::call_view::CONTROL_NOTE
            )
        );
        let bare = pb::ResolveApprovalResponse {
            approval: None,
            decision: pb::ApprovalDecision::Deny.into(),
        };
        assert_eq!(resolved_text("r9", &bare), "Denied: request r9");
    }
}
