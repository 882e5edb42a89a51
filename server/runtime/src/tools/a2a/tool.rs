//! `a2a__<name>`: one call sends the model's message to a remote A2A agent, streams the
//! remote task's status and artifact updates into the session's events, turns a remote
//! `input-required` into a local approval request, and answers with the final artifact
//! text. A cancelled turn cancels the remote task; the remote's failure or a timeout is an
//! error result, never a hang.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::client::{A2aCallError, A2aClient, Endpoint, TaskStream};
use super::input::RemoteInput;
use super::settings::ResolvedA2aAgent;
use super::wire::{Message, StreamItem, parts_text, state, user_message};
use crate::events::EventPayload;
use crate::provider::ToolSpec;
use crate::tools::{Tool, ToolContext, ToolOutput};

/// The prefix of every remote agent's tool name.
pub const TOOL_PREFIX: &str = "a2a__";
/// The largest message the model may send, in bytes.
const MAX_MESSAGE_BYTES: usize = 256 * 1024;
/// The longest remote task or context id taken.
const MAX_REMOTE_ID_BYTES: usize = 256;

/// The tool name of remote agent `name`.
pub fn tool_name(name: &str) -> String {
    format!("{TOOL_PREFIX}{name}")
}

/// What one call may use and how far it may go.
#[derive(Clone, Debug)]
pub struct CallLimits {
    pub call_timeout: Duration,
    pub max_output_bytes: usize,
}

/// The tool of one remote agent.
#[derive(Debug)]
pub struct A2aTool {
    agent: ResolvedA2aAgent,
    client: Arc<A2aClient>,
    limits: CallLimits,
    /// How a remote question reaches a human; `None` where no turn runs (listing tools).
    input: Option<RemoteInput>,
}

impl A2aTool {
    pub fn new(
        agent: ResolvedA2aAgent,
        client: Arc<A2aClient>,
        limits: CallLimits,
        input: Option<RemoteInput>,
    ) -> Self {
        Self {
            agent,
            client,
            limits,
            input,
        }
    }
}

impl Tool for A2aTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: tool_name(&self.agent.name),
            description: format!(
                "Delegate a task to the remote agent `{}` (Agent2Agent protocol): send it a \
                 message and get its answer. It may ask a human for input on the way.",
                self.agent.name
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "message": {
                        "type": "string",
                        "description": "What to ask the remote agent, in plain words."
                    },
                    "data": {
                        "type": "object",
                        "description": "Optional structured data sent with the message."
                    }
                },
                "required": ["message"],
                "additionalProperties": false
            }),
        }
    }

    fn call(&self, ctx: ToolContext, arguments: Value) -> BoxFuture<'static, ToolOutput> {
        let call = Call {
            tool: tool_name(&self.agent.name),
            agent: self.agent.clone(),
            client: self.client.clone(),
            limits: self.limits.clone(),
            input: self.input.clone(),
        };
        Box::pin(async move { call.run(ctx, arguments).await })
    }

    fn releases_worker(&self) -> bool {
        true
    }
}

struct Call {
    tool: String,
    agent: ResolvedA2aAgent,
    client: Arc<A2aClient>,
    limits: CallLimits,
    input: Option<RemoteInput>,
}

/// How one exchange with the remote agent ended.
enum Ended {
    Completed,
    /// Failed, rejected, cancelled or waiting for credentials: the state and its message.
    Stopped(String, String),
    InputRequired(String),
    /// The stream closed before the task reached a state that ends an exchange.
    Closed,
}

