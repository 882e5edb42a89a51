//! One turn's ReAct loop: call the model, stream its answer into events, run the tools it
//! asks for, feed their results back, until it answers without tools or a budget runs out.

use std::sync::Arc;

use futures::StreamExt;
use uuid::Uuid;

use crate::chat::{ChatMessage, ReasoningState, TokenUsage, ToolCall};
use crate::error::{Result, RuntimeError};
use crate::event_bounds::{DELTA_BYTES, split};
use crate::events::EventPayload;
use crate::model::ModelSpec;
use crate::provider::{ModelDelta, ModelProvider, ModelRequest};
use crate::session::{HistorySnapshot, SessionHandle};
use crate::tools::images::TurnImages;
use crate::tools::{ToolContext, ToolOutput, ToolSet};

use super::arguments;
use super::budget::TokenBudgets;
use super::gate::{Call, Gate, Verdict};
use super::inbox::Inbox;
use super::long_term_memory::TurnMemory;
use super::slot::WorkerSlot;
use super::subagent::Delegation;

/// Everything a turn needs, resolved before it starts.
pub(crate) struct Turn {
    pub session: Arc<SessionHandle>,
    pub turn_id: Uuid,
    pub model: ModelSpec,
    pub provider: Arc<dyn ModelProvider>,
    pub system_prompt: String,
    /// The session's summary and earlier turns, windowed when the turn starts.
    pub history: HistorySnapshot,
    pub tools: ToolSet,
    pub tool_context: ToolContext,
    pub max_steps: u32,
    /// Model calls the session made before this turn.
    pub prior_model_calls: u64,
    pub gate: Gate,
    pub budgets: TokenBudgets,
    /// Long-term memory, when it is on for this agent.
    pub memory: Option<TurnMemory>,
    /// Input steered into the turn while it runs.
    pub inbox: Arc<Inbox>,
    /// How this turn starts sub-agents, when its agent has delegates.
    pub delegation: Option<Arc<Delegation>>,
}

/// What a turn produced so far. Kept outside the loop's future so that a cancelled or
/// timed-out turn still records what it did.
#[derive(Default)]
pub(crate) struct Progress {
    pub messages: Vec<ChatMessage>,
    pub response: String,
    pub usage: TokenUsage,
    pub model_calls: u32,
    /// The approval request the turn is waiting on, if any: a turn stopped meanwhile
    /// records how that request ended.
    pub pending_approval: Option<String>,
    /// The long-term memory record of the answer being written; the turn's end is
    /// published once it is done.
    pub remembering: Option<tokio::task::JoinHandle<()>>,
    /// The images tool results passed to the model so far, against the turn's limits.
    pub images: TurnImages,
}

/// What the gate made of a call.
enum Admitted {
    /// Run it through the tool set.
    Run(ToolContext),
    /// An `Agent` call: run it with the step's other children.
    Child(ToolContext, serde_json::Value),
    /// Answer it with this, without running it.
    Refused(ToolOutput),
}

/// Why a turn failed, as an event code and message.
pub(crate) struct TurnFailure {
    pub code: String,
    pub message: String,
}

impl From<RuntimeError> for TurnFailure {
    fn from(e: RuntimeError) -> Self {
        Self {
            code: e.reason().to_ascii_lowercase(),
            message: e.client_message(),
        }
    }
}

/// Replaces the arguments of calls beyond [`arguments::MAX_DEPTH`] or
/// [`arguments::MAX_BYTES`] by a placeholder, so they reach no event and no turn record;
/// returns why each call was refused (`None`: it stands).
fn bound_arguments(calls: &mut [ToolCall]) -> Vec<Option<String>> {
    calls
        .iter_mut()
        .map(|call| {
            let refusal = arguments::refusal(&call.arguments);
            if refusal.is_some() {
                call.arguments = arguments::REFUSED_PLACEHOLDER.to_owned();
            }
            refusal
        })
        .collect()
}

