//! Sub-agents: the builtin `Agent` tool. A call starts a child session on another agent of
//! the same bundle (one the calling agent's `spec.delegates` names), runs one turn on it
//! and answers with the child's final text.
//!
//! The child is an ordinary session, linked to its parent (`parent_session_id`,
//! `parent_call_id`): its events stay in its own log, and clients follow it like any other.
//! What it may do is its own agent's, narrowed by every agent above it (see
//! `create_subagent_session` and the gate). The parent's turn waits for its children
//! without holding a worker slot (the turn loop runs a model step's `Agent` calls together
//! inside `WorkerSlot::release_while`), so children never starve the pool; and when the
//! parent's turn ends first (cancelled, deleted, timed out) its running children are
//! cancelled.

use std::sync::Arc;

use futures::future::{BoxFuture, FutureExt};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::Semaphore;
use uuid::Uuid;

use super::{ExecutionRequest, ExecutionState};
use crate::api::{OdysseyRuntime, SubagentSpec};
use crate::bundle::{AgentDefinition, InstalledBundle};
use crate::chat::TokenUsage;
use crate::events::{
    EventPayload, SubagentFinished, SubagentStarted, SubagentWorkspace, TurnOutcome,
};
use crate::provider::ToolSpec;
use crate::session::{EventSink, SessionRecord};
use crate::tools::builtin::AGENT_TOOL_NAME as NAME;
use crate::tools::builtin::args::{invalid, parse};
use crate::tools::builtin::spec_of;
use crate::tools::{Tool, ToolContext, ToolOutput};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AgentArgs {
    /// The agent to start, one of those this tool's description lists.
    agent: String,
    /// The task, with everything the agent needs to know: it sees nothing of this
    /// conversation. Its final answer comes back as this call's result.
    prompt: String,
    /// `fresh` (the default): the agent works in an empty workspace of its own. `shared`:
    /// it works in this session's workspace, and sees and changes its files.
    #[serde(default)]
    workspace: Option<WorkspaceArg>,
}

#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum WorkspaceArg {
    Shared,
    Fresh,
}

/// What one `Agent` call produced: the tool's answer, and the tokens the child spent
/// (which count in the parent's turn).
pub(crate) struct Delegated {
    pub output: ToolOutput,
    pub usage: TokenUsage,
}

impl Delegated {
    fn refused(output: ToolOutput) -> Self {
        Self {
            output,
            usage: TokenUsage::default(),
        }
    }
}

/// One parent turn's way to start sub-agents.
pub(crate) struct Delegation {
    runtime: OdysseyRuntime,
    bundle: Arc<InstalledBundle>,
    parent: SessionRecord,
    parent_agent: AgentDefinition,
    /// The children this turn may run at once.
    running: Semaphore,
}

impl Delegation {
    /// `None` unless `agent` has delegates.
    pub fn for_turn(
        runtime: &OdysseyRuntime,
        bundle: &Arc<InstalledBundle>,
        parent: &SessionRecord,
        agent: &AgentDefinition,
    ) -> Option<Arc<Self>> {
        if agent.delegates.is_empty() {
            return None;
        }
        let at_once = runtime.inner.config.max_concurrent_subagents.max(1) as usize;
        Some(Arc::new(Self {
            runtime: runtime.clone(),
            bundle: bundle.clone(),
            parent: parent.clone(),
            parent_agent: agent.clone(),
            running: Semaphore::new(at_once),
        }))
    }

    /// The `Agent` tool as the model is offered it.
    pub fn tool(self: &Arc<Self>) -> Arc<dyn Tool> {
        Arc::new(AgentTool(self.clone()))
    }

    /// Whether `name` is this turn's `Agent` tool.
    pub fn handles(&self, name: &str) -> bool {
        name == NAME
    }

