//! `odyssey run|submit|status|cancel`: turns and their executions.

use odyssey_api::v1 as pb;
use pb::session_event::Payload;
use serde_json::json;

use super::approval::{self, AutoAnswer, Responder};
use super::args::TurnArgs;
use super::error::CliError;
use super::input_request;
use super::output::Output;
use super::printer::TurnPrinter;
use super::{Global, json, render};
use odyssey_client::ClientError;

/// A turn to submit (`submit`, and the first part of `run`).
#[derive(Debug, clap::Args)]
pub(crate) struct SubmitArgs {
    /// The session id.
    session: String,
    /// What to ask.
    prompt: String,
    #[command(flatten)]
    turn: TurnArgs,
}

#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    submit: SubmitArgs,
    #[command(flatten)]
    auto: AutoAnswer,
}

#[derive(Debug, clap::Args)]
pub(crate) struct ExecutionArgs {
    /// The execution id (printed by `submit`; the turn id of its events).
    execution: String,
}

/// Streams one turn. Exits non-zero when the turn did not complete (failed, cancelled,
/// interrupted), so scripts can tell.
///
/// A permission request of the turn is asked on the terminal when there is one; otherwise
/// it is answered by `--auto-approve`/`--auto-deny`, or left to `odyssey approve`/`deny`
/// while the stream goes on (the turn resumes whoever answers).
pub(crate) async fn run(
    args: RunArgs,
    global: &Global,
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    let client = global.connect().await?;
    let submit = args.submit;
    let mut turn = client
        .run_turn(&submit.session, &submit.prompt, submit.turn.overrides())
        .await?;
    let mut responder = Responder::for_run(args.auto, output.style.interactive, &global.server);
    let mut printer = TurnPrinter::default();
    while let Some(event) = turn.next().await? {
        if output.json {
            output.json_line(&json::event(&event)?)?;
        } else {
            printer.event(output, &event)?;
        }
        if let Some(Payload::PermissionRequested(request)) = &event.payload {
            approval::respond(&client, &mut responder, output, request).await?;
        }
        if let Some(Payload::HumanInputRequested(request)) = &event.payload {
            input_request::respond(&client, args.auto, &global.server, output, request).await?;
        }
    }
    let done = turn
        .completion()
        .ok_or_else(|| ClientError::Protocol("the turn ended without turn_completed".into()))?;
    completed_or_error(done)
}

/// `Ok` for a completed turn; the outcome and reason otherwise.
pub(crate) fn completed_or_error(done: &pb::TurnCompleted) -> Result<(), CliError> {
    if done.outcome == i32::from(pb::TurnOutcome::Completed) {
        Ok(())
    } else {
        Err(CliError::TurnNotCompleted {
            outcome: match pb::TurnOutcome::try_from(done.outcome) {
                Ok(pb::TurnOutcome::Failed) => "failed",
                Ok(pb::TurnOutcome::Cancelled) => "was cancelled",
                Ok(pb::TurnOutcome::Interrupted) => "was interrupted (the server stopped)",
                _ => "ended without completing",
            },
            error: done.error.clone(),
        })
    }
}

pub(crate) async fn submit(
    args: SubmitArgs,
    global: &Global,
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    let client = global.connect().await?;
    let submitted = client
        .submit(&args.session, &args.prompt, args.turn.overrides())
        .await?;
    if output.json {
        output.json_line(&json!({
            "execution_id": submitted.execution_id,
            "session_id": submitted.session_id,
        }))?;
    } else {
        output.line(&submitted.execution_id)?;
    }
    Ok(())
}

pub(crate) async fn status(
    args: ExecutionArgs,
    global: &Global,
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    let status = global
        .connect()
        .await?
        .execution_status(&args.execution)
        .await?;
    show(&status, output)
}

pub(crate) async fn cancel(
    args: ExecutionArgs,
    global: &Global,
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    let status = global
        .connect()
        .await?
        .cancel_execution(&args.execution)
        .await?;
    show(&status, output)
}

fn show(status: &pb::ExecutionStatus, output: &mut Output<'_>) -> Result<(), CliError> {
    if output.json {
        output.json_line(&json::message(status)?)?;
        return Ok(());
    }
    let state = pb::ExecutionState::try_from(status.state)
        .map(|s| render::enum_label(s.as_str_name(), "EXECUTION_STATE_"))
        .unwrap_or_else(|_| status.state.to_string());
    let mut fields = vec![
        ("execution", status.execution_id.clone()),
        ("session", status.session_id.clone()),
        ("state", state),
    ];
    if status.first_sequence > 0 {
        let events = if status.last_sequence >= status.first_sequence {
            format!("{}..{}", status.first_sequence, status.last_sequence)
        } else {
            format!("{}..", status.first_sequence)
        };
        fields.push(("events", events));
    }
    if status.usage.is_some() {
        fields.push(("tokens", render::usage(status.usage.as_ref())));
    }
    if !status.error.is_empty() {
        fields.push(("error", status.error.clone()));
    }
    if !status.response.is_empty() {
        fields.push(("response", status.response.clone()));
    }
    output.fields(&fields)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_completed_turns_succeed() {
        let mut done = pb::TurnCompleted {
            outcome: pb::TurnOutcome::Completed.into(),
            ..Default::default()
        };
        assert!(completed_or_error(&done).is_ok());
        done.outcome = pb::TurnOutcome::Cancelled.into();
        done.error = "cancelled by the client".into();
        let error = completed_or_error(&done).unwrap_err();
        assert_eq!(
            error.line(),
            "odyssey: the turn was cancelled: cancelled by the client"
        );
    }
}
