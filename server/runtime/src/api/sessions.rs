//! Creating, reading, listing, deleting and following sessions.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::OdysseyRuntime;
use crate::bundle::{AgentDefinition, BundleId, InstalledBundle, name_problem};
use crate::error::{ErrorKind, Result, RuntimeError, shorten};
use crate::events::TurnOutcome;
use crate::events::now_ms;
use crate::execution::ExecutionState;
use crate::model::ModelSpec;
use crate::paging::{Page, PageRequest};
use crate::policy::{ApprovalPolicy, SandboxMode};
use crate::provider::ProviderError;
use crate::requirements;
use crate::sandbox::CellPaths;
use crate::session::{
    BundlePin, InheritedRules, ParentLink, SessionInfo, SessionRecord, SessionState, Subscription,
};

const MAX_METADATA_ENTRIES: usize = 32;
const MAX_METADATA_KEY: usize = 128;
const MAX_METADATA_VALUE: usize = 4096;

/// What a new session is made from.
#[derive(Clone, Debug, Default)]
pub struct SessionSpec {
    /// `name`, `name@version`, `ns/name@version`, `@sha256:…`.
    pub bundle_reference: String,
    /// Defaults to the bundle's default agent.
    pub agent_id: Option<String>,
    /// Replaces the agent's model.
    pub model: Option<ModelSpec>,
    /// Defaults to the manifest's mode.
    pub sandbox_mode: Option<SandboxMode>,
    pub approval_policy: Option<ApprovalPolicy>,
    pub metadata: BTreeMap<String, String>,
    /// Tokens (input + output) the session may spend; defaults to the server's
    /// `session_token_budget`.
    pub token_budget: Option<u64>,
}

impl SessionSpec {
    pub fn new(bundle_reference: impl Into<String>) -> Self {
        Self {
            bundle_reference: bundle_reference.into(),
            ..Self::default()
        }
    }
}

/// A model refused by the provider registry. A client's own malformed model is an error
/// of its `model` field (of the config's field holding a credential, when that is why);
/// everything else (refusals by the operator's settings, a missing key, a bundle naming
/// an unknown provider) keeps its kind.
pub(super) fn model_error(error: ProviderError, from_request: bool) -> RuntimeError {
    match error {
        ProviderError::SecretInConfig { ref field, .. } if from_request => {
            RuntimeError::invalid(format!("model.config.{field}"), error.to_string())
        }
        e if from_request && e.kind() == ErrorKind::InvalidArgument => {
            RuntimeError::invalid("model", e.to_string())
        }
        e => RuntimeError::from(e),
    }
}

/// What a sub-agent's session is made from: the `Agent` call of a parent's turn.
pub(crate) struct SubagentSpec<'a> {
    pub parent: &'a SessionRecord,
    pub parent_agent: &'a AgentDefinition,
    pub bundle: &'a InstalledBundle,
    pub agent_id: &'a str,
    pub call_id: &'a str,
    /// Work in the parent's workspace rather than a fresh one.
    pub shared_workspace: bool,
    /// What the parent has left of its budget, if it has one.
    pub token_budget: Option<u64>,
}

/// Which sessions to list.
#[derive(Clone, Debug, Default)]
pub struct SessionFilter {
    /// Bundle name, or `namespace/name`.
    pub bundle: Option<String>,
    pub agent_id: Option<String>,
    /// Only the sub-agent sessions this session started (its direct children).
    pub parent_session_id: Option<Uuid>,
}

