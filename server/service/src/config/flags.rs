//! The server's flags, shared by `odysseyd`, `odyssey serve` and `odyssey config show`: the
//! top layer of the configuration.

use std::net::SocketAddr;
use std::path::PathBuf;

use super::{ConfigError, Secret, ServerConfig, Sources};
use odyssey_runtime::snapshot::MechanismChoice;
use odyssey_runtime::{RuntimeConfig, SandboxMode};

#[derive(
    Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SandboxModeArg {
    // The configuration file's spelling; the kebab-case one clap derives stays accepted.
    #[value(name = "read_only", alias = "read-only")]
    ReadOnly,
    #[value(name = "workspace_write", alias = "workspace-write")]
    WorkspaceWrite,
    #[value(name = "danger_full_access", alias = "danger-full-access")]
    DangerFullAccess,
}

impl From<SandboxModeArg> for SandboxMode {
    fn from(mode: SandboxModeArg) -> Self {
        match mode {
            SandboxModeArg::ReadOnly => Self::ReadOnly,
            SandboxModeArg::WorkspaceWrite => Self::WorkspaceWrite,
            SandboxModeArg::DangerFullAccess => Self::DangerFullAccess,
        }
    }
}

/// `--snapshot-mechanism`: the values of `snapshots.mechanism`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SnapshotMechanismArg {
    Auto,
    Overlay,
    Copies,
}

impl From<SnapshotMechanismArg> for MechanismChoice {
    fn from(choice: SnapshotMechanismArg) -> Self {
        match choice {
            SnapshotMechanismArg::Auto => Self::Auto,
            SnapshotMechanismArg::Overlay => Self::Overlay,
            SnapshotMechanismArg::Copies => Self::Copies,
        }
    }
}