impl Turn {
    /// Runs the loop, recording into `progress` as it goes.
    pub async fn run(
        &self,
        prompt: &str,
        progress: &mut Progress,
        slot: &mut WorkerSlot,
    ) -> std::result::Result<(), TurnFailure> {
        progress.messages.push(ChatMessage::user(prompt));
        let mut specs = self.tools.specs();
        let history = self.windowed_history(prompt, &specs, progress).await?;
        for _ in 0..self.max_steps {
            self.budgets.check_session(progress)?;
            // Input steered in since the last call joins here, after the tool results.
            progress
                .messages
                .extend(self.inbox.take().into_iter().map(ChatMessage::user));
            // An MCP server whose tools changed during the turn is listed again, so the
            // next model call is told of its new tools.
            if self
                .tools
                .refresh_mcp(&self.tool_context, |name| self.gate.offered(name))
                .await
            {
                specs = self.tools.specs();
            }
            let mut messages = history.clone();
            messages.extend(progress.messages.iter().cloned());
            let request = ModelRequest {
                model: self.model.clone(),
                system_prompt: self.system_prompt.clone(),
                messages,
                tools: specs.clone(),
                call_index: self.prior_model_calls + u64::from(progress.model_calls),
            };
            progress.model_calls += 1;
            let (text, mut calls, reasoning_state) = self.stream_answer(request, progress).await?;
            let refusals = bound_arguments(&mut calls);
            progress.messages.push(ChatMessage {
                reasoning_state,
                ..ChatMessage::assistant(text.clone(), calls.clone())
            });
            self.budgets.check_output(progress)?;
            // An answer is final unless input was steered in meanwhile: then the model is
            // asked again, with it.
            if calls.is_empty() && self.inbox.close_if_empty() {
                progress.remembering = self.remember(prompt, &text);
                progress.response = text;
                return Ok(());
            }
            let mut results = Vec::with_capacity(calls.len());
            let mut children = Vec::new();
            for (call, refusal) in calls.into_iter().zip(refusals) {
                let result = match refusal {
                    Some(why) => Some(self.refuse_tool(&call, &why)?),
                    None => match self.admit(&call, progress, slot).await? {
                        Admitted::Child(ctx, arguments) => {
                            children.push((results.len(), call, ctx, arguments));
                            None
                        }
                        Admitted::Run(ctx) => {
                            let waits = ctx.person.watch();
                            let call_tool = self.tools.call(ctx, &call.name, &call.arguments);
                            let output = match self.tools.get(&call.name) {
                                Some(tool) if tool.releases_worker() => {
                                    slot.release_while(call_tool).await
                                }
                                _ => slot.release_while_waiting(call_tool, waits).await,
                            };
                            Some(self.finish_tool(&call, output, progress)?)
                        }
                        Admitted::Refused(output) => {
                            Some(self.finish_tool(&call, output, progress)?)
                        }
                    },
                };
                results.push(result);
            }
            if !children.is_empty() {
                self.run_children(children, &mut results, progress, slot)
                    .await?;
            }
            progress.messages.extend(results.into_iter().flatten());
        }
        Err(TurnFailure {
            code: "step_budget_exceeded".into(),
            message: format!(
                "the turn used its budget of {} model calls without a final answer",
                self.max_steps
            ),
        })
    }

    /// Streams one model call into events; returns its text, tool calls and reasoning
    /// state.
    async fn stream_answer(
        &self,
        request: ModelRequest,
        progress: &mut Progress,
    ) -> Result<(String, Vec<ToolCall>, Vec<ReasoningState>)> {
        let mut stream = self.provider.stream(request);
        let mut text = String::new();
        let mut calls = Vec::new();
        let mut reasoning_state = Vec::new();
        while let Some(delta) = stream.next().await {
            match delta? {
                ModelDelta::Text(delta) => {
                    text.push_str(&delta);
                    for piece in split(&delta, DELTA_BYTES) {
                        self.emit(EventPayload::AgentMessageDelta {
                            delta: piece.to_owned(),
                        })?;
                    }
                }
                ModelDelta::Reasoning(delta) => {
                    for piece in split(&delta, DELTA_BYTES) {
                        self.emit(EventPayload::ReasoningDelta {
                            delta: piece.to_owned(),
                        })?;
                    }
                }
                ModelDelta::ReasoningBreak => {
                    self.emit(EventPayload::ReasoningSectionBreak)?;
                }
                ModelDelta::ToolCall {
                    id,
                    name,
                    arguments,
                } => calls.push(ToolCall {
                    id,
                    name,
                    arguments,
                }),
                ModelDelta::Usage(call) => {
                    progress.usage += call;
                    self.emit(EventPayload::TokenUsageReported {
                        call,
                        turn_total: progress.usage,
                    })?;
                }
                ModelDelta::ReasoningState(state) => reasoning_state.push(state),
            }
        }
        Ok((text, calls, reasoning_state))
    }