    /// Runs one call: a child session, one turn on it, its answer. `budget_left` is what
    /// the parent session has left of its token budget, if it has one.
    pub async fn run(
        &self,
        ctx: ToolContext,
        arguments: Value,
        budget_left: Option<u64>,
    ) -> Delegated {
        let args: AgentArgs = match parse(NAME, arguments) {
            Ok(args) => args,
            Err(output) => return Delegated::refused(output),
        };
        if let Err(output) = self.check(&args, budget_left) {
            return Delegated::refused(output);
        }
        let Ok(_running) = self.running.acquire().await else {
            return Delegated::refused(ToolOutput::error("the turn is ending"));
        };
        let workspace = match args.workspace {
            Some(WorkspaceArg::Shared) => SubagentWorkspace::Shared,
            Some(WorkspaceArg::Fresh) | None => SubagentWorkspace::Fresh,
        };
        let spec = SubagentSpec {
            parent: &self.parent,
            parent_agent: &self.parent_agent,
            bundle: &self.bundle,
            agent_id: &args.agent,
            call_id: &ctx.call_id,
            shared_workspace: workspace == SubagentWorkspace::Shared,
            token_budget: budget_left,
        };
        let child = match self.runtime.create_subagent_session(spec).await {
            Ok(child) => child.record.id,
            Err(e) => {
                return Delegated::refused(ToolOutput::error(format!(
                    "cannot start agent `{}`: {}",
                    args.agent,
                    e.client_message()
                )));
            }
        };
        let request = ExecutionRequest {
            session_id: child,
            prompt: args.prompt,
            ..ExecutionRequest::default()
        };
        let handle = match self.runtime.submit(request).await {
            Ok(handle) => handle,
            Err(e) => {
                return Delegated::refused(ToolOutput::error(format!(
                    "cannot start agent `{}` (session {child}): {}",
                    args.agent,
                    e.client_message()
                )));
            }
        };
        let mut watch = ChildWatch {
            runtime: self.runtime.clone(),
            events: ctx.events.clone(),
            finished: SubagentFinished {
                call_id: ctx.call_id.clone(),
                child_session_id: child,
                child_turn_id: handle.execution_id,
                agent_id: args.agent.clone(),
                outcome: TurnOutcome::Cancelled,
                error: String::new(),
                usage: TokenUsage::default(),
            },
            done: false,
        };
        let started = EventPayload::SubagentStarted(SubagentStarted {
            call_id: ctx.call_id.clone(),
            child_session_id: child,
            child_turn_id: handle.execution_id,
            agent_id: args.agent.clone(),
            workspace,
        });
        if let Err(e) = ctx.events.emit(started) {
            tracing::warn!(session = %self.parent.id, error = %e, "cannot record a sub-agent's start");
        }
        let status = self.runtime.wait(handle.execution_id).await;
        watch.done = true;
        let (outcome, answer, error, usage) = match status {
            Ok(status) => (
                outcome_of(status.state),
                status.response,
                status.error,
                status.usage,
            ),
            Err(e) => (
                TurnOutcome::Failed,
                String::new(),
                e.client_message(),
                TokenUsage::default(),
            ),
        };
        let finished = SubagentFinished {
            outcome,
            error: error.clone(),
            usage,
            ..watch.finished.clone()
        };
        if let Err(e) = ctx.events.emit(EventPayload::SubagentFinished(finished)) {
            tracing::warn!(session = %self.parent.id, error = %e, "cannot record a sub-agent's end");
        }
        let output = match outcome {
            TurnOutcome::Completed => {
                let mut answer = answer;
                crate::event_bounds::bound_result(&mut answer);
                ToolOutput::ok(answer)
            }
            _ => {
                let mut message = format!(
                    "agent `{}` (session {child}) did not finish its task: its turn ended {}",
                    args.agent,
                    outcome_name(outcome)
                );
                if !error.is_empty() {
                    message.push_str(": ");
                    message.push_str(&error);
                }
                crate::event_bounds::bound_result(&mut message);
                ToolOutput::error(message)
            }
        };
        Delegated { output, usage }
    }