impl Call {
    async fn run(self, ctx: ToolContext, arguments: Value) -> ToolOutput {
        let (text, data) = match parse_arguments(&arguments) {
            Ok(parsed) => parsed,
            Err(message) => return ToolOutput::error(message),
        };
        let endpoint = match self.client.endpoint(&self.agent).await {
            Ok(endpoint) => endpoint,
            Err(e) => return ToolOutput::error(e.to_string()),
        };
        let mut task = RemoteTask {
            client: self.client.clone(),
            agent: self.agent.clone(),
            endpoint: endpoint.clone(),
            id: None,
            context_id: String::new(),
            open: false,
        };
        let mut answer = Answer::new(self.limits.max_output_bytes, ctx.clone());
        let mut message = user_message(&text, data, None);
        loop {
            let exchange = self.exchange(&endpoint, &message, &mut task, &mut answer);
            let ended = match tokio::time::timeout(self.limits.call_timeout, exchange).await {
                Ok(Ok(ended)) => ended,
                Ok(Err(e)) => {
                    if matches!(e, A2aCallError::Transport { .. }) {
                        self.client.forget(&self.agent);
                    }
                    task.cancel().await;
                    return ToolOutput::error(e.to_string());
                }
                Err(_) => {
                    task.cancel().await;
                    return ToolOutput::error(format!(
                        "`{}` did not finish within {} s; its task was cancelled",
                        self.agent.name,
                        self.limits.call_timeout.as_secs()
                    ));
                }
            };
            match ended {
                Ended::Completed => {
                    task.open = false;
                    return ToolOutput::ok(answer.finish());
                }
                Ended::Stopped(state, why) => {
                    task.open = false;
                    let why = if why.is_empty() {
                        String::new()
                    } else {
                        format!(": {why}")
                    };
                    return ToolOutput::error(format!(
                        "`{}` ended its task as {}{why}",
                        self.agent.name,
                        short_state(&state)
                    ));
                }
                Ended::Closed => {
                    task.cancel().await;
                    return ToolOutput::error(format!(
                        "`{}` closed its stream before its task ended",
                        self.agent.name
                    ));
                }
                Ended::InputRequired(question) => {
                    let Some(task_id) = task.id.clone() else {
                        return ToolOutput::error(format!(
                            "`{}` asked for input without naming its task",
                            self.agent.name
                        ));
                    };
                    let answered = match &self.input {
                        Some(input) => {
                            input
                                .ask(&ctx, &self.tool, &self.agent.name, &question)
                                .await
                        }
                        None => Ok(super::input::Answer {
                            decision: crate::events::ApprovalDecision::Deny,
                            reason: "nobody can be asked here".to_owned(),
                        }),
                    };
                    let answered = match answered {
                        Ok(answered) => answered,
                        Err(e) => {
                            task.cancel().await;
                            return ToolOutput::error(format!(
                                "cannot ask for the input `{}` needs: {}",
                                self.agent.name,
                                e.client_message()
                            ));
                        }
                    };
                    message = user_message(
                        "",
                        Some(answered.to_data()),
                        Some((&task_id, &task.context_id)),
                    );
                }
            }
        }
    }

    /// Sends `message` and follows the task's stream until the exchange ends.
    async fn exchange(
        &self,
        endpoint: &Endpoint,
        message: &Message,
        task: &mut RemoteTask,
        answer: &mut Answer,
    ) -> Result<Ended, A2aCallError> {
        let mut stream: TaskStream = self
            .client
            .send_streaming(&self.agent, endpoint, message)
            .await?;
        while let Some(item) = stream.next().await {
            let StreamItem {
                task: snapshot,
                message,
                status_update,
                artifact_update,
            } = item?;
            let status = if let Some(snapshot) = snapshot {
                task.seen(&snapshot.id, &snapshot.context_id);
                for artifact in &snapshot.artifacts {
                    answer.artifact(&artifact.artifact_id, &parts_text(&artifact.parts), false);
                }
                Some(snapshot.status)
            } else if let Some(update) = status_update {
                task.seen(&update.task_id, &update.context_id);
                Some(update.status)
            } else if let Some(update) = artifact_update {
                task.seen(&update.task_id, "");
                let text = parts_text(&update.artifact.parts);
                answer.artifact(&update.artifact.artifact_id, &text, update.append);
                None
            } else if let Some(message) = message {
                // A direct answer, without a task.
                answer.reply(&parts_text(&message.parts));
                return Ok(Ended::Completed);
            } else {
                None
            };
            let Some(status) = status else { continue };
            let said = status
                .message
                .as_ref()
                .map(|m| parts_text(&m.parts))
                .unwrap_or_default();
            answer.status(&status.state, &said);
            match status.state.as_str() {
                state::COMPLETED => {
                    answer.reply(&said);
                    return Ok(Ended::Completed);
                }
                state::INPUT_REQUIRED => return Ok(Ended::InputRequired(said)),
                state::FAILED | state::CANCELED | state::REJECTED | state::AUTH_REQUIRED => {
                    return Ok(Ended::Stopped(status.state, said));
                }
                _ => {}
            }
        }
        Ok(Ended::Closed)
    }
}

