//! The MCP server handler: `tools/list` lists the installed agents, `tools/call` runs a
//! turn of one.

use std::sync::Arc;
use std::time::Duration;

use odyssey_runtime::events::EventPayload;
use odyssey_runtime::session::Subscription;
use odyssey_runtime::{
    ErrorKind, ExecutionHandle, ExecutionRequest, ExecutionState, ExecutionStatus, OdysseyRuntime,
    RuntimeError, SessionSpec,
};
use rmcp::ErrorData as McpError;
use rmcp::RoleServer;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListResourceTemplatesResult, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ProgressToken, ReadResourceRequestParams, ReadResourceResponse,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{Peer, RequestContext};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::agents::{self, AgentTool};
use super::resources;
use odyssey_runtime::error::shorten;

/// The agents of one runtime, as one MCP session sees them.
#[derive(Clone)]
pub struct Agents {
    runtime: OdysseyRuntime,
    /// Fires when the server stops: calls cut off by it leave their turns to the runtime's
    /// shutdown (finished or recorded as interrupted) instead of cancelling them.
    shutdown: CancellationToken,
}

impl Agents {
    pub fn new(runtime: OdysseyRuntime, shutdown: CancellationToken) -> Self {
        Self { runtime, shutdown }
    }

    /// The agent tool `name` names.
    async fn find(&self, name: &str) -> Result<AgentTool, McpError> {
        let tools = agents::list(&self.runtime).await.map_err(runtime_error)?;
        tools.into_iter().find(|t| t.name == name).ok_or_else(|| {
            McpError::invalid_params(
                format!(
                    "no tool `{}`: tools are the installed agents, named \
                     `<bundle>__<agent>` (tools/list shows them)",
                    shorten(name)
                ),
                None,
            )
        })
    }

    /// The session the call runs in: a new session of `agent`, or the one `session_id`
    /// names when it is `agent`'s. Says whether the session was created for the call.
    async fn session_for(
        &self,
        agent: &AgentTool,
        session_id: Option<&str>,
    ) -> Result<(Uuid, bool), McpError> {
        let Some(text) = session_id else {
            let session = self
                .runtime
                .create_session(SessionSpec {
                    bundle_reference: agent.reference.clone(),
                    agent_id: Some(agent.agent_id.clone()),
                    ..Default::default()
                })
                .await
                .map_err(runtime_error)?;
            return Ok((session.record.id, true));
        };
        let bad =
            |why: String| McpError::invalid_params(format!("argument `session_id`: {why}"), None);
        let id = Uuid::parse_str(text)
            .map_err(|_| bad(format!("`{}` is not a session id", shorten(text))))?;
        let session = self
            .runtime
            .get_session(id)
            .await
            .map_err(|e| match e.kind() {
                ErrorKind::NotFound => bad(format!("no session {id} on this server")),
                _ => runtime_error(e),
            })?;
        let record = &session.record;
        let reference = format!("{}/{}", record.bundle.namespace, record.bundle.name);
        if reference != agent.reference || record.agent_id != agent.agent_id {
            return Err(bad(format!(
                "session {id} belongs to agent `{reference}.{}`, not `{}.{}`",
                record.agent_id, agent.reference, agent.agent_id
            )));
        }
        Ok((id, false))
    }

    /// Runs the turn and waits for its end; a cancelled request cancels the turn.
    async fn run(
        &self,
        agent: &AgentTool,
        arguments: Arguments,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let (session_id, created) = self
            .session_for(agent, arguments.session_id.as_deref())
            .await?;
        let started = self
            .start(
                session_id,
                arguments.prompt,
                context.meta.get_progress_token(),
            )
            .await;
        let (handle, progress) = match started {
            Ok(started) => started,
            Err(e) => {
                if created && let Err(cleanup) = self.runtime.delete_session(session_id).await {
                    tracing::warn!(session = %session_id, error = %cleanup, "cannot remove the session of a refused MCP call");
                }
                return Err(runtime_error(e));
            }
        };
        let mut guard = CancelOnDrop {
            runtime: self.runtime.clone(),
            execution_id: Some(handle.execution_id),
            shutdown: self.shutdown.clone(),
        };
        let forward = progress.map(|(token, subscription)| {
            tokio::spawn(forward_progress(
                context.peer.clone(),
                token,
                subscription,
                handle.execution_id,
            ))
        });
        let ended = tokio::select! {
            ended = self.runtime.wait(handle.execution_id) => ended,
            () = context.ct.cancelled() => {
                guard.execution_id = None;
                if self.shutdown.is_cancelled() {
                    return Err(McpError::internal_error(
                        format!(
                            "the server is stopping; turn {} of session {session_id} is \
                             finished or recorded as interrupted by it",
                            handle.execution_id
                        ),
                        None,
                    ));
                }
                self.runtime.cancel(handle.execution_id).await
            }
        };
        guard.execution_id = None;
        if let Some(mut forward) = forward {
            // The last notifications go out before the answer, as long as the client reads.
            if tokio::time::timeout(PROGRESS_DRAIN, &mut forward)
                .await
                .is_err()
            {
                forward.abort();
            }
        }
        Ok(answer(&ended.map_err(runtime_error)?))
    }