impl OdysseyRuntime {
    /// Resolves the bundle, agent and model, allocates an id and persists the session.
    pub async fn create_session(&self, spec: SessionSpec) -> Result<SessionInfo> {
        self.ensure_running()?;
        if spec.bundle_reference.trim().is_empty() {
            return Err(RuntimeError::invalid(
                "bundle_reference",
                "must not be empty",
            ));
        }
        validate_metadata(&spec.metadata)?;
        let bundle = self.resolve_bundle(spec.bundle_reference.clone()).await?;
        let manifest = &bundle.manifest;
        let agent = match spec.agent_id.as_deref().filter(|a| !a.is_empty()) {
            None => manifest.default_agent(),
            Some(id) => manifest.agent(id).ok_or_else(|| {
                let known: Vec<&str> = manifest.agents.iter().map(|a| a.id.as_str()).collect();
                RuntimeError::invalid(
                    "agent_id",
                    format!(
                        "bundle {} has no agent `{}`; its agents: {}",
                        bundle.id,
                        shorten(id),
                        known.join(", ")
                    ),
                )
            })?,
        };
        let model = self.session_model(&spec, &bundle.id, agent)?;
        self.inner
            .host_tools
            .check_declared(&bundle.id.to_string(), &manifest.tools)?;
        let sandbox_mode = self.effective_sandbox_mode(spec.sandbox_mode, manifest.sandbox.mode)?;
        self.inner.config.access.grant(&manifest.sandbox)?;
        self.inner
            .config
            .mcp
            .resolve(manifest, agent, &self.inner.config.access)?;
        self.inner.config.a2a.resolve(manifest, agent)?;
        let record = SessionRecord {
            id: Uuid::now_v7(),
            bundle_reference: spec.bundle_reference,
            bundle: BundlePin {
                namespace: bundle.id.namespace.clone(),
                name: bundle.id.name.clone(),
                version: bundle.id.version.to_string(),
                digest: bundle.id.digest.clone(),
            },
            agent_id: agent.id.clone(),
            model,
            sandbox_mode,
            approval_policy: spec.approval_policy.unwrap_or_default(),
            created_at_ms: now_ms(),
            metadata: spec.metadata,
            token_budget: spec
                .token_budget
                .filter(|b| *b > 0)
                .or(self.inner.config.session_token_budget),
            forked: None,
            parent: None,
        };
        let info = self.store_session(record).await?;
        tracing::info!(session = %info.record.id, bundle = %bundle.id, agent = %agent.id, "session created");
        Ok(self.with_state(info))
    }

    /// Creates a sub-agent's session: `agent_id` of the parent's bundle, on its own model,
    /// with the parent's approval policy, a sandbox mode never wider than the parent's,
    /// the rules of every agent above it, and at most the tokens the parent has left.
    pub(crate) async fn create_subagent_session(
        &self,
        child: SubagentSpec<'_>,
    ) -> Result<SessionInfo> {
        self.ensure_running()?;
        let SubagentSpec {
            parent,
            parent_agent,
            bundle,
            agent_id,
            call_id,
            shared_workspace,
            token_budget,
        } = child;
        let manifest = &bundle.manifest;
        let agent = manifest.agent(agent_id).ok_or_else(|| {
            RuntimeError::FailedPrecondition(format!(
                "agent `{agent_id}` is no longer in bundle {}",
                bundle.id
            ))
        })?;
        let (model, _) = self.default_model(&bundle.id, agent);
        self.inner
            .providers
            .check_usable(&model)
            .map_err(|e| model_error(e, false))?;
        let own_mode = self.effective_sandbox_mode(None, manifest.sandbox.mode)?;
        self.inner
            .config
            .mcp
            .resolve(manifest, agent, &self.inner.config.access)?;
        self.inner.config.a2a.resolve(manifest, agent)?;
        let above = parent.parent.as_ref();
        let mut ancestors = vec![parent.id];
        ancestors.extend(
            above
                .map(|p| p.ancestors.iter().copied())
                .into_iter()
                .flatten(),
        );
        let mut inherited_rules = vec![InheritedRules {
            agent_id: parent_agent.id.clone(),
            allow: parent_agent.tools.allow.clone(),
            ask: parent_agent.tools.ask.clone(),
            deny: parent_agent.tools.deny.clone(),
        }];
        inherited_rules.extend(
            above
                .map(|p| p.inherited_rules.iter().cloned())
                .into_iter()
                .flatten(),
        );
        let workspace_of =
            shared_workspace.then(|| above.and_then(|p| p.workspace_of).unwrap_or(parent.id));
        let record = SessionRecord {
            id: Uuid::now_v7(),
            bundle_reference: parent.bundle.reference(),
            bundle: parent.bundle.clone(),
            agent_id: agent.id.clone(),
            model,
            sandbox_mode: own_mode.min(parent.sandbox_mode),
            approval_policy: parent.approval_policy,
            created_at_ms: now_ms(),
            metadata: BTreeMap::new(),
            token_budget,
            forked: None,
            parent: Some(ParentLink {
                session_id: parent.id,
                call_id: call_id.to_owned(),
                ancestors,
                workspace_of,
                inherited_rules,
            }),
        };
        // Written without a sync: the parent's call waits for nothing durable here. The
        // creation's syncs start now, beside the child's turn, and its turn's end (its
        // first durability point) is not durable before they are.
        let sessions = self.clone();
        let handle =
            tokio::task::spawn_blocking(move || sessions.inner.sessions.create_deferred(record))
                .await
                .map_err(|e| RuntimeError::storage("create session", std::io::Error::other(e)))??;
        let syncing = handle.clone();
        self.inner.turns.spawn(async move {
            if let Err(e) = syncing.sync_creation().await {
                tracing::warn!(session = %syncing.id(), error = %e, "cannot make a sub-agent session's creation durable yet");
            }
        });
        tracing::info!(session = %handle.id(), parent = %parent.id, agent = %agent.id, "sub-agent session created");
        Ok(self.with_state(handle.info()))
    }