fn parse_arguments(arguments: &Value) -> Result<(String, Option<Value>), String> {
    let text = match arguments.get("message") {
        Some(Value::String(text)) if !text.trim().is_empty() => text.clone(),
        Some(Value::String(_)) | None => {
            return Err("`message` is required: what to ask the remote agent".to_owned());
        }
        Some(_) => return Err("`message` must be a string".to_owned()),
    };
    if text.len() > MAX_MESSAGE_BYTES {
        return Err(format!(
            "`message` is {} bytes; at most {MAX_MESSAGE_BYTES} are sent",
            text.len()
        ));
    }
    let data = match arguments.get("data") {
        None | Some(Value::Null) => None,
        Some(data @ Value::Object(_)) => Some(data.clone()),
        Some(_) => return Err("`data` must be a JSON object".to_owned()),
    };
    if let Value::Object(map) = arguments
        && let Some(other) = map.keys().find(|k| *k != "message" && *k != "data")
    {
        return Err(format!(
            "unknown argument `{}`; give `message` and optionally `data`",
            crate::text::shorten(other, 64)
        ));
    }
    Ok((text, data))
}

/// `TASK_STATE_INPUT_REQUIRED` → `input-required`.
fn short_state(state: &str) -> String {
    let short = state.strip_prefix("TASK_STATE_").unwrap_or(state);
    if short.is_empty() {
        return "unknown".to_owned();
    }
    short.to_ascii_lowercase().replace('_', "-")
}

/// The remote task of a call: cancelled when the call stops before the task ended,
/// whether the call returns or is dropped with its turn.
struct RemoteTask {
    client: Arc<A2aClient>,
    agent: ResolvedA2aAgent,
    endpoint: Endpoint,
    id: Option<String>,
    context_id: String,
    /// The task runs and nobody asked it to stop yet.
    open: bool,
}

impl RemoteTask {
    /// Remembers the remote task's ids. An id longer than [`MAX_REMOTE_ID_BYTES`] is not
    /// one a well-behaved agent sends: it is ignored, so it never reaches a log line or a
    /// later request.
    fn seen(&mut self, id: &str, context_id: &str) {
        if !id.is_empty() && id.len() <= MAX_REMOTE_ID_BYTES && self.id.is_none() {
            self.id = Some(id.to_owned());
            self.open = true;
        }
        if !context_id.is_empty() && context_id.len() <= MAX_REMOTE_ID_BYTES {
            self.context_id = context_id.to_owned();
        }
    }

    async fn cancel(&mut self) {
        if !std::mem::take(&mut self.open) {
            return;
        }
        if let Some(id) = &self.id {
            self.client.cancel(&self.agent, &self.endpoint, id).await;
        }
    }
}

impl Drop for RemoteTask {
    fn drop(&mut self) {
        if !self.open {
            return;
        }
        let Some(id) = self.id.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (client, agent, endpoint) = (
            self.client.clone(),
            self.agent.clone(),
            self.endpoint.clone(),
        );
        runtime.spawn(async move { client.cancel(&agent, &endpoint, &id).await });
    }
}

/// The answer taking shape: the artifacts' text (bounded), and the updates streamed into
/// the session's events (bounded too).
struct Answer {
    artifacts: Vec<(String, String)>,
    /// A status message or direct reply, used when no artifact came.
    reply: String,
    max_bytes: usize,
    streamed_bytes: usize,
    ctx: ToolContext,
}

impl Answer {
    fn new(max_bytes: usize, ctx: ToolContext) -> Self {
        Self {
            artifacts: Vec::new(),
            reply: String::new(),
            max_bytes,
            streamed_bytes: 0,
            ctx,
        }
    }

