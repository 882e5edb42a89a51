//! Submitting, running, waiting for and cancelling turns: the facade over `execution`,
//! which runs them.

use std::sync::Arc;

use uuid::Uuid;

use super::OdysseyRuntime;
use super::bundles::McpServerKind;
use crate::bundle::InstalledBundle;
use crate::error::{Result, RuntimeError};
use crate::events::TurnOutcome;
use crate::execution::{
    ExecutionHandle, ExecutionRequest, ExecutionStatus, Job, Placed, ensure_session_budget,
};
use crate::sandbox::{AppSource, CellPaths};
use crate::session::{SessionHandle, SessionRecord};
use crate::store::StoreError;

/// How long a caller is told to wait when the queue is full.
const QUEUE_FULL_RETRY: std::time::Duration = std::time::Duration::from_secs(1);

impl OdysseyRuntime {
    /// Queues a turn and returns its handle at once.
    pub async fn submit(&self, request: ExecutionRequest) -> Result<ExecutionHandle> {
        self.enqueue(request, false).await.map(|(handle, _)| handle)
    }

    /// Checks and queues a turn after the session's waiting turns (or, `first`, ahead of
    /// them); says what of the session was ahead of it.
    pub(crate) async fn enqueue(
        &self,
        request: ExecutionRequest,
        first: bool,
    ) -> Result<(ExecutionHandle, Placed)> {
        self.ensure_running()?;
        validate_request(&request)?;
        let session = self.inner.sessions.get(request.session_id).await?;
        // A turn left open (its end could not be written) is closed first; while the
        // disk refuses that, it refuses the new turn too, with the storage error. (In a
        // shared store, a turn open in the log may be running on another server: the
        // server that claims the new turn closes it, holding the session.)
        if !session.is_remote() {
            self.inner.sessions.close_open_turn(&session).await?;
        }
        self.check_overrides(session.id(), &request)?;
        ensure_session_budget(session.record(), &session.stats())?;
        let execution_id = Uuid::now_v7();
        let session_id = session.id();
        // Under the rewind lock: a rewind that finds no turn of the session sees none
        // appear until it is done.
        self.inner.rewinding.unless_rewinding(session_id, || {
            self.inner.executions.insert(execution_id, session_id);
        })?;
        let job = Job {
            execution_id,
            request,
        };
        let placed = match self.inner.queue.push(job, first).await {
            Ok(placed) => placed,
            Err(StoreError::QueueFull { capacity }) => {
                self.inner.executions.forget(execution_id);
                return Err(RuntimeError::QueueFull {
                    capacity,
                    retry_after: QUEUE_FULL_RETRY,
                });
            }
            Err(e) => {
                self.inner.executions.forget(execution_id);
                return Err(e.into());
            }
        };
        self.pump().await;
        let handle = ExecutionHandle {
            execution_id,
            session_id,
        };
        Ok((handle, placed))
    }

    /// Runs a turn: submit, then wait for it to end.
    pub async fn run(&self, request: ExecutionRequest) -> Result<ExecutionStatus> {
        let handle = self.submit(request).await?;
        self.wait(handle.execution_id).await
    }

    /// Waits for an execution to end and returns its final status.
    pub async fn wait(&self, execution_id: Uuid) -> Result<ExecutionStatus> {
        let mut rx = self
            .inner
            .executions
            .watch(execution_id)
            .ok_or_else(|| RuntimeError::not_found("execution", execution_id.to_string()))?;
        let status = rx
            .wait_for(|s| s.state.is_terminal())
            .await
            .map_err(|_| RuntimeError::not_found("execution", execution_id.to_string()))?;
        Ok(status.clone())
    }

    /// Waits until an execution ends or stops to wait for an approval, and returns its
    /// status then: the point where a caller who is not following its events must act.
    pub async fn wait_until_settled(&self, execution_id: Uuid) -> Result<ExecutionStatus> {
        let mut rx = self
            .inner
            .executions
            .watch(execution_id)
            .ok_or_else(|| RuntimeError::not_found("execution", execution_id.to_string()))?;
        let status = rx
            .wait_for(|s| {
                s.state.is_terminal()
                    || s.state == crate::execution::ExecutionState::WaitingApproval
            })
            .await
            .map_err(|_| RuntimeError::not_found("execution", execution_id.to_string()))?;
        Ok(status.clone())
    }

