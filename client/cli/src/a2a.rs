//! `odyssey a2a card|send|get|cancel|subscribe`: the server's agents over the Agent2Agent
//! protocol (A2A v1.0, gRPC binding), as any A2A client sees them. A task is one turn, its
//! context the session; `--json` prints each A2A message in its proto3 JSON form.

use futures::StreamExt;
use odyssey_client::a2a::{self, TaskUpdate, TaskUpdates};
use odyssey_client::a2a_proto as pb;
use pb::stream_response::Payload;

use super::error::CliError;
use super::output::Output;
use super::{Global, json};

#[derive(Debug, clap::Subcommand)]
pub(crate) enum A2aCommand {
    /// Show an agent's extended card: how to reach it, its skills, model, tools and rules.
    Card(CardArgs),
    /// Send a message to an agent as an A2A task; prints the agent's answer.
    Send(SendArgs),
    /// Show a task: its state and answer.
    Get(GetArgs),
    /// Cancel a task (its turn).
    Cancel(TaskArgs),
    /// Follow a running task's updates, replayed from the session's log; --after resumes
    /// from the last sequence number handled.
    Subscribe(SubscribeArgs),
}

#[derive(Debug, clap::Args)]
pub(crate) struct CardArgs {
    /// The bundle (`name` or `namespace/name`); none: the server's default agent.
    bundle: Option<String>,
    /// The agent of the bundle [default: the bundle's default agent].
    agent: Option<String>,
}

#[derive(Debug, clap::Args)]
pub(crate) struct SendArgs {
    /// What to say.
    text: String,
    /// The agent, as A2A's tenant `<bundle>.<agent>` [default: the server's default agent].
    #[arg(long)]
    agent: Option<String>,
    /// The context (session) to continue; none: a new one.
    #[arg(long)]
    context: Option<String>,
    /// Stream the task's updates as they come.
    #[arg(long)]
    stream: bool,
}

#[derive(Debug, clap::Args)]
pub(crate) struct TaskArgs {
    /// The task id (`<contextId>.<execution id>`).
    task: String,
}

#[derive(Debug, clap::Args)]
pub(crate) struct GetArgs {
    #[command(flatten)]
    task: TaskArgs,
    /// Keep only the last N messages of the history.
    #[arg(long, value_name = "N")]
    history: Option<i32>,
}

#[derive(Debug, clap::Args)]
pub(crate) struct SubscribeArgs {
    #[command(flatten)]
    task: TaskArgs,
    /// Skip the updates at or below this sequence number (the last one handled).
    #[arg(long, value_name = "SEQ", default_value_t = 0)]
    after: u64,
}

pub(crate) async fn run(
    command: A2aCommand,
    global: &Global,
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    let client = global.connect().await?;
    match command {
        A2aCommand::Card(args) => {
            let (bundle, agent) = match (args.bundle, args.agent) {
                (Some(bundle), Some(agent)) => (bundle, agent),
                (Some(bundle), None) => {
                    let agents = client.list_agents(&bundle).await?;
                    let default = agents.iter().find(|a| a.is_default).ok_or_else(|| {
                        CliError::Usage(format!("bundle `{bundle}` has no default agent"))
                    })?;
                    (bundle, default.id.clone())
                }
                (None, _) => (String::new(), String::new()),
            };
            let card = client.agent_card(&bundle, &agent).await?;
            show_card(&card, output)
        }
        A2aCommand::Send(args) => {
            let tenant = args.agent.unwrap_or_default();
            let context = args.context.unwrap_or_default();
            if args.stream {
                let updates = client.a2a_stream(&tenant, &context, &args.text).await?;
                return follow(updates, output).await;
            }
            let task = client.a2a_send(&tenant, &context, &args.text).await?;
            show_task(&task, output)
        }
        A2aCommand::Get(args) => {
            let task = client.a2a_get(&args.task.task, args.history).await?;
            show_task(&task, output)
        }
        A2aCommand::Cancel(args) => {
            let task = client.a2a_cancel(&args.task).await?;
            show_task(&task, output)
        }
        A2aCommand::Subscribe(args) => {
            let updates = client.a2a_subscribe(&args.task.task, args.after).await?;
            follow(updates, output).await
        }
    }
}