    /// Refuses a call this turn may not make: an agent that is not a delegate, an empty
    /// task, a session already at the depth limit, a spent budget.
    fn check(&self, args: &AgentArgs, budget_left: Option<u64>) -> Result<(), ToolOutput> {
        let delegates = &self.parent_agent.delegates;
        if !delegates.iter().any(|d| d == &args.agent) {
            return Err(invalid(
                NAME,
                "agent",
                format!(
                    "`{}` is not an agent `{}` may start; it may start: {}",
                    args.agent,
                    self.parent_agent.id,
                    delegates.join(", ")
                ),
            ));
        }
        if args.prompt.trim().is_empty() {
            return Err(invalid(NAME, "prompt", "must not be empty"));
        }
        let max_depth = self.runtime.inner.config.max_subagent_depth;
        let depth = self.parent.parent.as_ref().map_or(0, |p| p.ancestors.len());
        if max_depth == 0 {
            return Err(ToolOutput::error(format!(
                "cannot start agent `{}`: sub-agents are turned off on this server \
                 (turns.max_subagent_depth is 0); do the task here",
                args.agent
            )));
        }
        if depth + 1 > max_depth as usize {
            return Err(ToolOutput::error(format!(
                "cannot start agent `{}`: this session is a sub-agent {depth} level(s) deep, \
                 and sub-agents nest at most {max_depth} deep on this server; do the task here",
                args.agent
            )));
        }
        if budget_left == Some(0) {
            return Err(ToolOutput::error(
                "cannot start a sub-agent: the session has spent its token budget",
            ));
        }
        Ok(())
    }

    /// The tool's description: what it does and the agents it may start.
    fn description(&self) -> String {
        let mut text = String::from(
            "Start a sub-agent: another agent that works on a task on its own and answers with \
             its result. Give it everything it needs in `prompt`; it sees nothing of this \
             conversation. Several calls in one step run at the same time. Agents you may \
             start:",
        );
        for id in &self.parent_agent.delegates {
            let about = self
                .bundle
                .manifest
                .agent(id)
                .map(|a| a.description.as_str())
                .unwrap_or_default();
            text.push_str(&format!("\n- {id}"));
            if !about.is_empty() {
                text.push_str(&format!(": {about}"));
            }
        }
        text
    }
}

/// The builtin `Agent` tool of one turn.
struct AgentTool(Arc<Delegation>);

impl Tool for AgentTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            description: self.0.description(),
            ..spec_of::<AgentArgs>(NAME, "")
        }
    }

    /// Rules name the agent: `Agent(coder)`.
    fn permission_subject(&self, _ctx: &ToolContext, arguments: &Value) -> Option<String> {
        arguments
            .get("agent")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    /// Called outside a turn's loop (which runs `Agent` calls itself, together and without
    /// holding a worker slot), the child's usage is not added to any turn.
    fn call(&self, ctx: ToolContext, arguments: Value) -> BoxFuture<'static, ToolOutput> {
        let delegation = self.0.clone();
        async move { delegation.run(ctx, arguments, None).await.output }.boxed()
    }
}

/// Cancels the child's turn if the parent's ends first (the future waiting for it is
/// dropped), and records in the parent's log that the child was stopped.
struct ChildWatch {
    runtime: OdysseyRuntime,
    events: EventSink,
    finished: SubagentFinished,
    done: bool,
}

impl Drop for ChildWatch {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let finished = SubagentFinished {
            outcome: TurnOutcome::Cancelled,
            error: "the parent's turn ended first".into(),
            ..self.finished.clone()
        };
        if let Err(e) = self.events.emit(EventPayload::SubagentFinished(finished)) {
            tracing::warn!(error = %e, "cannot record a sub-agent's cancellation");
        }
        let runtime = self.runtime.clone();
        let execution_id: Uuid = self.finished.child_turn_id;
        self.runtime.inner.turns.spawn(async move {
            let _ = runtime
                .cancel_because(execution_id, "the parent's turn ended")
                .await;
        });
    }
}

fn outcome_of(state: ExecutionState) -> TurnOutcome {
    match state {
        ExecutionState::Completed => TurnOutcome::Completed,
        ExecutionState::Cancelled => TurnOutcome::Cancelled,
        ExecutionState::Interrupted => TurnOutcome::Interrupted,
        _ => TurnOutcome::Failed,
    }
}

fn outcome_name(outcome: TurnOutcome) -> &'static str {
    match outcome {
        TurnOutcome::Completed => "completed",
        TurnOutcome::Failed => "failed",
        TurnOutcome::Cancelled => "cancelled",
        TurnOutcome::Interrupted => "interrupted",
    }
}