    pub fn execution_status(&self, execution_id: Uuid) -> Result<ExecutionStatus> {
        self.inner.executions.get(execution_id).ok_or_else(|| {
            RuntimeError::not_found(
                "execution",
                format!("{execution_id} (unknown, or finished long ago)"),
            )
        })
    }

    /// [`Self::execution_status`], also for a turn another server sharing the store holds
    /// (waiting, running or ended there): its status is read from its session's log, as
    /// far as the store has it (waiting for approval while the log shows a request of it
    /// pending).
    pub async fn find_execution_status(&self, execution_id: Uuid) -> Result<ExecutionStatus> {
        let unknown = self.execution_status(execution_id);
        if unknown.is_ok() || !self.shares_store() {
            return unknown;
        }
        let Some(located) = self.inner.queue.locate(execution_id).await? else {
            return unknown;
        };
        let session_id = located.session_id;
        let waiting = || ExecutionStatus {
            execution_id,
            session_id,
            state: crate::execution::ExecutionState::Queued,
            response: String::new(),
            error: String::new(),
            usage: Default::default(),
            first_sequence: 0,
            last_sequence: 0,
        };
        if located.place == crate::store::Placement::Queued {
            return Ok(waiting());
        }
        let session = self.inner.sessions.get(session_id).await?;
        session.catch_up().await?;
        // A request of the turn pending in the log: it waits for a person there.
        let asks = session
            .waiting_requests()
            .is_some_and(|(turn, _, ids)| turn == execution_id && !ids.is_empty());
        let logged = tokio::task::spawn_blocking(move || session.logged_turns(Some(execution_id)))
            .await
            .map_err(|e| RuntimeError::storage("read turns", std::io::Error::other(e)))??
            .pop();
        match (located.place, logged) {
            (crate::store::Placement::Running { .. }, Some(logged)) if logged.end.is_none() => {
                Ok(ExecutionStatus {
                    state: if asks {
                        crate::execution::ExecutionState::WaitingApproval
                    } else {
                        crate::execution::ExecutionState::Running
                    },
                    first_sequence: logged.first_sequence,
                    last_sequence: logged.first_sequence,
                    ..waiting()
                })
            }
            // Claimed, its start not written yet.
            (crate::store::Placement::Running { .. }, None) => Ok(ExecutionStatus {
                state: crate::execution::ExecutionState::Running,
                ..waiting()
            }),
            _ => self.turn_status(session_id, execution_id).await,
        }
    }

    /// Stops a queued or running turn. The turn ends as cancelled, with events saying so.
    /// On a store several servers share, a turn another server holds is sent the cancel
    /// and waited for there (see `signals.rs`).
    pub async fn cancel(&self, execution_id: Uuid) -> Result<ExecutionStatus> {
        self.cancel_because(execution_id, "cancelled by request")
            .await
    }

    /// [`Self::cancel`], recording `why` as the reason of a running turn's end.
    pub(crate) async fn cancel_because(
        &self,
        execution_id: Uuid,
        why: &str,
    ) -> Result<ExecutionStatus> {
        let status = match self.execution_status(execution_id) {
            Ok(status) => status,
            // Held by another server sharing the store, maybe: it is sent the cancel.
            Err(RuntimeError::NotFound { .. }) if self.inner.turn_signals.is_some() => {
                return self.cancel_elsewhere(execution_id, why).await;
            }
            Err(e) => return Err(e),
        };
        if status.state.is_terminal() {
            return Ok(status);
        }
        if let Some(job) = self.inner.queue.remove(execution_id).await? {
            self.record_unstarted(job, TurnOutcome::Cancelled, "cancelled before it started")
                .await;
        } else if let Some(signal) = self.inner.executions.cancel_signal(execution_id) {
            signal.cancel(TurnOutcome::Cancelled, why);
        }
        self.wait(execution_id).await
    }
}