/// Server flags, shared by `odysseyd`, `odyssey serve` and `odyssey config show`. Each is
/// the top layer over the configuration files and the environment (see [`crate::config`](super)):
/// a flag that is not given leaves the value to the layers below, so these are `Option`s
/// (and on/off switches can only switch on). Every flag also reads `ODYSSEY_` + its name
/// (`--worker-count`: `ODYSSEY_WORKER_COUNT`) and has a key in the file.
#[derive(Clone, Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on. Anything but loopback needs --auth-token (or --insecure)
    /// [default: 127.0.0.1:8472].
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// Folder for bundles, sessions and sandboxes [default: ~/.odyssey].
    #[arg(long)]
    pub home: Option<PathBuf>,
    /// Where sessions' sandbox workspaces live; replicas sharing a database all mount the
    /// same one [default: <home>/sandbox].
    #[arg(long, value_name = "DIR")]
    pub workspace_root: Option<PathBuf>,
    /// Serve from this PostgreSQL database, shared with other replicas:
    /// `postgres://USER@HOST[:PORT]/DATABASE`, with `?sslmode=require` for a database on
    /// another machine; never the password, which comes from $ODYSSEY_DATABASE_PASSWORD or
    /// `database.password_file` [default: the file store in the home folder].
    #[arg(long, value_name = "URL")]
    pub database_url: Option<String>,
    /// This server's name among the replicas sharing the database: letters, digits, `-`,
    /// `_`, `.`; two replicas on one host must each set their own (default: the host name).
    #[arg(long, value_name = "ID")]
    pub replica_id: Option<String>,
    /// Turns that run at once [default: 4].
    #[arg(long)]
    pub worker_count: Option<usize>,
    /// Turns that may wait for a worker before Submit answers RESOURCE_EXHAUSTED
    /// [default: 128].
    #[arg(long)]
    pub queue_capacity: Option<usize>,
    /// Bearer token every RPC but health and reflection must carry.
    #[arg(long)]
    pub auth_token: Option<Secret>,
    /// Allow a non-loopback --listen without an auth token.
    #[arg(long)]
    pub insecure: bool,
    /// Log lines as text or JSON [default: text].
    #[arg(long, value_enum)]
    pub log_format: Option<LogFormat>,
    /// Largest gRPC message accepted or sent, in bytes [default: 4194304].
    #[arg(long)]
    pub max_message_bytes: Option<usize>,
    /// Model calls one turn may make [default: 32].
    #[arg(long)]
    pub max_turn_steps: Option<u32>,
    /// Wall-clock budget of one turn, in seconds [default: 600].
    #[arg(long)]
    pub max_turn_seconds: Option<u64>,
    /// How deep sub-agents may nest below a client's session [default: 3].
    #[arg(long)]
    pub max_subagent_depth: Option<u32>,
    /// Sub-agents one turn may run at once [default: 4].
    #[arg(long)]
    pub max_concurrent_subagents: Option<u32>,
    /// Heartbeat interval of idle event streams, in seconds [default: 15].
    #[arg(long)]
    pub heartbeat_seconds: Option<u64>,
    /// How long running turns may take to finish on shutdown before they are interrupted
    /// [default: 10].
    #[arg(long)]
    pub shutdown_grace_seconds: Option<u64>,
    /// Force this sandbox mode on every session.
    #[arg(long, value_enum)]
    pub sandbox_mode: Option<SandboxModeArg>,
    /// Let sessions run without a sandbox (danger_full_access).
    #[arg(long)]
    pub allow_danger_full_access: bool,
    /// Let bundles that ask for it (`network: [...]`) reach the hosts they list, through
    /// the session's egress proxy.
    #[arg(long)]
    pub allow_network: bool,
    /// A host pattern networked sandboxes may reach at most (`api.github.com`,
    /// `*.pypi.org`); repeatable. None: any host the bundle lists.
    #[arg(long = "allow-network-domain", value_name = "PATTERN")]
    pub network_domains: Vec<String>,
    /// An address range networked sandboxes may reach although it is loopback, private or
    /// link-local (`127.0.0.0/8`); repeatable. The server's own listeners stay refused.
    #[arg(long = "allow-network-cidr", value_name = "CIDR")]
    pub network_cidrs: Vec<String>,
    /// A host folder bundles may mount (with what lies below it); repeatable.
    #[arg(long = "mount-root", value_name = "DIR")]
    pub mount_roots: Vec<PathBuf>,
    /// A host environment variable bundles may map into the sandbox; repeatable.
    #[arg(long = "env-allow", value_name = "NAME")]
    pub env_allowlist: Vec<String>,
    /// How long a tool call waits for a human before it is denied by timeout, in seconds
    /// [default: 600].
    #[arg(long)]
    pub approval_timeout_seconds: Option<u64>,
    /// A program asked about every tool call before it runs (the pending call as JSON on
    /// stdin; answers allow / deny / ask on stdout); repeatable. Hooks can only tighten.
    #[arg(long = "pre-tool-hook", value_name = "PROGRAM")]
    pub pre_tool_hooks: Vec<PathBuf>,
    /// How long a pre-tool hook may take before the call is denied, in milliseconds
    /// [default: 5000].
    #[arg(long)]
    pub pre_tool_hook_timeout_ms: Option<u64>,
    /// The `odyssey-sandbox` helper [default: $ODYSSEY_SANDBOX_HELPER, else beside odysseyd].
    #[arg(long)]
    pub sandbox_helper: Option<PathBuf>,
    /// The user id sandboxed processes run as when the server runs as root [default: 65534].
    #[arg(long)]
    pub sandbox_uid: Option<u32>,
    /// The group id sandboxed processes run as when the server runs as root
    /// [default: 65534].
    #[arg(long)]
    pub sandbox_gid: Option<u32>,
    /// Base URL for a provider, e.g. `openai=http://127.0.0.1:8080/v1` (repeatable).
    #[arg(long = "provider-base-url", value_name = "NAME=URL")]
    pub provider_base_urls: Vec<String>,
    /// Also let a model config's `base_url` send provider NAME's requests (with this
    /// server's key) to URL, a URL pattern like `https://llm.example.com/v1/*`; adds to
    /// `providers.NAME.allowed_base_urls` (repeatable).
    #[arg(long = "allow-base-url", value_name = "NAME=URL")]
    pub allow_base_urls: Vec<String>,
    /// Output tokens one turn may produce over all its model calls [default: no limit].
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_turn_output_tokens: Option<u64>,
    /// Tokens (input + output) a session may spend unless created with its own budget
    /// [default: no limit].
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1..))]
    pub session_token_budget: Option<u64>,
    /// Long-term memory: records of turns recalled into an agent's new sessions
    /// [default: true].
    #[arg(long, value_name = "BOOL")]
    pub long_term_memory: Option<bool>,
    /// Record every model call of each session as a cassette the `replay` provider plays
    /// (fetch it with `odyssey session cassette SESSION`), to turn real runs into offline
    /// tests.
    #[arg(long)]
    pub record_cassettes: bool,
    /// The OCI registry for bundle references that name none (PushBundle, PullBundle)
    /// [default: http://127.0.0.1:8473].
    #[arg(long, value_name = "URL")]
    pub hub: Option<String>,
    /// Registry credentials: a JSON file as `docker login` writes it
    /// (`{"auths": {"HOST": {"auth": "<base64 user:password>"}}}`); each entry is offered
    /// to its own host only.
    #[arg(long, value_name = "FILE")]
    pub registry_auth_file: Option<PathBuf>,
    /// A registry host (`host[:port]`) reached over plain HTTP; repeatable. Loopback hosts
    /// always are; every other one needs TLS unless listed.
    #[arg(long = "registry-insecure", value_name = "HOST")]
    pub registry_insecure: Vec<String>,
    /// A folder of operator skills (`<name>/SKILL.md`) offered to every agent after its
    /// bundle's own; repeatable, earlier folders win a name clash. Rescanned on change.
    #[arg(long = "skill-root", value_name = "DIR")]
    pub skill_roots: Vec<PathBuf>,
    /// A TOML configuration file, read over /etc/odyssey/config.toml and
    /// <home>/config.toml (and under the environment and flags).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Serve TLS (the gRPC port and the HTTP gateway) with this certificate chain (PEM);
    /// needs --tls-key.
    #[arg(long, value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert.
    #[arg(long, value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// A browser origin (`https://app.example.com`) allowed to call the API cross-origin,
    /// with gRPC-Web or through the HTTP gateway; repeatable. None by default.
    #[arg(long = "cors-origin", value_name = "URL", value_parser = cors_origin_arg)]
    pub cors_origins: Vec<String>,
    /// A host name requests may name (in `Host` or `:authority`) besides IP addresses,
    /// `localhost` and the TLS certificate's names; `*.example.com` for its subdomains,
    /// `*` for any; repeatable. Requests naming another host get 421 (DNS rebinding).
    #[arg(long = "allowed-host", value_name = "NAME", value_parser = allowed_host_arg)]
    pub allowed_hosts: Vec<String>,
    /// Also serve the HTTP gateway (server-sent events, approvals) on this address.
    /// Anything but loopback needs --auth-token (or --insecure).
    #[arg(long, value_name = "ADDR")]
    pub http_listen: Option<SocketAddr>,
    /// Also serve the web console, and gRPC-Web for it, on the HTTP gateway's address
    /// (--http-listen): `/console/`, with a login page that trades the auth token for a
    /// cookie. Off by default.
    #[arg(long)]
    pub console: bool,
    /// Serve Prometheus metrics (`GET /metrics`) on this address. Anything but loopback
    /// needs a token (--auth-token or --metrics-auth-token) or --insecure; the endpoint
    /// asks for a token whenever the server has one.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<SocketAddr>,
    /// A bearer token that only reads metrics, accepted by the metrics endpoint beside
    /// --auth-token (so the monitoring system never holds the API token).
    #[arg(long)]
    pub metrics_auth_token: Option<Secret>,
    /// An event hook receiving every session event: a URL (each event POSTed as JSON) or
    /// a program (one JSON event per line on its stdin); repeatable. Filters, queues and
    /// timeouts are set in `[[hooks.event]]` tables of the configuration file.
    #[arg(long = "event-hook", value_name = "URL|PROGRAM")]
    pub event_hooks: Vec<String>,
    /// Idle sessions kept open in memory; beyond it, idle sessions are dropped from
    /// memory and read from disk again when next used [default: 1024].
    #[arg(long, value_name = "SESSIONS")]
    pub open_session_cache: Option<usize>,
    /// Record a snapshot of the session's workspace at every turn end (fork, rewind,
    /// turn changes) [default: true].
    #[arg(long, value_name = "BOOL")]
    pub snapshots: Option<bool>,
    /// How workspaces are snapshotted: overlay layers where the server can mount them
    /// (`auto`), always overlay layers (`overlay`: no start where they cannot be
    /// mounted), or copies [default: auto].
    #[arg(long, value_name = "MECHANISM")]
    pub snapshot_mechanism: Option<SnapshotMechanismArg>,
    /// Turn snapshots one session keeps; the oldest are dropped past it [default: 100].
    #[arg(long, value_name = "TURNS")]
    pub snapshot_max_turns: Option<usize>,
    /// Bytes one session's snapshots may hold; the oldest turns are dropped past it
    /// [default: 8589934592].
    #[arg(long, value_name = "BYTES")]
    pub snapshot_max_bytes: Option<u64>,
    /// Entries (files, folders, links) of a workspace that is snapshotted; a larger one is
    /// skipped, and the turn's events say so [default: 100000].
    #[arg(long, value_name = "ENTRIES")]
    pub snapshot_max_workspace_files: Option<usize>,
    /// Bytes of files of a workspace that is snapshotted; a larger one is skipped
    /// [default: 4294967296].
    #[arg(long, value_name = "BYTES")]
    pub snapshot_max_workspace_bytes: Option<u64>,
}