    /// Queues the turn; with a progress token, follows the session from its end first so
    /// that no event of the turn is missed.
    async fn start(
        &self,
        session_id: Uuid,
        prompt: String,
        progress: Option<ProgressToken>,
    ) -> Result<(ExecutionHandle, Option<(ProgressToken, Subscription)>), RuntimeError> {
        let progress = match progress {
            Some(token) => {
                let last = self
                    .runtime
                    .get_session(session_id)
                    .await?
                    .stats
                    .last_sequence;
                let subscription = self.runtime.subscribe_session(session_id, last).await?;
                Some((token, subscription))
            }
            None => None,
        };
        let handle = self
            .runtime
            .submit(ExecutionRequest {
                session_id,
                prompt,
                ..Default::default()
            })
            .await?;
        Ok((handle, progress))
    }
}

impl ServerHandler for Agents {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("odysseyd", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "Each tool is an installed agent: call it with a `prompt` to run a turn in a \
                 new session, or with a `session_id` from an earlier answer to continue that \
                 session. The answer is the turn's final text. A session's events are the resource \
                 odyssey://sessions/{session_id}/events.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tools = agents::list(&self.runtime).await.map_err(runtime_error)?;
        Ok(ListToolsResult::with_all_items(
            tools.iter().map(tool).collect(),
        ))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(
            resources::templates(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        Ok(resources::read(&self.runtime, &request.uri).await?.into())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let agent = self.find(&request.name).await?;
        let arguments = Arguments::parse(request.arguments.as_ref())?;
        Ok(self.run(&agent, arguments, context).await?.into())
    }
}

/// The arguments of a call.
#[derive(Debug, PartialEq)]
struct Arguments {
    prompt: String,
    session_id: Option<String>,
}

impl Arguments {
    fn parse(arguments: Option<&JsonObject>) -> Result<Self, McpError> {
        let bad = |why: &str| McpError::invalid_params(why.to_owned(), None);
        let empty = JsonObject::new();
        let arguments = arguments.unwrap_or(&empty);
        if let Some(other) = arguments
            .keys()
            .find(|k| !matches!(k.as_str(), "prompt" | "session_id"))
        {
            return Err(bad(&format!(
                "unknown argument `{}`: an agent takes `prompt` and, to continue a session, \
                 `session_id`",
                shorten(other)
            )));
        }
        let prompt = match arguments.get("prompt") {
            Some(Value::String(p)) if !p.trim().is_empty() => p.clone(),
            Some(Value::String(_)) => return Err(bad("argument `prompt` is empty")),
            Some(_) => return Err(bad("argument `prompt` must be a string")),
            None => return Err(bad("argument `prompt` is required")),
        };
        let session_id = match arguments.get("session_id") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(bad("argument `session_id` must be a string")),
        };
        Ok(Self { prompt, session_id })
    }
}

/// The tool of one agent.
fn tool(agent: &AgentTool) -> Tool {
    let schema = json!({
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "description": "What to ask the agent."},
            "session_id": {
                "type": "string",
                "description": "Continue this session (from an earlier answer) instead of starting a new one."
            }
        },
        "required": ["prompt"],
        "additionalProperties": false
    });
    let schema = match schema {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    Tool::new(
        agent.name.clone(),
        agent.description.clone(),
        Arc::new(schema),
    )
}