impl OdysseyRuntime {
    /// Creates or reuses the session's sandbox cell with the bundle staged in `app/`;
    /// once prepared by this process, later calls only name its folders.
    pub(crate) async fn prepare_cell(
        &self,
        session: &SessionHandle,
        bundle: &Arc<InstalledBundle>,
    ) -> Result<CellPaths> {
        let session_id = session.id();
        let root = self.inner.config.sandbox_dir();
        if session.cell_prepared(&bundle.id.digest) {
            return self.session_cell(session.record());
        }
        let sandbox = self.inner.sandbox.clone();
        let staged = bundle.clone();
        let workspaces = self.inner.workspaces.clone();
        let session_dir = session.dir().to_path_buf();
        let shared = session
            .record()
            .parent
            .as_ref()
            .and_then(|p| p.workspace_of);
        let runs_servers = bundle
            .manifest
            .agents
            .iter()
            .find(|a| a.id == session.record().agent_id)
            .is_some_and(|agent| {
                self.agent_mcp_servers(bundle, agent)
                    .iter()
                    .any(|s| s.kind == Some(McpServerKind::Stdio))
            });
        tokio::task::spawn_blocking(move || -> Result<()> {
            let cell = sandbox
                .prepare_cell(&root, session_id, AppSource::from(staged.as_ref()))
                .map_err(RuntimeError::from)?;
            let owner = sandbox.sandbox_owner();
            match shared {
                // The workspace of the session it works in, mounted when it is an overlay
                // (its writes land in that session's upper folder).
                Some(of) => {
                    let data = CellPaths::under(root.join(of.to_string())).data;
                    workspaces.prepare(of, &data, owner, None, false)
                }
                None => workspaces.prepare(
                    session_id,
                    &cell.data,
                    owner,
                    Some(&session_dir),
                    runs_servers,
                ),
            }
        })
        .await
        .map_err(|e| RuntimeError::storage("prepare sandbox cell", std::io::Error::other(e)))??;
        session.mark_cell_prepared(&bundle.id.digest);
        self.session_cell(session.record())
    }

    /// The folders of a session's cell. A sub-agent that shares its parent's workspace has
    /// its own cell (app, cache, tmp, runs) with the workspace of the session that owns it:
    /// its processes see that one `data/` folder and nothing else of the other session.
    pub(crate) fn session_cell(&self, record: &SessionRecord) -> Result<CellPaths> {
        let root = self.inner.config.sandbox_dir();
        let mut cell = CellPaths::under(root.join(record.id.to_string()));
        if let Some(owner) = record.parent.as_ref().and_then(|p| p.workspace_of) {
            let shared = CellPaths::under(root.join(owner.to_string())).data;
            if !shared.is_dir() {
                return Err(RuntimeError::FailedPrecondition(format!(
                    "session {} works in the workspace of session {owner}, which is gone",
                    record.id
                )));
            }
            cell.data = shared;
        }
        Ok(cell)
    }
}

/// The longest prompt a turn takes: its `turn_started` event and its turn record carry it
/// whole, and each must fit in one message to subscribers.
pub const MAX_PROMPT_BYTES: usize = 1024 * 1024;

/// Checks a turn's prompt (or any text that becomes one), naming `field` when it is empty
/// or too long.
pub(crate) fn validate_prompt(field: &str, prompt: &str) -> Result<()> {
    if prompt.trim().is_empty() {
        return Err(RuntimeError::invalid(field, "must not be empty"));
    }
    if prompt.len() > MAX_PROMPT_BYTES {
        return Err(RuntimeError::invalid(
            field,
            format!(
                "is {} bytes; a prompt is at most {MAX_PROMPT_BYTES} (its turn's events must \
                 each fit in one message)",
                prompt.len()
            ),
        ));
    }
    Ok(())
}

/// Checks a turn request before it is queued, naming the field at fault.
fn validate_request(request: &ExecutionRequest) -> Result<()> {
    validate_prompt("prompt", &request.prompt)?;
    if let Some(cwd) = &request.cwd {
        super::overrides::check_cwd(cwd)?;
    }
    super::sessions::validate_metadata(&request.metadata)?;
    if let Some(model) = &request.model
        && (model.provider.is_empty() || model.name.is_empty())
    {
        return Err(RuntimeError::invalid(
            "model",
            "needs both a provider and a name",
        ));
    }
    Ok(())
}
