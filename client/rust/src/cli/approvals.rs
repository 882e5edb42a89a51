//! `odyssey approvals|approve|deny`: the tool calls waiting for a human, from any shell.
//! The counterpart of `run`'s prompt for turns started elsewhere (`submit`, scripts, other
//! clients), or when `run` is not attached to a terminal.

use std::time::SystemTime;

use odyssey_api::v1 as pb;

use super::error::CliError;
use super::output::Output;
use super::render::shorten;
use super::time::age;
use super::{Global, json};

/// Longest summary in the approvals table.
const SUMMARY_WIDTH: usize = 60;

#[derive(Debug, clap::Args)]
pub(crate) struct ApprovalsArgs {
    /// Only requests of this session.
    #[arg(long, value_name = "SESSION")]
    session: Option<String>,
}

#[derive(Debug, clap::Args)]
pub(crate) struct ApproveArgs {
    /// The request id (shown by `approvals` and in `permission_requested` events).
    request: String,
    /// Also allow this exact call (for Bash, this exact command) for the rest of the
    /// session, until the server restarts.
    #[arg(long)]
    always: bool,
}

#[derive(Debug, clap::Args)]
pub(crate) struct DenyArgs {
    /// The request id (shown by `approvals` and in `permission_requested` events).
    request: String,
    /// Why, for the model: it sees this with the refusal.
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,
}

pub(crate) async fn list(
    args: ApprovalsArgs,
    global: &Global,
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    let approvals = global
        .connect()
        .await?
        .list_approvals(args.session.as_deref())
        .await?;
    show_list(&approvals, SystemTime::now(), output)
}

fn show_list(
    approvals: &[pb::Approval],
    now: SystemTime,
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    if output.json {
        for approval in approvals {
            output.json_line(&json::approval(approval))?;
        }
        return Ok(());
    }
    if approvals.is_empty() {
        output.note("No pending approvals.")?;
        return Ok(());
    }
    let rows: Vec<Vec<String>> = approvals
        .iter()
        .map(|a| {
            vec![
                a.request_id.clone(),
                a.session_id.clone(),
                a.tool.clone(),
                shorten(&a.summary, SUMMARY_WIDTH),
                age(a.requested_at.as_ref(), now),
            ]
        })
        .collect();
    output.table(&["REQUEST", "SESSION", "TOOL", "SUMMARY", "AGE"], &rows)?;
    Ok(())
}

pub(crate) async fn approve(
    args: ApproveArgs,
    global: &Global,
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    let decision = if args.always {
        pb::ApprovalDecision::AllowAlways
    } else {
        pb::ApprovalDecision::AllowOnce
    };
    let resolved = global
        .connect()
        .await?
        .resolve_approval(&args.request, decision, None)
        .await?;
    show_resolved(&args.request, &resolved, output)
}

pub(crate) async fn deny(
    args: DenyArgs,
    global: &Global,
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    let resolved = global
        .connect()
        .await?
        .resolve_approval(
            &args.request,
            pb::ApprovalDecision::Deny,
            args.reason.as_deref(),
        )
        .await?;
    show_resolved(&args.request, &resolved, output)
}

fn show_resolved(
    request_id: &str,
    resolved: &pb::ResolveApprovalResponse,
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    if output.json {
        output.json_line(&json::resolved_approval(resolved))?;
        return Ok(());
    }
    output.line(resolved_line(request_id, resolved))?;
    Ok(())
}

/// `Allowed once: Bash — run `ls` in data/ (request r1, session s1)`.
fn resolved_line(request_id: &str, resolved: &pb::ResolveApprovalResponse) -> String {
    let verb = match pb::ApprovalDecision::try_from(resolved.decision) {
        Ok(pb::ApprovalDecision::AllowOnce) => "Allowed once",
        Ok(pb::ApprovalDecision::AllowAlways) => "Allowed for the rest of the session",
        Ok(pb::ApprovalDecision::Deny) => "Denied",
        Ok(pb::ApprovalDecision::Unspecified) | Err(_) => "Resolved",
    };
    match &resolved.approval {
        Some(a) => {
            let what = if a.summary.trim().is_empty() {
                a.tool.clone()
            } else {
                format!("{} — {}", a.tool, shorten(&a.summary, SUMMARY_WIDTH))
            };
            format!(
                "{verb}: {what} (request {}, session {})",
                a.request_id, a.session_id
            )
        }
        None => format!("{verb}: request {request_id}"),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::cli::output::Style;

    fn pending(id: &str, summary: &str, seconds: i64) -> pb::Approval {
        pb::Approval {
            request_id: id.into(),
            session_id: "s1".into(),
            tool: "Bash".into(),
            summary: summary.into(),
            requested_at: Some(prost_types::Timestamp { seconds, nanos: 0 }),
            ..Default::default()
        }
    }

    fn render(approvals: &[pb::Approval], json: bool) -> (String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut output = Output {
            out: &mut out,
            err: &mut err,
            json,
            style: Style::plain(),
        };
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        show_list(approvals, now, &mut output).unwrap();
        (
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn pending_requests_are_a_table() {
        let (out, _) = render(
            &[
                pending("r1", "run `git push` in data/", 990),
                pending("r22", "write 12 bytes to data/a.md", 700),
            ],
            false,
        );
        assert_eq!(
            out,
            "REQUEST  SESSION  TOOL  SUMMARY                      AGE\n\
             r1       s1       Bash  run `git push` in data/      10s\n\
             r22      s1       Bash  write 12 bytes to data/a.md  5m\n"
        );
    }

    #[test]
    fn no_requests_is_a_note_and_json_is_one_line_each() {
        let (out, err) = render(&[], false);
        assert_eq!(
            (out.as_str(), err.as_str()),
            ("", "No pending approvals.\n")
        );
        let (out, _) = render(&[pending("r1", "x", 0), pending("r2", "y", 0)], true);
        let ids: Vec<String> = out
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["request_id"].to_string()
            })
            .collect();
        assert_eq!(ids, ["\"r1\"", "\"r2\""]);
    }

    #[test]
    fn resolutions_say_what_was_decided() {
        let response = pb::ResolveApprovalResponse {
            approval: Some(pending("r1", "run `ls`", 0)),
            decision: pb::ApprovalDecision::AllowOnce.into(),
        };
        assert_eq!(
            resolved_line("r1", &response),
            "Allowed once: Bash — run `ls` (request r1, session s1)"
        );
        let bare = pb::ResolveApprovalResponse {
            approval: None,
            decision: pb::ApprovalDecision::Deny.into(),
        };
        assert_eq!(resolved_line("r9", &bare), "Denied: request r9");
    }
}
