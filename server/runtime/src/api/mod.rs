//! [`OdysseyRuntime`]: the embeddable core. Everything the server offers over gRPC is a
//! method here first; a Rust program can use it directly, without any network.
//!
//! ```no_run
//! use odyssey_runtime::{OdysseyRuntime, RuntimeConfig, SessionSpec, ExecutionRequest};
//!
//! # async fn demo() -> Result<(), odyssey_runtime::RuntimeError> {
//! let runtime = OdysseyRuntime::start(RuntimeConfig::with_home("/tmp/odyssey-home")).await?;
//! let bundle = runtime.build_and_install("bundles/demo".as_ref(), Default::default()).await?;
//! let session = runtime.create_session(SessionSpec::new(bundle.id.to_string())).await?;
//! let status = runtime
//!     .run(ExecutionRequest { session_id: session.record.id, prompt: "hi".into(), ..Default::default() })
//!     .await?;
//! println!("{}", status.response);
//! runtime.shutdown(std::time::Duration::from_secs(5)).await;
//! # Ok(()) }
//! ```

mod approvals;
mod builder;
mod bundles;
mod commands;
mod executions;
mod hub;
mod info;
mod input;
mod memory;
mod operations;
mod overrides;
mod prompt;
mod recording;
mod requests_elsewhere;
mod sessions;
mod signals;
mod snapshots;
mod tools;
mod turn_lookup;

use std::os::unix::fs::DirBuilderExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use tokio::sync::Semaphore;
use tokio_util::task::TaskTracker;

pub use builder::RuntimeBuilder;
pub use bundles::{AgentA2aAgent, AgentMcpServer, McpServerKind, ModelAvailability, ServedAgent};
pub use commands::{CommandEvent, CommandEvents, CommandLine, CommandResult, SessionCommand};
pub use hub::{PulledBundle, PushedBundle};
pub use info::{Activity, SandboxCapabilities, ServerInfo};
pub use input::{InputDisposition, InputReceipt, SessionInput};
pub use operations::RuntimeCollector;
pub(crate) use overrides::{normalized_cwd, workspace_dir};
pub(crate) use sessions::SubagentSpec;
pub use sessions::{SessionFilter, SessionSpec};
pub use snapshots::{ForkPoint, Rewound};
pub use tools::{SessionTool, SessionToolSource, SessionTools};
pub use turn_lookup::SessionTurn;

use crate::bundle::BundleStore;
use crate::config::RuntimeConfig;
use crate::error::{Result, RuntimeError};
use crate::event_hooks::EventHooks;
use crate::events::TurnOutcome;
use crate::execution::{ExecutionTable, Inboxes};
use crate::hub::Hub;
use crate::memory::{FileMemory, FileMemoryLimits, MemoryProvider};
use crate::metrics::Metrics;
use crate::permissions::ApprovalStore;
use crate::policy::SandboxMode;
use crate::provider::{CassetteRecorder, ProviderRegistry};
use crate::sandbox::Sandbox;
use crate::session::SessionStore;
use crate::skills::ServerSkills;
use crate::store::{Bundles, SessionRecords, Store, TurnJournal, TurnQueue};
use crate::tools::HostTools;