    /// Persists a new session and reads back what the store holds of it.
    async fn store_session(&self, record: SessionRecord) -> Result<SessionInfo> {
        let id = record.id;
        let records = &self.inner.records;
        records.create_session(record).await?;
        records
            .session(id)
            .await?
            .ok_or_else(|| RuntimeError::not_found("session", id.to_string()))
    }

    /// A session as the store holds it; NOT_FOUND when it holds none.
    pub(crate) async fn stored_session(&self, id: Uuid) -> Result<SessionInfo> {
        self.inner
            .records
            .session(id)
            .await?
            .ok_or_else(|| RuntimeError::not_found("session", id.to_string()))
    }

    /// The client's model, else the operator's override for this bundle and agent, else
    /// the agent's own; checked against the providers' settings and the requirements.
    fn session_model(
        &self,
        spec: &SessionSpec,
        bundle: &BundleId,
        agent: &AgentDefinition,
    ) -> Result<ModelSpec> {
        let model = match &spec.model {
            Some(model) => model.clone(),
            None => {
                let (model, replaced) = self.default_model(bundle, agent);
                if replaced.is_some() {
                    tracing::debug!(bundle = %bundle, agent = %agent.id, model = %model, "model override applies");
                }
                model
            }
        };
        self.inner
            .providers
            .check_usable(&model)
            .map_err(|e| model_error(e, spec.model.is_some()))?;
        Ok(model)
    }

    /// The operator's forced mode wins; otherwise the session's request, else the
    /// manifest's mode. Full access needs the operator's consent either way, and no mode
    /// may exceed `requirements.max_sandbox_mode`.
    fn effective_sandbox_mode(
        &self,
        requested: Option<SandboxMode>,
        manifest: SandboxMode,
    ) -> Result<SandboxMode> {
        let config = &self.inner.config;
        let (mode, who) = match (config.sandbox_mode_override, requested) {
            (Some(forced), _) => (forced, "the server's forced mode"),
            (None, Some(mode)) => (mode, "the request"),
            (None, None) => (manifest, "the bundle manifest"),
        };
        if !config.requirements.allows_mode(mode) {
            let max = config.requirements.max_sandbox_mode.unwrap_or(mode);
            return Err(RuntimeError::PermissionDenied {
                setting: requirements::MAX_SANDBOX_MODE.into(),
                message: format!(
                    "{who} asks for sandbox mode {mode}, but this server allows at most {max}; \
                     create the session with an allowed sandbox mode"
                ),
            });
        }
        if config.sandbox_mode_override.is_some() {
            return Ok(mode);
        }
        if mode == SandboxMode::DangerFullAccess && !config.allow_danger_full_access {
            return Err(RuntimeError::PermissionDenied {
                setting: "sandbox.allow_danger_full_access".into(),
                message: format!(
                    "{who} asks for sandbox mode danger_full_access, which this server does not allow"
                ),
            });
        }
        Ok(mode)
    }

