//! Settings of an embedded runtime. The server fills them from flags; a Rust program
//! embedding the runtime builds them directly.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::access::AccessLimits;
use crate::bundle::ArchiveLimits;
use crate::event_hooks::{EventEncoder, EventHookConfig};
use crate::hub::HubSettings;
use crate::memory::MemorySettings;
use crate::model_override::ModelOverride;
use crate::permissions::HookConfig;
use crate::policy::SandboxMode;
use crate::prompt::PromptLimits;
use crate::provider::{CredentialSettings, ProviderSettings};
use crate::requirements::Requirements;
use crate::sandbox::SandboxSettings;
use crate::snapshot::SnapshotSettings;
use crate::tools::a2a::A2aSettings;
use crate::tools::mcp::McpSettings;

#[derive(Clone, Debug)]
pub struct RuntimeConfig {
    /// Holds `bundles/`, `sessions/`, `sandbox/`, `memory/` and `quarantine/`.
    pub home: PathBuf,
    /// Where sessions' sandbox workspaces (cells) live, when not `<home>/sandbox`: replicas
    /// sharing a database all mount the same one, so any of them can run any session's turn.
    pub workspace_root: Option<PathBuf>,
    /// Turns that run at once across all sessions.
    pub worker_count: usize,
    /// Turns that may wait for a worker; a submit beyond it is refused.
    pub queue_capacity: usize,
    /// Model calls one turn may make before it ends with an error.
    pub max_turn_steps: u32,
    /// Wall-clock budget of one turn.
    pub max_turn_duration: Duration,
    /// Finished executions whose status stays queryable in memory.
    pub execution_history: usize,
    /// Sessions kept open in memory while idle.
    pub open_session_cache: usize,
    /// With a store several servers share: how long a turn's writes wait for a store that
    /// cannot be reached before the turn fails.
    pub store_outage_wait: std::time::Duration,
    /// Forces one sandbox mode for every session when set.
    pub sandbox_mode_override: Option<SandboxMode>,
    /// Whether any session may run without a sandbox.
    pub allow_danger_full_access: bool,
    /// Per-provider settings (base URL, key, timeouts), by provider name.
    pub providers: HashMap<String, ProviderSettings>,
    /// Named operator credentials a model config may pick (`config.credential = "NAME"`),
    /// each for one provider and the base URLs it allows.
    pub credentials: HashMap<String, CredentialSettings>,
    pub archive_limits: ArchiveLimits,
    /// How sandboxed processes are run (bubblewrap, helper, uid, rlimits, output cap).
    pub sandbox: SandboxSettings,
    /// What bundles may ask for beyond their cell: network, mounts, env, resources.
    pub access: AccessLimits,
    /// How long a tool call waits for a human before it is denied by timeout.
    pub approval_timeout: Duration,
    /// Operator commands asked about every tool call before it runs (they can only
    /// tighten the rules' decision).
    pub hooks: Vec<HookConfig>,
    /// Output tokens one turn may produce over all its model calls; a turn that goes past
    /// it ends with an `output_token_budget_exceeded` error. `None`: no limit.
    pub max_turn_output_tokens: Option<u64>,
    /// Tokens (input + output) a session may spend over its life, for sessions created
    /// without a budget of their own. `None`: no limit.
    pub session_token_budget: Option<u64>,
    /// Long-term memory across sessions: on or off, its bounds, where it lives.
    pub memory: MemorySettings,
    /// Write every model call of every session to `sessions/<id>/cassette.jsonl`, a
    /// cassette the `replay` provider plays, so a real run becomes an offline test.
    pub record_cassettes: bool,
    /// The OCI registries bundles are pushed to and pulled from: the default one (the
    /// hub), credentials per registry host, hosts allowed plain HTTP.
    pub hub: HubSettings,
    /// Operator skill folders, each holding `<name>/SKILL.md` folders, offered to every
    /// agent after its bundle's own skills; an earlier root wins a name clash.
    pub skill_roots: Vec<PathBuf>,
    /// How often skill roots are checked for changes, at most (one `stat` per skill).
    pub skill_rescan_interval: Duration,
    /// Byte caps of the system prompt's parts (bootstrap files, skills).
    pub prompt_limits: PromptLimits,
    /// Operator caps on sandbox modes, providers and base URLs that no request exceeds.
    pub requirements: Requirements,
    /// Models this server uses for some bundles' agents instead of the ones they name.
    pub model_overrides: Vec<ModelOverride>,
    /// Operator programs and webhooks that receive session events (fail-open: a failing
    /// hook is logged and counted, never waited for).
    pub event_hooks: Vec<EventHookConfig>,
    /// How hooks receive an event. A server installs the API's public JSON form; the
    /// default, for a runtime embedded without one, is the runtime's own serde form.
    pub event_hook_encoder: EventEncoder,
    /// MCP servers: the operator's, the URLs bundles may use, lifetimes and limits.
    pub mcp: McpSettings,
    /// Remote A2A agents bundles delegate to: the operator's, the URLs bundles may use,
    /// limits of a call.
    pub a2a: A2aSettings,
    /// Workspace snapshots at turn ends (fork, rewind, turn changes): on or off, retention
    /// by count and bytes, and the largest workspace recorded.
    pub snapshots: SnapshotSettings,
    /// How deep sub-agents nest: a session this many levels below a client's session
    /// cannot start another.
    pub max_subagent_depth: u32,
    /// Sub-agents one turn runs at once; further `Agent` calls of a model step wait.
    pub max_concurrent_subagents: u32,
}