/// The call's result: the final text of a completed turn; otherwise an error result saying
/// how the turn ended. Both carry the session and turn ids as structured content.
fn answer(status: &ExecutionStatus) -> CallToolResult {
    let ids = json!({
        "session_id": status.session_id.to_string(),
        "execution_id": status.execution_id.to_string(),
        "state": state_name(status.state),
    });
    let mut result = if status.state == ExecutionState::Completed {
        CallToolResult::success(vec![ContentBlock::text(status.response.clone())])
    } else {
        let mut why = format!("the turn {}", state_name(status.state));
        if !status.error.is_empty() {
            why = format!("{why}: {}", status.error);
        }
        CallToolResult::error(vec![ContentBlock::text(why)])
    };
    result.structured_content = Some(ids);
    result
}

fn state_name(state: ExecutionState) -> &'static str {
    match state {
        ExecutionState::Queued => "queued",
        ExecutionState::Running => "running",
        ExecutionState::WaitingApproval => "waiting_approval",
        ExecutionState::Completed => "completed",
        ExecutionState::Failed => "failed",
        ExecutionState::Cancelled => "cancelled",
        ExecutionState::Interrupted => "interrupted",
    }
}

/// How long the answer waits for the progress notifications of the turn's last events.
const PROGRESS_DRAIN: Duration = Duration::from_secs(5);

/// Sends a progress notification for each of the turn's events, its type as the message,
/// up to the turn's `turn_completed`.
async fn forward_progress(
    peer: Peer<RoleServer>,
    token: ProgressToken,
    mut subscription: Subscription,
    execution_id: Uuid,
) {
    let mut count = 0u64;
    while let Ok(Some(batch)) = subscription.next_batch().await {
        for event in batch {
            if event.turn_id != Some(execution_id) {
                continue;
            }
            count += 1;
            let mut param = ProgressNotificationParam::new(token.clone(), count as f64);
            param.message = Some(event.payload.type_name().to_owned());
            if peer.notify_progress(param).await.is_err() {
                return;
            }
            if matches!(event.payload, EventPayload::TurnCompleted(_)) {
                return;
            }
        }
    }
}

/// Cancels the turn if the call is dropped before the turn ends (the client went away),
/// unless the server is stopping.
struct CancelOnDrop {
    runtime: OdysseyRuntime,
    execution_id: Option<Uuid>,
    shutdown: CancellationToken,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.shutdown.is_cancelled() {
            return;
        }
        if let Some(id) = self.execution_id.take() {
            let runtime = self.runtime.clone();
            tokio::spawn(async move {
                if let Err(e) = runtime.cancel(id).await {
                    tracing::warn!(execution = %id, error = %e, "cannot cancel the turn of an abandoned MCP call");
                }
            });
        }
    }
}

/// A core error as an MCP error: the client's mistakes as invalid params, the rest with
/// their message; internal errors go to the log, not to the client.
pub(super) fn runtime_error(error: RuntimeError) -> McpError {
    let data = Some(json!({"reason": error.reason()}));
    match error.kind() {
        ErrorKind::Internal => {
            tracing::error!(error = %error, "internal error");
            McpError::internal_error("internal error; the server log has the details", None)
        }
        ErrorKind::InvalidArgument | ErrorKind::NotFound => {
            McpError::invalid_params(error.client_message(), data)
        }
        _ => McpError::invalid_request(error.client_message(), data),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> JsonObject {
        match value {
            Value::Object(map) => map,
            _ => panic!("not an object"),
        }
    }

    #[test]
    fn a_prompt_and_an_optional_session_id_are_the_arguments() {
        let parsed = Arguments::parse(Some(&object(json!({"prompt": "hi"})))).unwrap();
        assert_eq!(parsed.prompt, "hi");
        assert_eq!(parsed.session_id, None);
        let parsed =
            Arguments::parse(Some(&object(json!({"prompt": "hi", "session_id": "s"})))).unwrap();
        assert_eq!(parsed.session_id.as_deref(), Some("s"));
    }

    #[test]
    fn a_missing_empty_or_mistyped_prompt_or_an_unknown_argument_is_refused_by_name() {
        for (arguments, names) in [
            (json!({}), "prompt"),
            (json!({"prompt": " "}), "prompt"),
            (json!({"prompt": 3}), "prompt"),
            (json!({"prompt": "hi", "session_id": 3}), "session_id"),
            (json!({"prompt": "hi", "sesion": "x"}), "sesion"),
        ] {
            let error = Arguments::parse(Some(&object(arguments))).unwrap_err();
            assert_eq!(error.code, rmcp::model::ErrorCode::INVALID_PARAMS);
            assert!(error.message.contains(names), "{}", error.message);
        }
        assert!(Arguments::parse(None).is_err());
    }
}