    pub async fn get_session(&self, id: Uuid) -> Result<SessionInfo> {
        let mut info = [self.stored_session(id).await?];
        self.with_states(&mut info).await?;
        let [info] = info;
        Ok(info)
    }

    /// What a session is doing now: waiting for approval while a request of it is pending,
    /// running while a turn of it is queued or running, idle otherwise.
    pub fn session_state(&self, id: Uuid) -> SessionState {
        if self.inner.approvals.has_pending(id) {
            SessionState::WaitingForApproval
        } else if self.inner.executions.live_of_session(id).is_empty() {
            SessionState::Idle
        } else {
            SessionState::Running
        }
    }

    pub(super) fn with_state(&self, mut info: SessionInfo) -> SessionInfo {
        info.state = self.session_state(info.record.id);
        info
    }

    /// Sets each session's state: as this server holds it ([`Self::session_state`]), and
    /// for one idle here, on a store several servers share, from what the others run: a
    /// request pending in its running turn (this server's copy of its log shows it while
    /// a watch follows it; else the store's log) is waiting for approval, a turn queued
    /// or running anywhere is running. One round trip for them all.
    pub(super) async fn with_states(&self, infos: &mut [SessionInfo]) -> Result<()> {
        for info in infos.iter_mut() {
            info.state = self.session_state(info.record.id);
        }
        let Some(signals) = &self.inner.turn_signals else {
            return Ok(());
        };
        let idle: Vec<Uuid> = infos
            .iter()
            .filter(|i| i.state == SessionState::Idle)
            .map(|i| i.record.id)
            .collect();
        if idle.is_empty() {
            return Ok(());
        }
        let activity = signals.session_activity(&idle).await?;
        for info in infos.iter_mut() {
            if info.state != SessionState::Idle {
                continue;
            }
            let id = info.record.id;
            let store = activity.get(&id).copied().unwrap_or_default();
            let asks_here = store.running && self.inner.elsewhere.board.has_pending(id);
            info.state = if store.asking || asks_here {
                SessionState::WaitingForApproval
            } else if store.running || store.queued {
                SessionState::Running
            } else {
                SessionState::Idle
            };
        }
        Ok(())
    }

    /// Sessions, newest first.
    pub async fn list_sessions(
        &self,
        filter: SessionFilter,
        page: PageRequest,
    ) -> Result<Page<SessionInfo>> {
        filter.validate()?;
        let mut page = self.inner.records.list_sessions(filter, page).await?;
        self.with_states(&mut page.items).await?;
        Ok(page)
    }

    /// Cancels the session's queued and running turns, waits for them, then removes it.
    pub async fn delete_session(&self, id: Uuid) -> Result<()> {
        self.stored_session(id).await?;
        for job in self.inner.queue.remove_session(id).await? {
            self.inner.executions.update(job.execution_id, |s| {
                s.state = ExecutionState::Cancelled;
                s.error = "the session was deleted".into();
            });
        }
        for execution_id in self.inner.executions.live_of_session(id) {
            if let Some(signal) = self.inner.executions.cancel_signal(execution_id) {
                signal.cancel(TurnOutcome::Cancelled, "the session was deleted");
            }
            let _ = self.wait(execution_id).await;
        }
        self.end_turn_elsewhere(id).await?;
        self.inner.approvals.forget_session(id);
        self.inner.recorder.forget(id);
        self.inner.mcp.forget_session(id).await;
        let cell = CellPaths::under(self.inner.config.sandbox_dir().join(id.to_string()));
        if self.inner.workspaces.is_overlay(id) {
            // Unmounted before the cell is removed (removing through the mount would
            // only hide the layers' files), and its layers no other session uses
            // removed off the request path.
            if cell.root.exists() {
                self.inner.sandbox.kill_cell_processes(&cell).await;
            }
            let workspaces = self.inner.workspaces.clone();
            let data = cell.data.clone();
            tokio::task::spawn_blocking(move || workspaces.remove(id, &data))
                .await
                .map_err(|e| RuntimeError::storage("delete session", std::io::Error::other(e)))??;
            let workspaces = self.inner.workspaces.clone();
            drop(tokio::task::spawn_blocking(move || {
                match workspaces.collect_garbage() {
                    Ok(removed) => tracing::debug!(removed, "unused workspace layers removed"),
                    Err(e) => tracing::warn!(error = %e, "cannot remove unused workspace layers"),
                }
            }));
        }
        if cell.root.exists() {
            self.inner.sandbox.remove_cell(&cell).await?;
        }
        self.remove_shared_snapshots(id).await?;
        if !self.inner.records.delete_session(id).await? {
            return Err(RuntimeError::not_found("session", id.to_string()));
        }
        tracing::info!(session = %id, "session deleted");
        Ok(())
    }

