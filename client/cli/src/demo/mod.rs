//! `odyssey demo`: the whole system in one command, with no network and no API key. It
//! starts a server in-process on a free loopback port with a throwaway home, installs the
//! embedded demo bundle through the real gRPC API, opens a session, streams one turn
//! (the recorded `replay` model answers), prints a summary and stops the server.
//!
//! The turn asks for approval before it runs a command: on a terminal the demo asks, as
//! `odyssey run` does; elsewhere (CI, pipes) it denies and says so, because nobody could
//! answer: the embedded server is unreachable from other shells.

mod files;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use odyssey_api::v1 as pb;
use odyssey_server::config::ServeArgs;
use odyssey_server::serve::start;
use pb::session_event::Payload;
use serde_json::json;

use self::files::demo_files;
use super::approval::{self, Responder};
use super::args::model_arg;
use super::bundle::reference_of;
use super::error::CliError;
use super::execution::completed_or_error;
use super::output::Output;
use super::{json, render};
use odyssey_client::ClientError;
use odyssey_client::OdysseyClient;
use odyssey_client::SessionOptions;
use odyssey_client::format_model;
use odyssey_client::pack_files;

/// What the demo asks the guide agent.
const PROMPT: &str = "Give me a tour of this turn.";

#[derive(Debug, clap::Args)]
pub(crate) struct DemoArgs {
    /// Use a real model instead of the recorded answer, e.g. openai/gpt-4.1-mini (the
    /// embedded server reads OPENAI_API_KEY from this environment).
    #[arg(long, value_name = "PROVIDER/NAME", value_parser = model_arg)]
    model: Option<pb::ModelSpec>,
    /// Keep the temporary server home (bundles, sessions, event logs) and print its path.
    #[arg(long, conflicts_with = "home")]
    keep: bool,
    /// Use this folder as the server home instead of a temporary one; it is kept.
    #[arg(long, value_name = "DIR")]
    home: Option<PathBuf>,
}

pub(crate) async fn run(args: DemoArgs, output: &mut Output<'_>) -> Result<(), CliError> {
    let (home, temporary) = match &args.home {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| CliError::file("cannot create", dir, e))?;
            (dir.clone(), None)
        }
        None => {
            let dir = tempfile::Builder::new()
                .prefix("odyssey-demo-")
                .tempdir()
                .map_err(|e| {
                    CliError::file("cannot create a temporary home in", std::env::temp_dir(), e)
                })?;
            (dir.path().to_path_buf(), Some(dir))
        }
    };
    let listen = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    let server = start(&ServeArgs::new(listen, home.clone())).await?;
    let kept = temporary.is_none() || args.keep;
    // Ctrl-C still shuts the server down and removes the temporary home.
    let url = server.url();
    let result = tokio::select! {
        result = tour(&url, &args, &home, kept, output) => result,
        _ = tokio::signal::ctrl_c() => Err(CliError::Interrupted),
    };
    let stopped = server.shutdown().await.map_err(CliError::from);
    // Without --keep the temporary home is removed when `temporary` drops.
    if let Some(dir) = temporary.filter(|_| args.keep) {
        let path = dir.keep();
        if !output.json {
            output.note(format!("Kept the server home at {}", path.display()))?;
        }
    }
    result.and(stopped)
}