/// The Odyssey runtime. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct OdysseyRuntime {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) config: RuntimeConfig,
    /// The installed bundles' catalog, with its cache: how references resolve.
    pub(crate) bundles: Arc<BundleStore>,
    /// Installed bundles by digest, as the store keeps them.
    pub(crate) stored_bundles: Arc<dyn Bundles>,
    /// The OCI registries bundles are pushed to and pulled from.
    pub(crate) hub: Hub,
    pub(crate) sandbox: Arc<Sandbox>,
    pub(crate) approvals: ApprovalStore,
    /// Probed once at startup.
    pub(crate) capabilities: SandboxCapabilities,
    /// The sessions open in this process: their live state (see [`crate::store`]).
    pub(crate) sessions: Arc<SessionStore>,
    /// Sessions' records, as the store keeps them.
    pub(crate) records: Arc<dyn SessionRecords>,
    /// What kind of store this is (`files`, `postgres`), and the servers sharing it.
    pub(crate) store_kind: &'static str,
    pub(crate) replicas: Option<Arc<dyn crate::store::Replicas>>,
    /// How this server reaches the turns other servers sharing the store run.
    pub(crate) turn_signals: Option<Arc<dyn crate::store::TurnSignals>>,
    /// The requests of turns other servers run, followed once something watches them.
    pub(crate) elsewhere: requests_elsewhere::FollowedElsewhere,
    /// The sessions with a turn in flight.
    pub(crate) journal: Arc<dyn TurnJournal>,
    pub(crate) providers: ProviderRegistry,
    /// Tools the embedding program registered, for bundles that declare `source: host`.
    pub(crate) host_tools: HostTools,
    /// Writes sessions' model calls as cassettes (when `config.record_cassettes`).
    pub(crate) recorder: Arc<CassetteRecorder>,
    /// The operator's skill roots, kept up to date.
    pub(crate) skills: Arc<ServerSkills>,
    /// The turns waiting for a worker slot.
    pub(crate) queue: Arc<dyn TurnQueue>,
    pub(crate) executions: Arc<ExecutionTable>,
    /// The running turns' inboxes of steered input.
    pub(crate) inputs: Inboxes,
    pub(crate) slots: Arc<Semaphore>,
    pub(crate) turns: TaskTracker,
    pub(crate) started_at: SystemTime,
    pub(crate) shutting_down: AtomicBool,
    /// Long-term memory: the embedder's provider, else files under `<home>/memory/`.
    pub(crate) memory: Arc<dyn MemoryProvider>,
    /// Counters for operators (see [`OdysseyRuntime::metrics_collector`]).
    pub(crate) metrics: Arc<Metrics>,
    /// The operator's event hooks; sessions hand them every published event.
    pub(crate) event_hooks: Arc<EventHooks>,
    /// Live event subscriptions, for [`ServerInfo::activity`].
    pub(crate) subscriptions: Arc<AtomicUsize>,
    /// The sessions' MCP servers.
    pub(crate) mcp: Arc<crate::tools::mcp::McpServers>,
    /// The client of the remote A2A agents sessions delegate to, with their cards.
    pub(crate) a2a: Arc<crate::tools::a2a::A2aClient>,
    /// Sessions being rewound (no turn may start meanwhile).
    pub(crate) rewinding: snapshots::Rewinding,
    /// The snapshot mechanism of each session's workspace, and the overlay mounts.
    pub(crate) workspaces: Arc<crate::snapshot::Workspaces>,
}

impl OdysseyRuntime {
    /// Opens the home folder and gets ready to serve. Sessions that were running a turn
    /// when the server last stopped are repaired now; all others when first used.
    pub async fn start(config: RuntimeConfig) -> Result<Self> {
        Self::builder(config).start().await
    }

    /// A runtime with the program's own model providers and tools besides the built-in
    /// ones; see [`RuntimeBuilder`].
    pub fn builder(config: RuntimeConfig) -> RuntimeBuilder {
        RuntimeBuilder::new(config)
    }

