//! What `odysseyd` (and `odyssey serve`) runs: flags over the layered configuration,
//! logging, safety checks on the bind address, TLS, and a server that shuts down
//! gracefully on SIGINT/SIGTERM.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::{self, ConfigError, Secret, ServerConfig, Sources, TlsFiles};
use crate::grpc::{self, GrpcOptions};
use crate::http::{self as gateway, HttpOptions, MetricsTokens};
use crate::runtime::{OdysseyRuntime, RuntimeConfig, RuntimeError, SandboxMode};
use crate::tls::TlsIdentity;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(
        "refusing to listen on {0} without an auth token: set --auth-token (or ODYSSEY_AUTH_TOKEN, or server.auth_token), or pass --insecure"
    )]
    InsecureBind(SocketAddr),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid configuration: {0}")]
    Config(#[from] ConfigError),
    #[error("cannot read the TLS {what} {}: {source}", path.display())]
    TlsFile {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot use the TLS certificate and key ({}, {}): {message}", files.cert.display(), files.key.display())]
    Tls { files: TlsFiles, message: String },
    #[error("cannot start the runtime: {0}")]
    Runtime(#[from] RuntimeError),
    #[error("transport error: {0}")]
    Transport(#[from] tonic::transport::Error),
    #[error("the server task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
    #[error("HTTP gateway error: {0}")]
    Gateway(#[source] std::io::Error),
    #[error(
        "refusing to serve metrics on {0} without a token: set --auth-token or --metrics-auth-token (or server.auth_token, metrics.auth_token), or pass --insecure"
    )]
    InsecureMetricsBind(SocketAddr),
    #[error("metrics endpoint error: {0}")]
    Metrics(#[source] std::io::Error),
}

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

/// Server flags, shared by `odysseyd`, `odyssey serve` and `odyssey config show`. Each is
/// the top layer over the configuration files and the environment (see [`crate::config`]):
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
}

impl ServeArgs {
    /// No flag given but the address and home.
    pub fn new(listen: SocketAddr, home: PathBuf) -> Self {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Wrapper {
            #[command(flatten)]
            args: ServeArgs,
        }
        let mut args = Wrapper::parse_from(["odysseyd"]).args;
        args.listen = Some(listen);
        args.home = Some(home);
        args
    }

    /// The configuration of these flags (and a `--config` file they name) over the
    /// defaults, without the machine's files and environment.
    pub fn server_config(&self) -> Result<ServerConfig, ServeError> {
        Ok(config::load(self, &Sources::flags_only())?.config)
    }

    /// The runtime part of [`ServeArgs::server_config`].
    pub fn runtime_config(&self) -> Result<RuntimeConfig, ServeError> {
        Ok(self.server_config()?.runtime)
    }

    /// The gRPC part of [`ServeArgs::server_config`].
    pub fn grpc_options(&self) -> Result<GrpcOptions, ServeError> {
        Ok(self.server_config()?.grpc)
    }
}

/// Checks a `--cors-origin` as it is parsed, so a bad one is refused with the flag's name.
fn cors_origin_arg(value: &str) -> Result<String, String> {
    grpc::web::parse_origin(value).map(|_| value.to_owned())
}

/// Checks a `--allowed-host` as it is parsed, so a bad one is refused with the flag's name.
fn allowed_host_arg(value: &str) -> Result<String, String> {
    grpc::host::parse_allowed_host(value)
}

/// Installs the global `tracing` subscriber (`RUST_LOG` filters; default `info`).
pub fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colours only for a person at a terminal, not in files or the journal.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

/// A running server.
pub struct ServerHandle {
    addr: SocketAddr,
    tls: bool,
    runtime: OdysseyRuntime,
    stop: CancellationToken,
    task: JoinHandle<Result<(), tonic::transport::Error>>,
    /// The HTTP gateway, when `--http-listen` is set.
    gateway: Option<(SocketAddr, JoinHandle<std::io::Result<()>>)>,
    /// The metrics endpoint, when `--metrics-listen` is set.
    metrics: Option<(SocketAddr, JoinHandle<std::io::Result<()>>)>,
}

impl ServerHandle {
    /// The address it listens on (the real port when started on port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`, or `https://ADDR` when it serves TLS, for clients.
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    pub fn runtime(&self) -> &OdysseyRuntime {
        &self.runtime
    }

    /// The HTTP gateway's address, when it runs.
    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.gateway.as_ref().map(|(addr, _)| *addr)
    }

    /// The HTTP gateway's `http://ADDR`, or `https://ADDR` when the server serves TLS.
    pub fn http_url(&self) -> Option<String> {
        let scheme = if self.tls { "https" } else { "http" };
        self.http_addr().map(|addr| format!("{scheme}://{addr}"))
    }

    /// The metrics endpoint's address, when it runs.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().map(|(addr, _)| *addr)
    }

    /// Stops gracefully and waits until it has.
    pub async fn shutdown(self) -> Result<(), ServeError> {
        self.stop.cancel();
        self.wait().await
    }

    /// Waits until the server stops on its own (after a signal).
    pub async fn wait(self) -> Result<(), ServeError> {
        self.task.await??;
        if let Some((_, gateway)) = self.gateway {
            gateway.await?.map_err(ServeError::Gateway)?;
        }
        if let Some((_, metrics)) = self.metrics {
            metrics.await?.map_err(ServeError::Metrics)?;
        }
        Ok(())
    }

    /// Stops the server when this fires.
    pub fn stop_on(&self, signal: impl std::future::Future<Output = ()> + Send + 'static) {
        let stop = self.stop.clone();
        tokio::spawn(async move {
            signal.await;
            stop.cancel();
        });
    }
}