impl ServeArgs {
    /// No flag given but the address and home.
    pub fn new(listen: SocketAddr, home: PathBuf) -> Self {
        let mut args = Self::unset();
        args.listen = Some(listen);
        args.home = Some(home);
        args
    }

    /// No flag given at all: every value comes from the layers below.
    pub fn unset() -> Self {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Wrapper {
            #[command(flatten)]
            args: ServeArgs,
        }
        Wrapper::parse_from(["odysseyd"]).args
    }

    /// The configuration of these flags (and a `--config` file they name) over the
    /// defaults, without the machine's files and environment.
    pub fn server_config(&self) -> Result<ServerConfig, ConfigError> {
        Ok(super::load(self, &Sources::flags_only())?.config)
    }

    /// The runtime part of [`ServeArgs::server_config`].
    pub fn runtime_config(&self) -> Result<RuntimeConfig, ConfigError> {
        Ok(self.server_config()?.runtime)
    }
}

/// Checks a `--cors-origin` as it is parsed, so a bad one is refused with the flag's name.
fn cors_origin_arg(value: &str) -> Result<String, String> {
    super::names::parse_origin(value).map(|_| value.to_owned())
}

/// Checks a `--allowed-host` as it is parsed, so a bad one is refused with the flag's name.
fn allowed_host_arg(value: &str) -> Result<String, String> {
    super::names::parse_allowed_host(value)
}