    /// Follows a session's events after `after_sequence` (0 = from the start). A sequence
    /// the session has not reached is refused: following from there would silently skip
    /// whatever comes before it (a client holding a sequence from another session, or
    /// one a crash took back before it was durable).
    pub async fn subscribe_session(&self, id: Uuid, after_sequence: u64) -> Result<Subscription> {
        let session = self.inner.sessions.get(id).await?;
        let last = session.stats().last_sequence;
        if after_sequence > last {
            return Err(RuntimeError::invalid(
                "after_sequence",
                format!("{after_sequence} is past the session's last sequence, {last}"),
            ));
        }
        Ok(session
            .subscribe(after_sequence)
            .counted_in(&self.inner.subscriptions))
    }
}

impl SessionFilter {
    /// Filters are names (`ns/name` for a bundle); anything else could match nothing.
    fn validate(&self) -> Result<()> {
        if let Some(bundle) = &self.bundle {
            let (namespace, name) = bundle.split_once('/').unwrap_or(("local", bundle));
            for part in [namespace, name] {
                if let Some(problem) = name_problem(part) {
                    return Err(RuntimeError::invalid("bundle", problem));
                }
            }
        }
        if let Some(agent) = &self.agent_id
            && let Some(problem) = name_problem(agent)
        {
            return Err(RuntimeError::invalid("agent_id", problem));
        }
        Ok(())
    }
}

impl SessionFilter {
    /// Whether the session is one the filter asks for.
    pub fn matches(&self, info: &SessionInfo) -> bool {
        matches_filter(info, self)
    }
}

fn matches_filter(info: &SessionInfo, filter: &SessionFilter) -> bool {
    let bundle = &info.record.bundle;
    let bundle_ok = filter
        .bundle
        .as_deref()
        .is_none_or(|wanted| match wanted.split_once('/') {
            Some((ns, name)) => bundle.namespace == ns && bundle.name == name,
            None => bundle.name == wanted,
        });
    let agent_ok = filter
        .agent_id
        .as_deref()
        .is_none_or(|wanted| info.record.agent_id == wanted);
    let parent_ok = filter.parent_session_id.is_none_or(|wanted| {
        info.record
            .parent
            .as_ref()
            .is_some_and(|p| p.session_id == wanted)
    });
    bundle_ok && agent_ok && parent_ok
}

/// Checks a session's or a turn's metadata against the limits on its size.
pub(super) fn validate_metadata(metadata: &BTreeMap<String, String>) -> Result<()> {
    if metadata.len() > MAX_METADATA_ENTRIES {
        return Err(RuntimeError::invalid(
            "metadata",
            format!("at most {MAX_METADATA_ENTRIES} entries"),
        ));
    }
    for (key, value) in metadata {
        if key.is_empty() || key.len() > MAX_METADATA_KEY {
            return Err(RuntimeError::invalid(
                "metadata",
                format!("keys must be 1 to {MAX_METADATA_KEY} bytes"),
            ));
        }
        if value.len() > MAX_METADATA_VALUE {
            return Err(RuntimeError::invalid(
                format!("metadata[{key}]"),
                format!("values must be at most {MAX_METADATA_VALUE} bytes"),
            ));
        }
    }
    Ok(())
}
