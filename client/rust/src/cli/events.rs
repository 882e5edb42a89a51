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
    // Without --follow the command stops at the log's end as it is now, so it needs to know
    // where that is before it starts reading.
    let stop_at = if args.follow {
        None
    } else {
        let last = client.get_session(&args.session).await?.last_sequence;
        if last <= args.after {
            return Ok(());
        }
        Some(last)
    };
    let mut events = client.subscribe(&args.session, args.after).await?;
    while let Some(event) = events.next().await? {
        if output.json {
            output.json_line(&json::event(&event))?;
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
