//! `odyssey events SESSION`: the session's stored events from a sequence on, and with
//! `--follow` the live ones after them, resuming across disconnects.

use super::error::CliError;
use super::output::Output;
use super::{Global, json, render};

#[derive(Debug, clap::Args)]
pub(crate) struct EventsArgs {
    /// The session id.
    session: String,
    /// Print events after this sequence (0 = from the first).
    #[arg(long, value_name = "N", default_value_t = 0)]
    after: u64,
    /// Keep streaming new events until interrupted (or the session is deleted).
    #[arg(long)]
    follow: bool,
}

pub(crate) async fn run(
    args: EventsArgs,
    global: &Global,
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    let client = global.connect().await?;
    // Where the log ends now: without --follow the command stops there, and a start past
    // it (with or without --follow) is a mistake worth saying, not an empty answer.
    let last = client.get_session(&args.session).await?.last_sequence;
    if args.after > last {
        return Err(CliError::PastTheEnd {
            session: args.session,
            after: args.after,
            last,
        });
    }
    let stop_at = if args.follow {
        None
    } else if last == args.after {
        return Ok(());
    } else {
        Some(last)
    };
    let mut events = client.subscribe(&args.session, args.after).await?;
    while let Some(event) = events.next().await? {
        if output.json {
            output.json_line(&json::event(&event)?)?;
        } else {
            output.line(render::event_line(&event))?;
            output.out.flush()?;
        }
        if stop_at.is_some_and(|last| event.sequence >= last) {
            break;
        }
    }
    Ok(())
}
