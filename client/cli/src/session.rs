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
    /// List the tools the session's agent is offered (builtin and MCP ones), starting its
    /// MCP servers in the session's sandbox if they are not running.
    Tools { id: String },
    /// Start a new session from the end of one turn of a session: its history up to there,
    /// its workspace as it was then. The source is untouched.
    Fork {
        id: String,
        /// The turn to fork after (1 for the first).
        #[arg(
            long,
            value_name = "N",
            required_unless_present = "at_sequence",
            conflicts_with = "at_sequence"
        )]
        turn: Option<u64>,
        /// The sequence of a turn's end (its turn_completed event), instead of --turn.
        #[arg(long, value_name = "SEQUENCE")]
        at_sequence: Option<u64>,
    },
    /// Put a session's conversation and workspace back to the end of a turn; later turns
    /// stay in its log but leave the model's history.
    Rewind {
        id: String,
        /// The turn to go back to (1 for the first).
        #[arg(long, value_name = "N")]
        turn: u64,
    },
    /// Show the files a turn added, changed or removed, with a diff of each text file.
    Diff {
        id: String,
        /// The turn (1 for the first).
        #[arg(long, value_name = "N")]
        turn: u64,
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
        SessionCommand::Tools { id } => {
            let listed = global.connect().await?.list_session_tools(&id).await?;
            tools(&listed, output)
        }
        SessionCommand::Fork {
            id,
            turn,
            at_sequence,
        } => {
            use pb::fork_session_request::Point;
            let point = match (turn, at_sequence) {
                (_, Some(sequence)) => Point::AtSequence(sequence),
                (Some(turn), None) => Point::AfterTurn(turn),
                (None, None) => {
                    return Err(CliError::Usage(
                        "give --turn N or --at-sequence SEQUENCE".into(),
                    ));
                }
            };
            let session = global.connect().await?.fork_session_at(&id, point).await?;
            show(&session, output)
        }
        SessionCommand::Rewind { id, turn } => {
            let rewound = global.connect().await?.rewind_session(&id, turn).await?;
            if output.json {
                output.json_line(&json::message(&rewound)?)?;
                return Ok(());
            }
            let left = match rewound.event.as_ref().and_then(|e| e.payload.as_ref()) {
                Some(pb::session_event::Payload::SessionRewound(r)) => r.turns_left,
                _ => 0,
            };
            output.line(format!(
                "Rewound session {id} to the end of turn {turn}: its workspace and history \
                 are as they were then ({left} later turn(s) left the history)"
            ))?;
            Ok(())
        }
        SessionCommand::Diff { id, turn } => {
            let changes = global.connect().await?.get_turn_changes(&id, turn).await?;
            if output.json {
                output.json_line(&json::message(&changes)?)?;
                return Ok(());
            }
            diff(&changes, output)
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

/// A table of the tools (SOURCE is `builtin`, `host` or `mcp:<server>`), then a note for
/// each MCP server that offers none; `--json`: the whole answer as one message.
fn tools(listed: &pb::ListSessionToolsResponse, output: &mut Output<'_>) -> Result<(), CliError> {
    if output.json {
        output.json_line(&json::message(listed)?)?;
        return Ok(());
    }
    if listed.tools.is_empty() {
        output.note("No tools.")?;
    } else {
        let rows: Vec<Vec<String>> = listed
            .tools
            .iter()
            .map(|t| {
                let source = if t.mcp_server.is_empty() {
                    t.source.clone()
                } else {
                    format!("{}:{}", t.source, t.mcp_server)
                };
                vec![t.name.clone(), source, render::shorten(&t.description, 70)]
            })
            .collect();
        output.table(&["TOOL", "SOURCE", "DESCRIPTION"], &rows)?;
    }
    for failed in &listed.mcp_server_errors {
        output.note(format!(
            "MCP server `{}` offers no tools: {}",
            failed.server, failed.error
        ))?;
    }
    Ok(())
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
    if let Some(at) = &session.forked_at {
        fields.push((
            "forked from",
            format!("{} after turn {}", session.forked_from, at.turn),
        ));
    }
    output.fields(&fields)?;
    Ok(())
}

/// `A path`, `M path`, `D path` lines, each text file's diff after its line.
fn diff(changes: &pb::GetTurnChangesResponse, output: &mut Output<'_>) -> Result<(), CliError> {
    if changes.changes.is_empty() {
        output.note(format!(
            "Turn {} changed nothing in the workspace.",
            changes.turn
        ))?;
        return Ok(());
    }
    for change in &changes.changes {
        let mark = match pb::FileChangeKind::try_from(change.change) {
            Ok(pb::FileChangeKind::Added) => "A",
            Ok(pb::FileChangeKind::Removed) => "D",
            _ => "M",
        };
        let suffix = match pb::FileNodeKind::try_from(change.kind) {
            Ok(pb::FileNodeKind::Directory) => "/",
            Ok(pb::FileNodeKind::Symlink) => " (link)",
            _ if change.binary => " (binary)",
            _ => "",
        };
        output.line(format!("{mark} {}{suffix}", change.path))?;
        if !change.unified_diff.is_empty() {
            for line in change.unified_diff.lines() {
                output.line(format!("    {line}"))?;
            }
        }
        if change.diff_truncated {
            output.line("    (diff cut short)")?;
        }
    }
    if changes.truncated {
        output.note("More changes were left out.")?;
    }
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
