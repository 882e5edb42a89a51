//! Running one turn end to end: taking jobs off the queue into worker slots, resolving
//! what a turn runs with, running it under its budgets and cancellation, and recording how
//! it ended. [`OdysseyRuntime::submit`] and the other facade methods only queue, wait and
//! cancel.

use std::path::Path;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::sync::OwnedSemaphorePermit;
use uuid::Uuid;

use super::end::TurnEnd;
use super::{
    CancelSignal, Delegation, ExecutionRequest, ExecutionState, Gate, Inbox, Job, Progress,
    TokenBudgets, Turn, TurnFailure, WorkerSlot, ensure_session_budget, tokens_spent,
};
use crate::api::OdysseyRuntime;
use crate::error::{Result, RuntimeError};
use crate::events::{
    ApprovalDecision, ApprovalResolution, EventPayload, TurnCompleted, TurnContext, TurnOutcome,
    TurnStarted,
};
use crate::permissions::PermissionRules;
use crate::sandbox::ProcessView;
use crate::session::{EventSink, SessionHandle};
use crate::tools::ToolContext;
use crate::tools::a2a::RemoteInput;
use crate::tools::builtin::AGENT_TOOL_NAME;

/// How often a server sharing its store looks for the turns of servers that stopped.
const SHARED_QUEUE_CHECK: std::time::Duration = std::time::Duration::from_secs(1);