    /// Adds an artifact's text, all artifacts together kept within the bound (plus one
    /// byte, so the answer can say it was cut).
    fn artifact(&mut self, id: &str, text: &str, append: bool) {
        let index = match self.artifacts.iter().position(|(known, _)| known == id) {
            Some(index) => index,
            None => {
                self.artifacts.push((id.to_owned(), String::new()));
                self.artifacts.len() - 1
            }
        };
        if !append && let Some((_, existing)) = self.artifacts.get_mut(index) {
            existing.clear();
        }
        let held: usize = self.artifacts.iter().map(|(_, t)| t.len()).sum();
        let room = (self.max_bytes + 1).saturating_sub(held);
        if let Some((_, existing)) = self.artifacts.get_mut(index) {
            push_bounded(existing, text, existing.len() + room);
        }
        self.stream(text.to_owned());
    }

    fn status(&mut self, state: &str, said: &str) {
        let line = if said.is_empty() {
            format!("[{}]\n", short_state(state))
        } else {
            format!("[{}] {said}\n", short_state(state))
        };
        self.stream(line);
    }

    fn reply(&mut self, text: &str) {
        if !text.is_empty() {
            self.reply = text.to_owned();
        }
    }

    /// Streams a piece into the session's events while the call's share is not spent.
    fn stream(&mut self, piece: String) {
        if piece.is_empty() || self.streamed_bytes >= self.max_bytes {
            return;
        }
        self.streamed_bytes += piece.len();
        let emitted = self.ctx.events.emit(EventPayload::ToolCallDelta {
            call_id: self.ctx.call_id.clone(),
            delta: piece,
        });
        if let Err(e) = emitted {
            tracing::warn!(session = %self.ctx.session_id, error = %e, "cannot record a remote agent's update");
        }
    }

    fn finish(self) -> String {
        let text: Vec<&str> = self
            .artifacts
            .iter()
            .map(|(_, text)| text.as_str())
            .filter(|t| !t.is_empty())
            .collect();
        let mut out = if text.is_empty() {
            self.reply
        } else {
            text.join("\n")
        };
        if out.is_empty() {
            out = "(the remote agent completed its task without an answer)".to_owned();
        }
        if out.len() > self.max_bytes {
            let mut cut = self.max_bytes;
            while !out.is_char_boundary(cut) {
                cut -= 1;
            }
            out.truncate(cut);
            out.push_str(&format!(
                "\n[… cut: the remote agent's answer is longer than {} bytes]",
                self.max_bytes
            ));
        }
        out
    }
}

/// Appends what fits of `text` to `out`, keeping `out` within `max` bytes.
fn push_bounded(out: &mut String, text: &str, max: usize) {
    let room = max.saturating_sub(out.len());
    if room == 0 {
        return;
    }
    let mut take = room.min(text.len());
    while !text.is_char_boundary(take) {
        take -= 1;
    }
    out.push_str(&text[..take]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_need_a_message_and_take_only_an_object_as_data() {
        assert!(parse_arguments(&json!({})).is_err());
        assert!(parse_arguments(&json!({"message": "  "})).is_err());
        assert!(parse_arguments(&json!({"message": 3})).is_err());
        assert!(parse_arguments(&json!({"message": "hi", "data": [1]})).is_err());
        assert!(parse_arguments(&json!({"message": "hi", "other": 1})).is_err());
        let (text, data) = parse_arguments(&json!({"message": "hi", "data": {"a": 1}}))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(text, "hi");
        assert_eq!(data, Some(json!({"a": 1})));
    }

    #[test]
    fn states_read_as_the_specification_names_them() {
        assert_eq!(short_state(state::INPUT_REQUIRED), "input-required");
        assert_eq!(short_state(state::COMPLETED), "completed");
        assert_eq!(short_state(""), "unknown");
    }

    #[test]
    fn appended_text_stays_within_its_bound() {
        let mut out = String::new();
        push_bounded(&mut out, "ééééé", 5);
        assert_eq!(out, "éé");
        push_bounded(&mut out, "more", 5);
        assert_eq!(out, "éém");
    }
}
