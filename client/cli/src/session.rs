//! `odyssey session ...`: open, list, show and remove sessions, and download the cassette
//! the server recorded for one.

use std::path::PathBuf;

use odyssey_api::v1 as pb;
use serde_json::json;

use super::args::{ApprovalPolicyArg, SandboxModeArg, key_value_arg, model_arg};
use super::error::CliError;
use super::files::write_atomically;
use super::output::Output;
use super::time::rfc3339;
use super::{Global, json, render};
use odyssey_client::format_model;
use odyssey_client::{SessionFilter, SessionOptions};

#[derive(Debug, clap::Subcommand)]
pub(crate) enum SessionCommand {
    /// Open a session on an installed bundle.
    Create {
        /// The bundle: `name`, `name@version`, `ns/name@version`, `@sha256:<hex>`.
        bundle: String,
        /// Agent to talk to [default: the bundle's default agent].
        #[arg(long)]
        agent: Option<String>,
        /// Replace the agent's model for this session.
        #[arg(long, value_name = "PROVIDER/NAME", value_parser = model_arg)]
        model: Option<pb::ModelSpec>,
        /// Sandbox mode, no more permissive than the server allows [default: the manifest's].
        #[arg(long, value_enum, value_name = "MODE")]
        sandbox_mode: Option<SandboxModeArg>,
        /// When tool calls wait for a human [default: the agent's rules decide].
        #[arg(long, value_enum, value_name = "POLICY")]
        approval_policy: Option<ApprovalPolicyArg>,
        /// Metadata stored with the session (repeatable).
        #[arg(long = "meta", value_name = "KEY=VALUE", value_parser = key_value_arg)]
        meta: Vec<(String, String)>,
        /// Tokens (input + output) the session may spend [default: the server's].
        #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1..))]
        token_budget: Option<u64>,
    },
    /// List sessions, most recent first.
    List {
        /// Only sessions created from this bundle name (or `ns/name`).
        #[arg(long)]
        bundle: Option<String>,
        /// Only sessions of this agent.
        #[arg(long)]
        agent: Option<String>,
        /// At most this many sessions.
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
        /// Only the sub-agent sessions this session started.
        #[arg(long, value_name = "SESSION")]
        parent: Option<String>,
    },
    /// Show one session (and, for a sub-agent's, the session that started it).
    #[command(visible_alias = "show")]
    Get { id: String },
    /// Cancel a session's turns and remove it.
    Delete { id: String },
    /// Download the cassette the server recorded for a session (`--record-cassettes`):
    /// put it in a bundle as `cassettes/<model>.jsonl` and use provider `replay` to rerun
    /// the session offline.
    Cassette {
        id: String,
        /// File to write [default: standard output].
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

pub(crate) async fn run(
    command: SessionCommand,
    global: &Global,
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    match command {
        SessionCommand::Create {
            bundle,
            agent,
            model,
            sandbox_mode,
            approval_policy,
            meta,
            token_budget,
        } => {
            let options = SessionOptions {
                agent_id: agent,
                model,
                sandbox_mode: sandbox_mode.map(Into::into),
                approval_policy: approval_policy.map(Into::into),
                metadata: meta.into_iter().collect(),
                token_budget,
            };
            let session = global
                .connect()
                .await?
                .create_session(&bundle, options)
                .await?;
            show(&session, output)
        }
        SessionCommand::List {
            bundle,
            agent,
            limit,
            parent,
        } => {
            let filter = SessionFilter {
                bundle,
                agent_id: agent,
                parent_session_id: parent,
                limit,
            };
            let sessions = global.connect().await?.list_sessions(&filter).await?;
            list(&sessions, output)
        }
        SessionCommand::Get { id } => {
            let session = global.connect().await?.get_session(&id).await?;
            show(&session, output)
        }
        SessionCommand::Cassette { id, output: file } => {
            let cassette = global.connect().await?.export_session_cassette(&id).await?;
            match file {
                None => output.copy_out_bytes(&cassette)?,
                Some(file) => {
                    write_atomically(&file, &cassette)?;
                    let entries = cassette.iter().filter(|b| **b == b'\n').count();
                    if output.json {
                        output.json_line(&json!({
                            "session_id": id,
                            "output": file.display().to_string(),
                            "entries": entries,
                            "bytes": cassette.len(),
                        }))?;
                    } else {
                        output.line(format!(
                            "Wrote {entries} recorded model calls of session {id} to {}",
                            file.display()
                        ))?;
                    }
                }
            }
            Ok(())
        }
        SessionCommand::Delete { id } => {
            global.connect().await?.delete_session(&id).await?;
            if output.json {
                output.json_line(&json!({ "session_id": id, "deleted": true }))?;
            } else {
                output.line(format!("Deleted session {id}"))?;
            }
            Ok(())
        }
    }
}

fn bundle_label(session: &pb::Session) -> String {
    match &session.bundle {
        Some(r) => format!("{}/{}@{}", r.namespace, r.name, r.version),
        None => session.bundle_reference.clone(),
    }
}

fn show(session: &pb::Session, output: &mut Output<'_>) -> Result<(), CliError> {
    if output.json {
        output.json_line(&json::message(session)?)?;
        return Ok(());
    }
    let sandbox = pb::SandboxMode::try_from(session.sandbox_mode)
        .map(|m| render::enum_label(m.as_str_name(), "SANDBOX_MODE_"))
        .unwrap_or_else(|_| session.sandbox_mode.to_string());
    let approval = pb::ApprovalPolicy::try_from(session.approval_policy)
        .map(|p| render::enum_label(p.as_str_name(), "APPROVAL_POLICY_"))
        .unwrap_or_else(|_| session.approval_policy.to_string());
    let mut metadata: Vec<String> = session
        .metadata
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    metadata.sort();
    let mut fields = vec![
        ("session", session.id.clone()),
        ("bundle", bundle_label(session)),
        ("agent", session.agent_id.clone()),
        ("model", format_model(session.model.as_ref())),
        ("sandbox", sandbox),
        ("approval", approval),
        ("state", state_label(session)),
        ("turns", session.turn_count.to_string()),
        ("events", session.last_sequence.to_string()),
        ("tokens", render::usage(session.usage.as_ref())),
        (
            "budget",
            match session.token_budget {
                0 => "none".to_owned(),
                budget => format!("{budget} tokens"),
            },
        ),
        ("created", rfc3339(session.created_at.as_ref())),
        ("updated", rfc3339(session.updated_at.as_ref())),
    ];
    if !session.parent_session_id.is_empty() {
        fields.insert(
            1,
            (
                "parent",
                format!(
                    "{} (tool call {})",
                    session.parent_session_id, session.parent_call_id
                ),
            ),
        );
    }
    if !metadata.is_empty() {
        fields.push(("metadata", metadata.join(", ")));
    }
    output.fields(&fields)?;
    Ok(())
}

/// `idle`, `running`, `waiting_for_approval` (a server too old to say: `unknown`).
fn state_label(session: &pb::Session) -> String {
    match pb::SessionState::try_from(session.state) {
        Ok(pb::SessionState::Unspecified) | Err(_) => "unknown".to_owned(),
        Ok(state) => render::enum_label(state.as_str_name(), "SESSION_STATE_"),
    }
}

fn list(sessions: &[pb::Session], output: &mut Output<'_>) -> Result<(), CliError> {
    if output.json {
        for session in sessions {
            output.json_line(&json::message(session)?)?;
        }
        return Ok(());
    }
    if sessions.is_empty() {
        output.note("No sessions.")?;
        return Ok(());
    }
    let rows: Vec<Vec<String>> = sessions
        .iter()
        .map(|s| {
            vec![
                s.id.clone(),
                bundle_label(s),
                s.agent_id.clone(),
                format_model(s.model.as_ref()),
                state_label(s),
                s.turn_count.to_string(),
                rfc3339(s.updated_at.as_ref()),
            ]
        })
        .collect();
    output.table(
        &[
            "SESSION", "BUNDLE", "AGENT", "MODEL", "STATE", "TURNS", "UPDATED",
        ],
        &rows,
    )?;
    Ok(())
}