impl OdysseyRuntime {
    /// Starts queued turns while worker slots are free. Boxed: a turn it starts awaits it
    /// again once done.
    pub(crate) fn pump(&self) -> BoxFuture<'_, ()> {
        async move { self.pump_queue().await }.boxed()
    }

    /// After a worker is freed (a turn ended, or waits for a person): takes waiting turns
    /// only if the queue knows of some, so that a turn's end costs no claim that finds
    /// none (a round trip to a shared store). Turns another server left are taken by the
    /// look every second; a count read a moment too low is set right by the same look.
    pub(crate) fn pump_waiting(&self) -> BoxFuture<'_, ()> {
        async move {
            if self.inner.queue.queued() > 0 {
                self.pump_queue().await;
            }
        }
        .boxed()
    }

    async fn pump_queue(&self) {
        loop {
            let Ok(permit) = self.inner.slots.clone().try_acquire_owned() else {
                return;
            };
            let job = match self.inner.queue.claim_next().await {
                Ok(Some(job)) => job,
                Ok(None) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot take a turn off the queue");
                    return;
                }
            };
            let runtime = self.clone();
            self.inner
                .turns
                .spawn(async move { runtime.run_job(job, permit).await });
            // Nothing more waits (as the queue last knew): no claim that would find none.
            // (A store several servers share is also looked at every second.)
            if self.inner.queue.queued() == 0 {
                return;
            }
        }
    }

    /// With a store several servers share: now and then, closes the turns of servers
    /// that stopped (interrupted, in their sessions' logs) and takes waiting turns no
    /// running server would start (a stopped server's). Ends with the runtime.
    pub(crate) fn watch_shared_queue(&self) {
        if !self.shares_store() {
            return;
        }
        let runtime = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(SHARED_QUEUE_CHECK);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(inner) = runtime.upgrade() else {
                    return;
                };
                let runtime = OdysseyRuntime { inner };
                if runtime
                    .inner
                    .shutting_down
                    .load(std::sync::atomic::Ordering::Acquire)
                {
                    return;
                }
                runtime.close_abandoned_turns().await;
                runtime.pump().await;
            }
        });
    }

    /// Tells the queue the session's turn ended. A store that cannot be reached is asked
    /// again, in the background, until it answers: until then the session's next turn
    /// cannot start anywhere.
    async fn finish_in_queue(&self, session_id: Uuid) {
        let error = match self.inner.queue.finish(session_id).await {
            Ok(()) => return,
            Err(e) => e,
        };
        if !matches!(error, crate::store::StoreError::Unavailable(_)) {
            tracing::warn!(session = %session_id, error = %error, "cannot mark the session's turn finished in the queue");
            return;
        }
        tracing::warn!(session = %session_id, error = %error, "the store is unavailable; the session's turn is marked finished once it is back");
        let runtime = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            let mut delay = std::time::Duration::from_millis(200);
            loop {
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(std::time::Duration::from_secs(5));
                let Some(inner) = runtime.upgrade() else {
                    return;
                };
                match inner.queue.finish(session_id).await {
                    Ok(()) => {
                        OdysseyRuntime { inner }.pump().await;
                        return;
                    }
                    Err(crate::store::StoreError::Unavailable(_)) => {}
                    Err(e) => {
                        tracing::warn!(session = %session_id, error = %e, "cannot mark the session's turn finished in the queue");
                        return;
                    }
                }
            }
        });
    }

    /// Closes, as interrupted, the turns the store says servers that stopped left running.
    async fn close_abandoned_turns(&self) {
        let sessions = match self.inner.queue.take_abandoned().await {
            Ok(sessions) => sessions,
            Err(e) => {
                tracing::warn!(error = %e, "cannot look for the turns of stopped servers");
                return;
            }
        };
        for id in sessions {
            let closed = match self.inner.sessions.get(id).await {
                Ok(session) => self.inner.sessions.close_open_turn(&session).await,
                Err(e) => Err(e),
            };
            match closed {
                Ok(()) => tracing::info!(session = %id, "closed the turn of a server that stopped"),
                Err(e) => {
                    tracing::warn!(session = %id, error = %e, "cannot close the turn of a server that stopped")
                }
            }
        }
    }

    async fn run_job(self, job: Job, permit: OwnedSemaphorePermit) {
        let session_id = job.request.session_id;
        let execution_id = job.execution_id;
        let signal = match self.inner.executions.cancel_signal(execution_id) {
            // A turn submitted through a server that stopped, claimed here from the store
            // several servers share: this server answers for it from now on.
            None if self.shares_store() => {
                Some(self.inner.executions.insert(execution_id, session_id))
            }
            signal => signal,
        };
        let runtime = self.clone();
        let mut slot = WorkerSlot::new(permit, self.inner.slots.clone(), move || {
            let runtime = runtime.clone();
            tokio::spawn(async move { runtime.pump_waiting().await });
        });
        match signal {
            Some(signal) => self.execute(job, &signal, &mut slot).await,
            None => tracing::error!(execution = %execution_id, "execution vanished before it ran"),
        }
        drop(slot);
        self.finish_in_queue(session_id).await;
        self.inner
            .sessions
            .evict_idle(self.inner.config.open_session_cache);
        self.pump_waiting().await;
    }

    /// Records a turn that never ran (cancelled in the queue, or the server stopping), so
    /// that every accepted execution has its turn in the log.
    pub(crate) async fn record_unstarted(&self, job: Job, outcome: TurnOutcome, why: &str) {
        self.inner.metrics.turns.ended_unstarted(outcome);
        let execution_id = job.execution_id;
        let executions = &self.inner.executions;
        let finish = |last_sequence: u64| {
            executions.update(execution_id, |s| {
                s.state = ExecutionState::from_outcome(outcome);
                s.error = why.into();
                s.first_sequence = s.first_sequence.max(last_sequence.saturating_sub(1));
                s.last_sequence = last_sequence;
            });
        };
        let Ok(session) = self.inner.sessions.get(job.request.session_id).await else {
            finish(0);
            return;
        };
        if let Err(e) = self.inner.sessions.close_open_turn(&session).await {
            tracing::warn!(execution = %execution_id, error = %e, "cannot record an unstarted turn");
            finish(0);
            return;
        }
        let context = self.turn_context(&session, &job.request);
        let started = TurnStarted {
            prompt: job.request.prompt.clone(),
            context,
        };
        let record = completed(outcome, String::new(), why.into(), Progress::default(), "");
        let appended =
            match session.append_now(Some(execution_id), EventPayload::TurnStarted(started)) {
                Ok(_) => {
                    session
                        .append_then(Some(execution_id), record, |event| finish(event.sequence))
                        .await
                }
                Err(e) => Err(e),
            };
        if let Err(e) = appended {
            tracing::warn!(execution = %execution_id, error = %e, "cannot record an unstarted turn");
            finish(0);
        }
        session.write_summary();
    }

    fn turn_context(&self, session: &SessionHandle, request: &ExecutionRequest) -> TurnContext {
        let record = session.record();
        TurnContext {
            cwd: crate::api::normalized_cwd(request.cwd.as_deref()),
            model: request
                .model
                .clone()
                .unwrap_or_else(|| record.model.clone()),
            sandbox_mode: record.sandbox_mode,
            approval_policy: record.approval_policy,
            metadata: request.metadata.clone(),
        }
    }

    /// Runs one turn end to end: events, budgets, cancellation, the turn record.
    async fn execute(&self, job: Job, signal: &Arc<CancelSignal>, slot: &mut WorkerSlot) {
        let running = self.inner.metrics.turns.begin();
        let execution_id = job.execution_id;
        let opened = match self.inner.sessions.get(job.request.session_id).await {
            Ok(session) => self
                .inner
                .sessions
                .close_open_turn(&session)
                .await
                .map(|()| session),
            Err(e) => Err(e),
        };
        let session = match opened {
            Ok(session) => session,
            Err(e) => {
                self.inner.executions.update(execution_id, |s| {
                    s.state = ExecutionState::Failed;
                    s.error = e.client_message();
                });
                return;
            }
        };
        if self.journals_turns()
            && let Err(e) = self.inner.journal.turn_started(session.id()).await
        {
            tracing::warn!(session = %session.id(), error = %e, "cannot journal turn start");
        }
        let context = self.turn_context(&session, &job.request);
        // Durable with the turn's end, or sooner if the turn runs long (see append_now);
        // nothing of the turn is visible before.
        let started = session.append_now(
            Some(execution_id),
            EventPayload::TurnStarted(TurnStarted {
                prompt: job.request.prompt.clone(),
                context: context.clone(),
            }),
        );
        let first_sequence = match started {
            Ok(event) => event.sequence,
            Err(e) => {
                // Written but not synced, the start stays in the log: the turn is closed
                // as failed later (and stays journaled until then).
                let error = format!("cannot record the turn's start: {}", e.client_message());
                let spent = (Default::default(), 0);
                if !session.abandon_turn(execution_id, TurnOutcome::Failed, error.clone(), spent) {
                    self.journal_turn_end(session.id()).await;
                }
                self.inner.executions.update(execution_id, |s| {
                    s.state = ExecutionState::Failed;
                    s.error = error;
                });
                return;
            }
        };
        self.inner.executions.update(execution_id, |s| {
            s.state = ExecutionState::Running;
            s.first_sequence = first_sequence;
        });
        let inbox = self.inner.inputs.open(session.id(), execution_id);

        let mut progress = Progress::default();
        let prepared = self
            .prepare_turn(
                &session,
                execution_id,
                &context,
                &job.request.prompt,
                signal,
                inbox,
            )
            .await;
        let end = match prepared {
            Err(e) => TurnEnd::failed(TurnFailure::from(e), signal),
            Ok(turn) => {
                let deadline = self.inner.config.max_turn_duration;
                tokio::select! {
                    result = turn.run(&job.request.prompt, &mut progress, slot) => match result {
                        Ok(()) => TurnEnd::Done,
                        Err(failure) => TurnEnd::failed(failure, signal),
                    },
                    () = signal.token().cancelled() => TurnEnd::stopped(signal),
                    () = tokio::time::sleep(deadline) => TurnEnd::failed(
                        TurnFailure {
                            code: "turn_timeout".into(),
                            message: format!(
                                "the turn ran past its wall-clock budget of {} s",
                                deadline.as_secs()
                            ),
                        },
                        signal,
                    ),
                }
            }
        };
        // Input steered in that no model call took stays in the turn's record, after what
        // the turn did (its events already say it arrived).
        let untaken = self.inner.inputs.close(session.id(), execution_id);
        progress
            .messages
            .extend(untaken.into_iter().map(crate::chat::ChatMessage::user));
        self.close_pending_approval(&session, execution_id, &mut progress, end.stopped_by())
            .await;
        if let TurnEnd::Failed(failure) = &end {
            let _ = session.append_now(
                Some(execution_id),
                EventPayload::ErrorOccurred {
                    code: failure.code.clone(),
                    message: failure.message.clone(),
                    fatal: true,
                },
            );
        }
        let snapshot = self.snapshot_workspace(&session, execution_id).await;
        let (outcome, error, reason) = end.into_outcome();
        // The status shows what the record keeps, so no answer is larger in one than in the
        // other (nor than a message may be).
        let mut response = std::mem::take(&mut progress.response);
        let mut error = error;
        crate::event_bounds::bound_text(&mut response);
        crate::event_bounds::bound_text(&mut error);
        let usage = progress.usage;
        let model_calls = progress.model_calls;
        let remembering = progress.remembering.take();
        let record = completed(outcome, response.clone(), error.clone(), progress, reason);
        let executions = &self.inner.executions;
        // The answer's long-term memory record is written, and the workspace snapshot
        // synced, while the end is synced: a caller that sees the turn ended finds the
        // record recalled by a new session and can fork from the turn.
        let session_id = session.id();
        let remembered = async move {
            let remembered = async {
                if let Some(task) = remembering {
                    let _ = task.await;
                }
            };
            let synced = async {
                let Some(snapshot) = snapshot else { return };
                match tokio::task::spawn_blocking(move || snapshot.sync()).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => {
                        tracing::warn!(session = %session_id, error = %e, "cannot sync the workspace snapshot");
                    }
                    Err(e) => {
                        tracing::warn!(session = %session_id, error = %e, "the workspace snapshot sync stopped");
                    }
                }
            };
            tokio::join!(remembered, synced);
        };
        let ended = session
            .append_after(Some(execution_id), record, remembered, |event| {
                executions.update(execution_id, |s| {
                    s.state = ExecutionState::from_outcome(outcome);
                    s.response = response;
                    s.error = error;
                    s.usage = usage;
                    s.last_sequence = event.sequence;
                });
            })
            .await;
        running.finish(if ended.is_ok() {
            outcome
        } else {
            TurnOutcome::Failed
        });
        match ended {
            Ok(_) => {
                self.journal_turn_end(session.id()).await;
                session.write_summary();
            }
            Err(e) => {
                // Unless the end was written and only its sync failed, the log shows the
                // turn running: it stays open (and journaled), and is closed as failed
                // before the session's next turn, or at the next start.
                let error = format!("cannot record the turn's end: {}", e.client_message());
                let open = session.abandon_turn(
                    execution_id,
                    TurnOutcome::Failed,
                    error.clone(),
                    (usage, model_calls),
                );
                if !open {
                    self.journal_turn_end(session.id()).await;
                }
                executions.update(execution_id, |s| {
                    s.state = ExecutionState::Failed;
                    s.error = error;
                });
            }
        }
    }

    /// Resolves what the turn runs with: bundle, agent, model provider, tools, history,
    /// memory, budgets.
    async fn prepare_turn(
        &self,
        session: &Arc<SessionHandle>,
        turn_id: Uuid,
        context: &TurnContext,
        input: &str,
        signal: &CancelSignal,
        inbox: Arc<Inbox>,
    ) -> Result<Turn> {
        let record = session.record().clone();
        let bundle = self.pinned_bundle(&record.bundle).await?;
        let agent = bundle
            .manifest
            .agent(&record.agent_id)
            .ok_or_else(|| {
                RuntimeError::FailedPrecondition(format!(
                    "agent `{}` is no longer in bundle {}",
                    record.agent_id, bundle.id
                ))
            })?
            .clone();
        let provider = self.inner.providers.resolve(&context.model, &bundle.root)?;
        let provider = self.record_calls(record.id, provider);
        let provider = self
            .inner
            .metrics
            .providers
            .meter(&context.model.provider, provider);
        let access = self.inner.config.access.grant(&bundle.manifest.sandbox)?;
        let cell = self.prepare_cell(session, &bundle).await?;
        let rules = PermissionRules::from_tool_rules(&agent.tools)?;
        let (inherited, ancestors) = match &record.parent {
            Some(link) => (
                link.inherited_rules
                    .iter()
                    .map(|r| {
                        PermissionRules::parse(&r.allow, &r.ask, &r.deny)
                            .map(|rules| (r.agent_id.clone(), rules))
                    })
                    .collect::<std::result::Result<Vec<_>, _>>()?,
                link.ancestors.clone(),
            ),
            None => (Vec::new(), Vec::new()),
        };
        let executions = self.clone();
        let gate = Gate {
            rules,
            inherited,
            ancestors: ancestors.clone(),
            policy: record.approval_policy,
            approvals: self.inner.approvals.clone(),
            hooks: self.inner.config.hooks.clone(),
            execution_id: turn_id,
            on_state: Box::new(move |state| {
                executions
                    .inner
                    .executions
                    .update(turn_id, |s| s.state = state);
            }),
        };
        let mut tools = self.turn_tools(&bundle, |name| gate.offered(name))?;
        let delegation = Delegation::for_turn(self, &bundle, &record, &agent);
        let declares_agent_tool = bundle
            .manifest
            .tools
            .iter()
            .any(|t| t.is_builtin() && t.name == AGENT_TOOL_NAME);
        if let Some(delegation) = &delegation
            && declares_agent_tool
            && gate.offered(AGENT_TOOL_NAME)
        {
            tools.insert(delegation.tool());
        }
        crate::api::workspace_dir(&cell.data, &context.cwd)?;
        let view = ProcessView::new(record.sandbox_mode, &cell);
        let stats = session.stats();
        ensure_session_budget(&record, &stats)?;
        let history = session.history();
        let memory = self.turn_memory(session, &agent);
        let memory_section = self
            .memory_section(session, memory.as_ref(), &history, turn_id)
            .await;
        let prompt = self
            .turn_prompt(
                &bundle,
                &agent.prompt,
                &cell,
                context,
                &tools,
                input,
                memory_section,
            )
            .await?;
        let mut turn = Turn {
            session: session.clone(),
            turn_id,
            model: context.model.clone(),
            provider,
            system_prompt: prompt.text,
            history,
            tools,
            tool_context: ToolContext {
                session_id: record.id,
                turn_id,
                call_id: String::new(),
                parent_session_ids: ancestors,
                cwd: view.in_workspace(Path::new(&context.cwd)),
                view,
                cell,
                bundle: bundle.clone(),
                mode: record.sandbox_mode,
                sandbox_user: self.inner.sandbox.user(),
                mounts_read: access.mounts_read,
                mounts_write: access.mounts_write,
                network: access.network,
                env: access.env,
                memory_mb: access.memory_mb,
                events: EventSink::new(session.clone(), Some(turn_id)),
                cancel: signal.token().clone(),
                person: Default::default(),
                skills: prompt.skills,
            },
            max_steps: self.inner.config.max_turn_steps,
            prior_model_calls: stats.model_calls,
            gate,
            budgets: TokenBudgets {
                max_output_tokens: self.inner.config.max_turn_output_tokens,
                session_budget: record.token_budget,
                session_spent: tokens_spent(&stats.usage),
            },
            memory,
            inbox,
            delegation,
        };
        self.add_mcp_tools(
            &bundle,
            &agent,
            &mut turn.tools,
            &turn.tool_context,
            |name| turn.gate.offered(name),
        )
        .await?;
        let waiting = self.clone();
        let input = RemoteInput {
            approvals: self.inner.approvals.clone(),
            execution_id: turn_id,
            ancestors: turn.gate.ancestors.clone(),
            policy: record.approval_policy,
            on_waiting: Arc::new(move |waits| {
                let state = if waits {
                    ExecutionState::WaitingApproval
                } else {
                    ExecutionState::Running
                };
                waiting
                    .inner
                    .executions
                    .update(turn_id, |s| s.state = state);
            }),
        };
        self.add_a2a_tools(&bundle, &agent, &mut turn.tools, Some(input), |name| {
            turn.gate.offered(name)
        })?;
        Ok(turn)
    }

    /// A turn stopped while it waited for a human: its request ends, and the log says how.
    async fn close_pending_approval(
        &self,
        session: &SessionHandle,
        execution_id: Uuid,
        progress: &mut Progress,
        stopped_by: Option<TurnOutcome>,
    ) {
        let Some(request_id) = progress.pending_approval.take() else {
            return;
        };
        self.inner.approvals.cancel_execution(execution_id);
        let (resolution, reason) = match stopped_by {
            Some(TurnOutcome::Interrupted) => {
                (ApprovalResolution::Interrupted, "the server shut down")
            }
            Some(_) => (ApprovalResolution::Cancelled, "the turn was cancelled"),
            None => (ApprovalResolution::Cancelled, "the turn ended"),
        };
        let resolved = EventPayload::ApprovalResolved {
            request_id,
            decision: ApprovalDecision::Deny,
            resolution,
            reason: reason.into(),
        };
        if let Err(e) = session.append(Some(execution_id), resolved).await {
            tracing::warn!(execution = %execution_id, error = %e, "cannot record the end of an approval");
        }
    }
}

fn completed(
    outcome: TurnOutcome,
    response: String,
    error: String,
    progress: Progress,
    reason: &str,
) -> EventPayload {
    EventPayload::TurnCompleted(TurnCompleted {
        outcome,
        response,
        error,
        usage: progress.usage,
        messages: progress.messages,
        model_calls: progress.model_calls,
        reason: reason.into(),
    })
}