/// Binds, opens the runtime and serves in the background, configured by `args` alone
/// (see [`ServeArgs::server_config`]).
pub async fn start(args: &ServeArgs) -> Result<ServerHandle, ServeError> {
    start_server(args.server_config()?).await
}

/// Like [`start`], with a runtime configuration built by the caller (settings that have
/// no flag, such as provider keys held in memory).
pub async fn start_with_config(
    args: &ServeArgs,
    config: RuntimeConfig,
) -> Result<ServerHandle, ServeError> {
    let mut server = args.server_config()?;
    server.runtime = config;
    start_server(server).await
}

/// Binds, opens the runtime and serves `config` in the background.
pub async fn start_server(config: ServerConfig) -> Result<ServerHandle, ServeError> {
    // Everything the server writes (its home, sessions, bundles, logs) is its own: folders
    // 0700, files 0600. Set here, where every server starts (odysseyd, `odyssey serve` and
    // `demo`, the tests' servers), so what needs another mode says so. Sandboxed commands
    // get the usual 022 back.
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
    let identity = config.tls.as_ref().map(read_identity).transpose()?;
    let api_protected = config.grpc.auth_token.is_some() || config.insecure;
    let (listener, addr) = bind(config.listen, api_protected, ServeError::InsecureBind).await?;
    let gateway_listener = match config.http_listen {
        Some(http) => Some(bind(http, api_protected, ServeError::InsecureBind).await?),
        None => None,
    };
    let metrics_tokens = metrics_tokens(&config);
    let metrics_listener = match config.metrics_listen {
        Some(wanted) => {
            let protected = !metrics_tokens.is_empty() || config.insecure;
            Some(bind(wanted, protected, ServeError::InsecureMetricsBind).await?)
        }
        None => None,
    };
    let rpc_metrics = metrics_listener
        .is_some()
        .then(|| Arc::new(grpc::RpcMetrics::new()));
    let http = http_options(&config, identity.clone());
    let allowed_hosts = config.grpc.allowed_hosts.clone();
    let metrics_tls = identity.clone();
    let grpc = GrpcOptions {
        tls: identity,
        metrics: rpc_metrics.clone(),
        ..config.grpc
    };
    let tls = grpc.tls.is_some();
    let mut runtime_config = config.runtime;
    // Networked sandboxes may never reach these, whatever ranges the operator opens.
    runtime_config.sandbox.egress.server_listeners = std::iter::once(addr)
        .chain(gateway_listener.as_ref().map(|(_, addr)| *addr))
        .chain(metrics_listener.as_ref().map(|(_, addr)| *addr))
        .collect();
    let runtime = OdysseyRuntime::start(runtime_config).await?;
    let stop = CancellationToken::new();
    let task = tokio::spawn(grpc::serve(
        runtime.clone(),
        grpc,
        listener,
        stop.clone().cancelled_owned(),
        config.shutdown_grace,
    ));
    let gateway = gateway_listener.map(|(listener, addr)| {
        tracing::info!(%addr, tls, "HTTP gateway listening");
        let task = tokio::spawn(gateway::serve(
            runtime.clone(),
            http,
            listener,
            stop.clone().cancelled_owned(),
        ));
        (addr, task)
    });
    let metrics = match (metrics_listener, rpc_metrics) {
        (Some((listener, addr)), Some(rpc)) => {
            tracing::info!(%addr, "metrics endpoint listening");
            let mut registry = Registry::default();
            registry.register_collector(Box::new(runtime.metrics_collector()));
            registry.register_collector(Box::new(rpc));
            let task = tokio::spawn(gateway::serve_metrics(
                Arc::new(registry),
                MetricsTokens::new(metrics_tokens),
                listener,
                metrics_tls,
                allowed_hosts,
                stop.clone().cancelled_owned(),
            ));
            Some((addr, task))
        }
        _ => None,
    };
    Ok(ServerHandle {
        addr,
        tls,
        runtime,
        stop,
        task,
        gateway,
        metrics,
    })
}