    /// Records a call's start and puts it through the gate: what is then to be done with
    /// it. `Agent` calls come back as children for [`Self::run_children`].
    async fn admit(
        &self,
        call: &ToolCall,
        progress: &mut Progress,
        slot: &mut WorkerSlot,
    ) -> Result<Admitted> {
        let parsed: Option<serde_json::Value> = if call.arguments.trim().is_empty() {
            Some(serde_json::Value::Object(Default::default()))
        } else {
            serde_json::from_str(&call.arguments).ok()
        };
        let tool = self.tools.get(&call.name);
        let recorded = match (&tool, &parsed) {
            (Some(tool), Some(arguments)) => tool.sanitize(arguments),
            (_, Some(arguments)) => arguments.clone(),
            (_, None) => serde_json::Value::String(call.arguments.clone()),
        };
        self.emit(EventPayload::ToolCallStarted {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            arguments: recorded.clone(),
        })?;
        let ctx = ToolContext {
            call_id: call.id.clone(),
            person: Default::default(),
            ..self.tool_context.clone()
        };
        let verdict = match (&tool, &parsed) {
            (Some(tool), Some(arguments)) => {
                let checked = Call {
                    tool: tool.as_ref(),
                    name: &call.name,
                    arguments,
                    sanitized: &recorded,
                };
                self.gate.check(checked, &ctx, progress, slot).await?
            }
            // Unknown tools and malformed arguments are answered by the tool set.
            _ => Verdict::Run,
        };
        Ok(match (verdict, parsed) {
            (Verdict::Refuse(reason), _) => Admitted::Refused(ToolOutput::error(reason)),
            (Verdict::Run, Some(arguments))
                if tool.is_some()
                    && self
                        .delegation
                        .as_ref()
                        .is_some_and(|d| d.handles(&call.name)) =>
            {
                Admitted::Child(ctx, arguments)
            }
            (Verdict::Run, _) => Admitted::Run(ctx),
        })
    }

    /// Runs a model step's `Agent` calls together (at most the per-turn limit at once)
    /// without holding the worker slot, so the children can have it; their usage counts in
    /// this turn.
    async fn run_children(
        &self,
        children: Vec<(usize, ToolCall, ToolContext, serde_json::Value)>,
        results: &mut [Option<ChatMessage>],
        progress: &mut Progress,
        slot: &mut WorkerSlot,
    ) -> Result<()> {
        let Some(delegation) = &self.delegation else {
            return Ok(());
        };
        let budget_left = self.budgets.left(progress);
        let runs = children.iter().map(|(_, _, ctx, arguments)| {
            delegation.run(ctx.clone(), arguments.clone(), budget_left)
        });
        let done = slot.release_while(futures::future::join_all(runs)).await;
        for ((index, call, _, _), delegated) in children.into_iter().zip(done) {
            progress.usage += delegated.usage;
            let message = self.finish_tool(&call, delegated.output, progress)?;
            if let Some(slot) = results.get_mut(index) {
                *slot = Some(message);
            }
        }
        Ok(())
    }

    /// Records a call's result and turns it into the message the model gets. Its images
    /// go to the model within the turn's limits; the event has only their descriptions.
    fn finish_tool(
        &self,
        call: &ToolCall,
        mut output: ToolOutput,
        progress: &mut Progress,
    ) -> Result<ChatMessage> {
        let images = progress
            .images
            .admit(std::mem::take(&mut output.images), &mut output.content);
        self.emit(EventPayload::ToolCallFinished {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            success: !output.is_error,
            result: output.content.clone(),
        })?;
        Ok(ChatMessage {
            images,
            ..ChatMessage::tool_result(call.id.clone(), output.content, output.is_error)
        })
    }

    /// Answers a call whose arguments are beyond the limits: recorded with a note in their
    /// place, never run, and the model is told which limit it crossed.
    fn refuse_tool(&self, call: &ToolCall, why: &str) -> Result<ChatMessage> {
        self.emit(EventPayload::ToolCallStarted {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            arguments: serde_json::json!({ "refused": why }),
        })?;
        let message = format!("the call was refused and did not run: {why}");
        self.emit(EventPayload::ToolCallFinished {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            success: false,
            result: message.clone(),
        })?;
        Ok(ChatMessage::tool_result(call.id.clone(), message, true))
    }

    pub(super) fn emit(&self, payload: EventPayload) -> Result<()> {
        self.session
            .append_now(Some(self.turn_id), payload)
            .map(|_| ())
    }
}