impl RuntimeConfig {
    /// Defaults with the given home folder.
    pub fn with_home(home: impl Into<PathBuf>) -> Self {
        Self {
            home: home.into(),
            workspace_root: None,
            worker_count: 4,
            queue_capacity: 128,
            max_turn_steps: 32,
            max_subagent_depth: 3,
            max_concurrent_subagents: 4,
            max_turn_duration: Duration::from_secs(600),
            execution_history: 10_000,
            open_session_cache: 1_024,
            store_outage_wait: std::time::Duration::from_secs(30),
            sandbox_mode_override: None,
            allow_danger_full_access: false,
            providers: HashMap::new(),
            credentials: HashMap::new(),
            archive_limits: ArchiveLimits::default(),
            sandbox: SandboxSettings::default(),
            access: AccessLimits::default(),
            approval_timeout: Duration::from_secs(600),
            hooks: Vec::new(),
            max_turn_output_tokens: None,
            session_token_budget: None,
            memory: MemorySettings::default(),
            record_cassettes: false,
            hub: HubSettings::default(),
            skill_roots: Vec::new(),
            skill_rescan_interval: Duration::from_secs(2),
            prompt_limits: PromptLimits::default(),
            requirements: Requirements::default(),
            model_overrides: Vec::new(),
            event_hooks: Vec::new(),
            event_hook_encoder: EventEncoder::default(),
            mcp: McpSettings::default(),
            a2a: A2aSettings::default(),
            snapshots: SnapshotSettings::default(),
        }
    }

    /// `$ODYSSEY_HOME`, else `~/.odyssey`.
    pub fn default_home() -> PathBuf {
        if let Some(home) = std::env::var_os("ODYSSEY_HOME") {
            return PathBuf::from(home);
        }
        std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."))
            .join(".odyssey")
    }

    pub fn bundles_dir(&self) -> PathBuf {
        self.home.join("bundles")
    }

    pub fn sessions_dir(&self) -> PathBuf {
        self.home.join("sessions")
    }

    /// The sessions' sandbox cells: the workspace root when one is set, else
    /// `<home>/sandbox`. Created (mode 0700) when the first cell is prepared.
    pub fn sandbox_dir(&self) -> PathBuf {
        match &self.workspace_root {
            Some(root) => root.clone(),
            None => self.home.join("sandbox"),
        }
    }

    pub fn quarantine_dir(&self) -> PathBuf {
        self.home.join("quarantine")
    }

    /// The file-backed long-term memory: `<home>/memory/<namespace>/<bundle>/<agent>.jsonl`.
    pub fn memory_dir(&self) -> PathBuf {
        self.home.join("memory")
    }
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self::with_home(Self::default_home())
    }
}