/// The tokens the metrics endpoint accepts: the API token and the metrics token.
fn metrics_tokens(config: &ServerConfig) -> Vec<String> {
    let metrics = config
        .metrics_auth_token
        .as_ref()
        .map(|t| t.expose().to_owned());
    config
        .grpc
        .auth_token
        .iter()
        .cloned()
        .chain(metrics)
        .collect()
}

/// The gateway shares the gRPC port's token, heartbeat, browser origins and certificate:
/// a server that serves TLS serves it on both ports.
fn http_options(config: &ServerConfig, tls: Option<TlsIdentity>) -> HttpOptions {
    HttpOptions {
        auth_token: config.grpc.auth_token.clone(),
        heartbeat: config.grpc.heartbeat,
        cors_origins: config.grpc.cors_origins.clone(),
        tls,
        allowed_hosts: config.grpc.allowed_hosts.clone(),
    }
}

/// Binds one of the server's addresses; anything but loopback needs it `protected` (by a
/// token, or the operator's `insecure`), else `refused` names the problem.
async fn bind(
    wanted: SocketAddr,
    protected: bool,
    refused: fn(SocketAddr) -> ServeError,
) -> Result<(TcpListener, SocketAddr), ServeError> {
    if !wanted.ip().is_loopback() && !protected {
        return Err(refused(wanted));
    }
    let listener = TcpListener::bind(wanted)
        .await
        .map_err(|source| ServeError::Bind {
            addr: wanted,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| ServeError::Bind {
        addr: wanted,
        source,
    })?;
    Ok((listener, addr))
}

/// The PEM files of the server's certificate and key, checked now so that what the TLS
/// library refuses stops the server at startup, not on the first connection.
fn read_identity(files: &TlsFiles) -> Result<TlsIdentity, ServeError> {
    let read = |what, path: &PathBuf| {
        std::fs::read(path).map_err(|source| ServeError::TlsFile {
            what,
            path: path.clone(),
            source,
        })
    };
    let (cert, key) = (read("certificate", &files.cert)?, read("key", &files.key)?);
    TlsIdentity::from_pem(&cert, &key).map_err(|error| ServeError::Tls {
        files: files.clone(),
        message: error.to_string(),
    })
}

/// Runs the server until SIGINT or SIGTERM, then shuts down gracefully. The
/// configuration is layered from the machine's files, the environment and `args`.
pub async fn run(args: ServeArgs) -> Result<(), ServeError> {
    let loaded = config::load(&args, &Sources::process())?;
    init_logging(loaded.config.log_format);
    for file in &loaded.files {
        tracing::info!(file = %file.display(), "configuration file read");
    }
    for warning in &loaded.warnings {
        tracing::warn!("configuration: {warning}");
    }
    let auth = loaded.config.grpc.auth_token.is_some();
    let server = start_server(loaded.config).await?;
    let info = server.runtime().server_info();
    tracing::info!(
        addr = %server.addr(),
        url = %server.url(),
        home = %server.runtime().config().home.display(),
        auth,
        workers = info.worker_count,
        queue = info.queue_capacity,
        bubblewrap = info.sandbox.bubblewrap,
        landlock = info.sandbox.landlock,
        seccomp = info.sandbox.seccomp,
        memory_cgroup = info.sandbox.session_limits.memory_cgroup.map_or(0, |v| v.number()),
        pids_cgroup = info.sandbox.session_limits.pids_cgroup.map_or(0, |v| v.number()),
        "odysseyd serving"
    );
    for note in &info.sandbox.notes {
        tracing::warn!("sandbox: {note}");
    }
    server.stop_on(shutdown_signal());
    server.wait().await?;
    tracing::info!("odysseyd stopped");
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("received SIGINT"),
        () = term => tracing::info!("received SIGTERM"),
    }
}
