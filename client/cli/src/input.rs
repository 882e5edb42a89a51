//! `odyssey send --steer|--queue|--interrupt SESSION TEXT`: input while a turn runs.

use odyssey_api::v1 as pb;

use super::error::CliError;
use super::output::Output;
use super::{Global, json};

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("mode").required(true).multiple(false)))]
pub(crate) struct SendArgs {
    /// Add the text to the running turn before its next model call.
    #[arg(long, group = "mode")]
    steer: bool,
    /// Run the text as a new turn after the running and queued ones.
    #[arg(long, group = "mode")]
    queue: bool,
    /// Stop the running turn and run the text as the next turn.
    #[arg(long, group = "mode")]
    interrupt: bool,
    /// The session id.
    session: String,
    /// The input.
    text: String,
}

impl SendArgs {
    fn mode(&self) -> pb::InputMode {
        if self.steer {
            pb::InputMode::Steer
        } else if self.queue {
            pb::InputMode::Queue
        } else {
            pb::InputMode::Interrupt
        }
    }
}

/// Prints the execution that carries the input (to follow with `status` or `events`), and
/// on stderr what became of it.
pub(crate) async fn send(
    args: SendArgs,
    global: &Global,
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    let sent = global
        .connect()
        .await?
        .send_input(&args.session, &args.text, args.mode())
        .await?;
    if output.json {
        output.json_line(&json::message(&sent)?)?;
        return Ok(());
    }
    output.line(&sent.execution_id)?;
    output.note(what_happened(&sent))?;
    Ok(())
}

fn what_happened(sent: &pb::SendInputResponse) -> String {
    let id = &sent.execution_id;
    match pb::InputDisposition::try_from(sent.disposition) {
        Ok(pb::InputDisposition::Steered) => format!("steered into the running turn {id}"),
        Ok(pb::InputDisposition::Queued) => format!("queued as turn {id}"),
        Ok(pb::InputDisposition::Interrupted) => format!(
            "interrupted turn {} and started {id}",
            sent.interrupted_execution_id
        ),
        Ok(pb::InputDisposition::Started) => format!("no turn was running: started {id}"),
        _ => format!("sent as {id}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_disposition_says_which_turns_to_follow() {
        let sent = |disposition: pb::InputDisposition| pb::SendInputResponse {
            session_id: "s".into(),
            disposition: disposition.into(),
            execution_id: "new".into(),
            interrupted_execution_id: "old".into(),
        };
        assert_eq!(
            what_happened(&sent(pb::InputDisposition::Steered)),
            "steered into the running turn new"
        );
        assert_eq!(
            what_happened(&sent(pb::InputDisposition::Interrupted)),
            "interrupted turn old and started new"
        );
        assert_eq!(
            what_happened(&sent(pb::InputDisposition::Started)),
            "no turn was running: started new"
        );
    }
}