    /// [`OdysseyRuntime::start`] with the providers and host tools already assembled.
    async fn open(
        config: RuntimeConfig,
        store: Option<Store>,
        providers: ProviderRegistry,
        host_tools: HostTools,
    ) -> Result<Self> {
        // Private: sessions, bundles and logs are the server's alone.
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&config.home)
            .map_err(|e| {
                RuntimeError::storage(format!("create home {}", config.home.display()), e)
            })?;
        let store = match store {
            Some(store) => store,
            None => Store::open(&config)?,
        };
        let crate::store::RuntimeParts {
            sessions,
            bundles,
            records,
            journal,
        } = store.runtime_parts(&config)?;
        sessions.follow();
        let metrics = Arc::new(Metrics::new(providers.known_providers()));
        let event_hooks = Arc::new(
            EventHooks::start(&config.event_hooks, &config.event_hook_encoder)
                .map_err(|message| RuntimeError::invalid("event_hooks", message))?,
        );
        let executions = Arc::new(ExecutionTable::new(config.execution_history));
        sessions.set_observer(operations::observer(&metrics, &event_hooks, &executions))?;
        let hub = Hub::new(&config.hub)?;
        // This server's own sandbox folder (process records, cgroup keys), whether or not
        // the cells lie in it (see SandboxSettings::server_home).
        let own_sandbox = config.home.join("sandbox");
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&own_sandbox)
            .map_err(|e| RuntimeError::storage(format!("create {}", own_sandbox.display()), e))?;
        let mut sandbox_settings = config.sandbox.clone();
        sandbox_settings
            .server_home
            .get_or_insert_with(|| config.home.clone());
        let sandbox = Sandbox::new(sandbox_settings).with_metrics(metrics.sandbox.clone());
        let skills = prompt::server_skills(&config)?;
        let capabilities = SandboxCapabilities {
            forced_mode: config.sandbox_mode_override,
            danger_full_access_allowed: config.allow_danger_full_access
                && config
                    .requirements
                    .allows_mode(SandboxMode::DangerFullAccess),
            ..sandbox.capabilities()
        };
        // In a workspace root other servers share, one may be building a fork now: only
        // half-built forks left for an hour go.
        let shared = store.kind() != "files";
        snapshots::remove_staging(
            &config.sandbox_dir(),
            snapshots::FORK_STAGING,
            shared.then_some(Duration::from_secs(3600)),
        );
        let workspaces = Arc::new(crate::snapshot::Workspaces::open(
            &config.home,
            &config.snapshots,
            shared,
        )?);
        tracing::info!(
            mechanism = workspaces.mechanism().as_str(),
            "workspace snapshots of new sessions use {}: {}",
            workspaces.mechanism().as_str(),
            workspaces.reason()
        );
        match Sandbox::kill_leftovers(&own_sandbox).await {
            Ok(report) => tracing::debug!(?report, "sandbox leftovers checked"),
            Err(e) => tracing::warn!(error = %e, "cannot clean up sandbox leftovers"),
        }
        match sandbox.remove_stale_cgroups(&own_sandbox).await {
            Ok(0) => {}
            Ok(removed) => tracing::info!(removed, "removed the cgroups of a previous server"),
            Err(e) => tracing::warn!(error = %e, "cannot remove a previous server's cgroups"),
        }
        let memory = config
            .memory
            .provider
            .clone()
            .or_else(|| store.memory())
            .unwrap_or_else(|| {
                Arc::new(FileMemory::new(
                    config.memory_dir(),
                    FileMemoryLimits {
                        max_records: config.memory.max_records,
                        max_bytes: config.memory.max_bytes,
                    },
                ))
            });
        let sandbox = Arc::new(sandbox);
        let approvals = ApprovalStore::new(config.approval_timeout);
        let mcp = crate::tools::mcp::McpServers::new(
            sandbox.clone(),
            config.mcp.clone(),
            approvals.clone(),
            executions.clone(),
        );
        if store.kind() != "files" {
            // Another replica runs the session's turns now: its MCP servers here stop.
            let servers = Arc::downgrade(&mcp);
            sessions.on_written_elsewhere(Arc::new(move |session| {
                if let Some(servers) = servers.upgrade() {
                    tokio::spawn(async move { servers.forget_session(session).await });
                }
            }));
        }
        let runtime = Self {
            inner: Arc::new(Inner {
                rewinding: snapshots::Rewinding::default(),
                workspaces,
                mcp,
                a2a: Arc::new(crate::tools::a2a::A2aClient::new(config.a2a.card_ttl)),
                memory,
                metrics,
                event_hooks,
                queue: store.turn_queue(),
                executions,
                inputs: Inboxes::default(),
                slots: Arc::new(Semaphore::new(config.worker_count.max(1))),
                turns: TaskTracker::new(),
                started_at: SystemTime::now(),
                shutting_down: AtomicBool::new(false),
                bundles,
                stored_bundles: store.bundles(),
                hub,
                sandbox,
                approvals,
                capabilities,
                sessions,
                records,
                store_kind: store.kind(),
                replicas: store.replicas(),
                turn_signals: store.turn_signals(),
                elsewhere: requests_elsewhere::FollowedElsewhere::new(
                    store.event_logs().wake_ups(),
                ),
                journal,
                providers,
                host_tools,
                recorder: Arc::new(CassetteRecorder::new(config.sessions_dir())),
                subscriptions: Arc::new(AtomicUsize::new(0)),
                skills,
                config,
            }),
        };
        runtime.watch_shared_queue();
        runtime.follow_turn_signals();
        runtime.follow_deletions(store.event_logs().wake_ups());
        for id in runtime.inner.journal.open_turns().await? {
            match runtime.inner.sessions.get(id).await {
                // Still open (the log cannot be written yet): the marker stays, so the
                // next start tries again.
                Ok(session) if session.has_open_turn() => continue,
                Ok(_) => {}
                Err(e) => tracing::warn!(session = %id, error = %e, "cannot repair session"),
            }
            runtime.journal_turn_end(id).await;
        }
        Ok(runtime)
    }

    /// Records in the turn journal that the session's turn ended; a failure is logged (the
    /// session is then repaired again at the next start, which finds its turn closed).
    pub(crate) async fn journal_turn_end(&self, id: uuid::Uuid) {
        if !self.journals_turns() {
            return;
        }
        if let Err(e) = self.inner.journal.turn_ended(id).await {
            tracing::warn!(session = %id, error = %e, "cannot journal turn end");
        }
    }

    /// Whether turns in flight are written to the turn journal. With a store several
    /// servers share they are not: the queue's running turns are that record (a replica
    /// started again closes those its previous process left running, see
    /// [`crate::store::TurnQueue::take_abandoned`]), and a turn saves two round trips.
    pub(crate) fn journals_turns(&self) -> bool {
        !self.shares_store()
    }

    /// Whether other servers share this server's store: they install and delete bundles,
    /// run sessions' turns and hold executions too.
    pub(crate) fn shares_store(&self) -> bool {
        self.inner.store_kind != "files"
    }

    pub fn config(&self) -> &RuntimeConfig {
        &self.inner.config
    }

    fn ensure_running(&self) -> Result<()> {
        if self.inner.shutting_down.load(Ordering::Acquire) {
            return Err(RuntimeError::ShuttingDown);
        }
        Ok(())
    }

    /// Stops taking turns, lets running ones finish within `grace`, then records what is
    /// left as interrupted. Queued turns are recorded as interrupted at once. Event hooks
    /// then get a moment to deliver what they have queued.
    pub async fn shutdown(&self, grace: Duration) {
        if self.inner.shutting_down.swap(true, Ordering::AcqRel) {
            self.inner.turns.wait().await;
            return;
        }
        self.stop_turns(grace).await;
        self.inner.mcp.shutdown().await;
        self.inner.sandbox.shutdown().await;
        let workspaces = self.inner.workspaces.clone();
        if let Err(e) = tokio::task::spawn_blocking(move || workspaces.unmount_all()).await {
            tracing::warn!(error = %e, "cannot unmount the workspaces");
        }
        // The interrupted turns' last events reach the hooks before they stop.
        self.inner.event_hooks.close(operations::HOOK_GRACE).await;
    }

    /// The turn part of [`OdysseyRuntime::shutdown`].
    async fn stop_turns(&self, grace: Duration) {
        let queued = self.inner.queue.close().await.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "cannot take the queued turns out of the queue");
            Vec::new()
        });
        for job in queued {
            self.record_unstarted(
                job,
                TurnOutcome::Interrupted,
                "the server shut down before this turn started",
            )
            .await;
        }
        self.inner.turns.close();
        if tokio::time::timeout(grace, self.inner.turns.wait())
            .await
            .is_err()
        {
            tracing::warn!("turns still running after the grace period; interrupting them");
            for (id, signal) in self.inner.executions.live_signals() {
                tracing::debug!(execution = %id, "interrupting");
                signal.cancel(
                    TurnOutcome::Interrupted,
                    "the server shut down while this turn ran",
                );
            }
            self.inner.turns.wait().await;
        }
        self.inner.sessions.flush_summaries().await;
    }
}