fn show_card(card: &pb::AgentCard, output: &mut Output<'_>) -> Result<(), CliError> {
    if output.json {
        output.json_line(&json::message(card)?)?;
        return Ok(());
    }
    let mut fields = vec![
        ("name", card.name.clone()),
        ("description", card.description.clone()),
        ("version", card.version.clone()),
    ];
    for interface in &card.supported_interfaces {
        fields.push((
            "interface",
            format!(
                "{} {} (tenant {})",
                interface.protocol_binding, interface.url, interface.tenant
            ),
        ));
    }
    for skill in &card.skills {
        fields.push(("skill", format!("{}: {}", skill.id, skill.description)));
    }
    let details = card
        .capabilities
        .iter()
        .flat_map(|c| &c.extensions)
        .find(|e| e.uri == a2a::DETAILS_EXTENSION)
        .and_then(|e| e.params.as_ref())
        .map(json::struct_to_json);
    if let Some(details) = details {
        let text = |v: &serde_json::Value| match v {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Array(items) => items
                .iter()
                .filter_map(|i| i.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            other => other.to_string(),
        };
        fields.push((
            "model",
            format!(
                "{}/{}",
                text(&details["model"]["provider"]),
                text(&details["model"]["name"])
            ),
        ));
        fields.push(("tools", text(&details["tools"])));
        for rule in ["allow", "ask", "deny"] {
            let listed = text(&details["permissions"][rule]);
            if !listed.is_empty() {
                fields.push((rule, listed));
            }
        }
        fields.push(("sandbox", text(&details["sandbox"]["mode"])));
    }
    output.fields(&fields)?;
    Ok(())
}

fn state_name(state: i32) -> &'static str {
    pb::TaskState::try_from(state)
        .unwrap_or(pb::TaskState::Unspecified)
        .as_str_name()
}

/// The text of a task's artifacts.
fn answer(task: &pb::Task) -> String {
    task.artifacts
        .iter()
        .flat_map(|a| &a.parts)
        .filter_map(|p| match &p.content {
            Some(pb::part::Content::Text(text)) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn show_task(task: &pb::Task, output: &mut Output<'_>) -> Result<(), CliError> {
    if output.json {
        output.json_line(&json::message(task)?)?;
        return Ok(());
    }
    let state = task.status.as_ref().map_or(0, |s| s.state);
    output.note(format!(
        "task {} ({}), context {}",
        task.id,
        state_name(state),
        task.context_id
    ))?;
    let answer = answer(task);
    if !answer.is_empty() {
        output.copy_out(&answer)?;
        if !answer.ends_with('\n') {
            output.copy_out("\n")?;
        }
    }
    Ok(())
}

/// Prints a task's updates as they come: the answer's chunks on stdout, the rest (the
/// task, its states, tool activity) as notes.
async fn follow(mut updates: TaskUpdates, output: &mut Output<'_>) -> Result<(), CliError> {
    let mut wrote_text = false;
    while let Some(update) = updates.next().await {
        let TaskUpdate { sequence, update } = update?;
        if output.json {
            let response = pb::StreamResponse {
                payload: Some(update),
            };
            output.json_line(&json::message(&response)?)?;
            continue;
        }
        let at = sequence.map(|n| format!(" [{n}]")).unwrap_or_default();
        match update {
            Payload::Task(task) => {
                let state = task.status.as_ref().map_or(0, |s| s.state);
                output.note(format!(
                    "task {} ({}), context {}",
                    task.id,
                    state_name(state),
                    task.context_id
                ))?;
            }
            Payload::ArtifactUpdate(update) => {
                for part in update.artifact.iter().flat_map(|a| &a.parts) {
                    if let Some(pb::part::Content::Text(text)) = &part.content {
                        output.copy_out(text)?;
                        wrote_text |= !text.is_empty();
                    }
                }
            }
            Payload::StatusUpdate(update) => {
                let status = update.status.unwrap_or_default();
                let data: Vec<String> = status
                    .message
                    .iter()
                    .flat_map(|m| &m.parts)
                    .filter_map(|p| match &p.content {
                        Some(pb::part::Content::Data(value)) => {
                            Some(json::value_to_json(value).to_string())
                        }
                        Some(pb::part::Content::Text(text)) => Some(text.clone()),
                        _ => None,
                    })
                    .collect();
                if wrote_text {
                    output.copy_out("\n")?;
                    wrote_text = false;
                }
                output.note(format!(
                    "{}{at}{}",
                    state_name(status.state),
                    if data.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", data.join(" "))
                    }
                ))?;
            }
            Payload::Message(message) => {
                for part in &message.parts {
                    if let Some(pb::part::Content::Text(text)) = &part.content {
                        output.copy_out(text)?;
                        wrote_text = true;
                    }
                }
            }
        }
    }
    if wrote_text {
        output.copy_out("\n")?;
    }
    Ok(())
}