/// Everything a user would do by hand, through the SDK over real gRPC.
async fn tour(
    url: &str,
    args: &DemoArgs,
    home: &Path,
    kept: bool,
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    let human = !output.json;
    if human {
        let home_note = if kept {
            String::new()
        } else {
            " (temporary; --keep keeps it)".to_owned()
        };
        output.line("Odyssey demo: a server, a bundle, a session and one streamed turn.")?;
        output.line("")?;
        output.line(format!("Started an embedded server on {url}"))?;
        output.line(format!("  home {}{home_note}", home.display()))?;
    }
    let client = OdysseyClient::connect(url, None).await?;

    let files = demo_files();
    let archive = pack_files(&files)?;
    // The demo owns its bundle: replace an older demo of the same version left in a --home.
    let bundle = client.build_bundle(archive, "", true).await?;
    let reference = reference_of(&bundle);
    if human {
        let digest = bundle
            .r#ref
            .as_ref()
            .map(|r| r.digest.as_str())
            .unwrap_or_default();
        output.line(format!(
            "Installed {reference} with BuildBundle ({} files, {})",
            files.len(),
            render::shorten(digest, 20)
        ))?;
    }

    let options = SessionOptions {
        model: args.model.clone(),
        ..SessionOptions::default()
    };
    let session = client.create_session(&reference, options).await?;
    if human {
        output.line(format!(
            "Opened session {} (agent {}, model {})",
            session.id,
            session.agent_id,
            format_model(session.model.as_ref())
        ))?;
        output.line(format!("Running one turn: {PROMPT:?}"))?;
        output.line("")?;
        output.line(format!("{:>6}  {:<26} {}", "SEQ", "EVENT", "DETAIL"))?;
    }

    let mut turn = client
        .run_turn(&session.id, PROMPT, pb::TurnOverrides::default())
        .await?;
    let mut responder = Responder::for_demo(output.style.interactive);
    let mut count = 0u64;
    let mut first = None;
    let mut approvals = Vec::new();
    while let Some(event) = turn.next().await? {
        count += 1;
        first.get_or_insert(event.sequence);
        if human {
            output.line(render::event_line(&event))?;
            output.out.flush()?;
        } else {
            output.json_line(&json::event(&event)?)?;
        }
        match &event.payload {
            Some(Payload::PermissionRequested(request)) => {
                approval::respond(&client, &mut responder, output, request).await?;
            }
            Some(Payload::ApprovalResolved(resolved)) => {
                approvals.push(render::approval_outcome(resolved));
            }
            _ => {}
        }
    }
    let done = turn
        .completion()
        .ok_or_else(|| ClientError::Protocol("the turn ended without turn_completed".into()))?;
    let last = turn.events().last_sequence();
    let first = first.unwrap_or(last);

    if human {
        output.line("")?;
        output.line("Summary")?;
        output.fields(&[
            ("  session", session.id.clone()),
            ("  bundle", reference.clone()),
            ("  outcome", render::outcome(done.outcome).to_owned()),
            ("  events", format!("{count} (sequences {first}..{last})")),
            ("  model calls", done.model_calls.to_string()),
            ("  approvals", approvals_summary(&approvals)),
            ("  tokens", render::usage(done.usage.as_ref())),
        ])?;
        if !done.response.is_empty() {
            output.line("")?;
            output.line(&done.response)?;
        }
        output.line("")?;
        if kept {
            output.line("Replay this turn from the kept home:")?;
            output.line(format!("  odyssey serve --home {} &", home.display()))?;
            output.line(format!("  odyssey events {}", session.id))?;
        } else {
            // The server stops and its temporary home is removed when the demo ends, so
            // nothing of this session can be replayed afterwards.
            output.line(
                "The demo's server and its temporary home go away now; to replay this turn \
                 afterwards, run `odyssey demo --keep` (or `--home DIR`), which keeps them.",
            )?;
        }
    } else {
        output.json_line(&json!({
            "summary": {
                "session_id": session.id,
                "bundle": json::message(&bundle)?,
                "execution_id": turn.execution_id(),
                "outcome": render::outcome(done.outcome),
                "events": count,
                "first_sequence": first,
                "last_sequence": last,
                "model_calls": done.model_calls,
                "approvals": approvals,
                "usage": done.usage.as_ref().map(json::message).transpose()?,
                "response": done.response,
                "home": kept.then(|| home.display().to_string()),
            }
        }))?;
    }
    completed_or_error(done)
}

/// `none`, or how each approval request of the turn ended: `1: denied by the CLI (…)`.
fn approvals_summary(outcomes: &[String]) -> String {
    match outcomes {
        [] => "none".to_owned(),
        [one] => format!("1: {one}"),
        many => format!("{}: {}", many.len(), many.join("; ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approvals_are_summarized() {
        assert_eq!(approvals_summary(&[]), "none");
        assert_eq!(
            approvals_summary(&["denied by the CLI (non-interactive)".to_owned()]),
            "1: denied by the CLI (non-interactive)"
        );
        assert_eq!(
            approvals_summary(&["allowed once".to_owned(), "denied".to_owned()]),
            "2: allowed once; denied"
        );
    }
}
