//! What `odysseyd` (and `odyssey serve`) runs: flags, logging, safety checks on the bind
//! address, and a server that shuts down gracefully on SIGINT/SIGTERM.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::grpc::{self, GrpcOptions};
use crate::http::{self as gateway, HttpOptions};
use crate::runtime::permissions::HookConfig;
use crate::runtime::{OdysseyRuntime, RuntimeConfig, RuntimeError, SandboxMode};

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(
        "refusing to listen on {0} without an auth token: set --auth-token (or ODYSSEY_AUTH_TOKEN), or pass --insecure"
    )]
    InsecureBind(SocketAddr),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("bad --provider-base-url `{0}`: expected NAME=URL")]
    ProviderUrl(String),
    #[error("cannot start the runtime: {0}")]
    Runtime(#[from] RuntimeError),
    #[error("transport error: {0}")]
    Transport(#[from] tonic::transport::Error),
    #[error("the server task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
    #[error("HTTP gateway error: {0}")]
    Gateway(#[source] std::io::Error),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SandboxModeArg {
    ReadOnly,
    WorkspaceWrite,
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

/// Server flags, shared by `odysseyd` and `odyssey serve`.
#[derive(Clone, Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on. Anything but loopback needs --auth-token (or --insecure).
    #[arg(long, env = "ODYSSEY_LISTEN", default_value = "127.0.0.1:8472")]
    pub listen: SocketAddr,
    /// Folder for bundles, sessions and sandboxes [default: $ODYSSEY_HOME or ~/.odyssey].
    #[arg(long, env = "ODYSSEY_HOME")]
    pub home: Option<PathBuf>,
    /// Turns that run at once.
    #[arg(long, default_value_t = 4)]
    pub worker_count: usize,
    /// Turns that may wait for a worker before Submit answers RESOURCE_EXHAUSTED.
    #[arg(long, default_value_t = 128)]
    pub queue_capacity: usize,
    /// Bearer token every RPC but health must carry.
    #[arg(long, env = "ODYSSEY_AUTH_TOKEN", hide_env_values = true)]
    pub auth_token: Option<String>,
    /// Allow a non-loopback --listen without an auth token.
    #[arg(long)]
    pub insecure: bool,
    #[arg(long, value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// Largest gRPC message accepted or sent, in bytes.
    #[arg(long, default_value_t = 4 * 1024 * 1024)]
    pub max_message_bytes: usize,
    /// Model calls one turn may make.
    #[arg(long, default_value_t = 32)]
    pub max_turn_steps: u32,
    /// Wall-clock budget of one turn, in seconds.
    #[arg(long, default_value_t = 600)]
    pub max_turn_seconds: u64,
    /// Heartbeat interval of idle event streams, in seconds.
    #[arg(long, default_value_t = 15)]
    pub heartbeat_seconds: u64,
    /// How long running turns may take to finish on shutdown before they are interrupted.
    #[arg(long, default_value_t = 10)]
    pub shutdown_grace_seconds: u64,
    /// Force this sandbox mode on every session.
    #[arg(long, value_enum)]
    pub sandbox_mode: Option<SandboxModeArg>,
    /// Let sessions run without a sandbox (danger_full_access).
    #[arg(long)]
    pub allow_danger_full_access: bool,
    /// Let bundles that ask for it (`network: ["*"]`) open network connections.
    #[arg(long)]
    pub allow_network: bool,
    /// A host folder bundles may mount (with what lies below it); repeatable.
    #[arg(long = "mount-root", value_name = "DIR")]
    pub mount_roots: Vec<PathBuf>,
    /// A host environment variable bundles may map into the sandbox; repeatable.
    #[arg(long = "env-allow", value_name = "NAME")]
    pub env_allowlist: Vec<String>,
    /// How long a tool call waits for a human before it is denied by timeout, in seconds.
    #[arg(long, default_value_t = 600)]
    pub approval_timeout_seconds: u64,
    /// A program asked about every tool call before it runs (the pending call as JSON on
    /// stdin; answers allow / deny / ask on stdout); repeatable. Hooks can only tighten.
    #[arg(long = "pre-tool-hook", value_name = "PROGRAM")]
    pub pre_tool_hooks: Vec<PathBuf>,
    /// How long a pre-tool hook may take before the call is denied, in milliseconds.
    #[arg(long, default_value_t = 5000)]
    pub pre_tool_hook_timeout_ms: u64,
    /// The `odyssey-sandbox` helper [default: $ODYSSEY_SANDBOX_HELPER, else beside odysseyd].
    #[arg(long)]
    pub sandbox_helper: Option<PathBuf>,
    /// The user id sandboxed processes run as when the server runs as root.
    #[arg(long, default_value_t = 65534)]
    pub sandbox_uid: u32,
    /// The group id sandboxed processes run as when the server runs as root.
    #[arg(long, default_value_t = 65534)]
    pub sandbox_gid: u32,
    /// Base URL for a provider, e.g. `openai=http://127.0.0.1:8080/v1` (repeatable).
    #[arg(long = "provider-base-url", value_name = "NAME=URL")]
    pub provider_base_urls: Vec<String>,
    /// A browser origin (`https://app.example.com`) allowed to call the API cross-origin,
    /// with gRPC-Web or through the HTTP gateway; repeatable. None by default.
    #[arg(long = "cors-origin", value_name = "URL", value_parser = grpc::web::parse_origin)]
    pub cors_origins: Vec<http::HeaderValue>,
    /// Also serve the HTTP gateway (server-sent events, approvals) on this address.
    /// Anything but loopback needs --auth-token (or --insecure).
    #[arg(long, env = "ODYSSEY_HTTP_LISTEN", value_name = "ADDR")]
    pub http_listen: Option<SocketAddr>,
}

impl ServeArgs {
    /// Defaults, as if no flag were given, on the given address and home.
    pub fn new(listen: SocketAddr, home: PathBuf) -> Self {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Wrapper {
            #[command(flatten)]
            args: ServeArgs,
        }
        let mut args = Wrapper::parse_from(["odysseyd"]).args;
        args.listen = listen;
        args.home = Some(home);
        args
    }

    pub fn runtime_config(&self) -> Result<RuntimeConfig, ServeError> {
        let mut config = RuntimeConfig::with_home(
            self.home
                .clone()
                .unwrap_or_else(RuntimeConfig::default_home),
        );
        config.worker_count = self.worker_count.max(1);
        config.queue_capacity = self.queue_capacity;
        config.max_turn_steps = self.max_turn_steps.max(1);
        config.max_turn_duration = Duration::from_secs(self.max_turn_seconds.max(1));
        config.sandbox_mode_override = self.sandbox_mode.map(SandboxMode::from);
        config.allow_danger_full_access = self.allow_danger_full_access;
        config.access.allow_network = self.allow_network;
        config.access.mount_roots = self.mount_roots.clone();
        config.access.env_allowlist = self.env_allowlist.clone();
        config.approval_timeout = Duration::from_secs(self.approval_timeout_seconds.max(1));
        config.hooks = self
            .pre_tool_hooks
            .iter()
            .map(|program| {
                HookConfig::new(
                    vec![program.display().to_string()],
                    Duration::from_millis(self.pre_tool_hook_timeout_ms.max(1)),
                )
            })
            .collect();
        config.sandbox.helper = self.sandbox_helper.clone();
        config.sandbox.sandbox_uid = self.sandbox_uid;
        config.sandbox.sandbox_gid = self.sandbox_gid;
        for entry in &self.provider_base_urls {
            let (name, url) = entry
                .split_once('=')
                .filter(|(n, u)| !n.is_empty() && !u.is_empty())
                .ok_or_else(|| ServeError::ProviderUrl(entry.clone()))?;
            config
                .providers
                .entry(name.to_string())
                .or_default()
                .base_url = Some(url.to_string());
        }
        Ok(config)
    }

    pub fn grpc_options(&self) -> GrpcOptions {
        GrpcOptions {
            auth_token: self.auth_token.clone().filter(|t| !t.is_empty()),
            heartbeat: Duration::from_secs(self.heartbeat_seconds.max(1)),
            max_message_bytes: self.max_message_bytes,
            cors_origins: self.cors_origins.clone(),
        }
    }

    pub fn http_options(&self) -> HttpOptions {
        HttpOptions {
            auth_token: self.auth_token.clone().filter(|t| !t.is_empty()),
            heartbeat: Duration::from_secs(self.heartbeat_seconds.max(1)),
            cors_origins: self.cors_origins.clone(),
        }
    }
}

/// Installs the global `tracing` subscriber (`RUST_LOG` filters; default `info`).
pub fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

/// A running server.
pub struct ServerHandle {
    addr: SocketAddr,
    runtime: OdysseyRuntime,
    stop: CancellationToken,
    task: JoinHandle<Result<(), tonic::transport::Error>>,
    /// The HTTP gateway, when `--http-listen` is set.
    gateway: Option<(SocketAddr, JoinHandle<std::io::Result<()>>)>,
}

impl ServerHandle {
    /// The address it listens on (the real port when started on port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`, for clients.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn runtime(&self) -> &OdysseyRuntime {
        &self.runtime
    }

    /// The HTTP gateway's address, when it runs.
    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.gateway.as_ref().map(|(addr, _)| *addr)
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

/// Binds, opens the runtime and serves in the background.
pub async fn start(args: &ServeArgs) -> Result<ServerHandle, ServeError> {
    start_with_config(args, args.runtime_config()?).await
}

/// Like [`start`], with a runtime configuration built by the caller (settings that have
/// no flag, such as provider keys held in memory).
pub async fn start_with_config(
    args: &ServeArgs,
    config: RuntimeConfig,
) -> Result<ServerHandle, ServeError> {
    let (listener, addr) = bind(args, args.listen).await?;
    let gateway_listener = match args.http_listen {
        Some(http) => Some(bind(args, http).await?),
        None => None,
    };
    let runtime = OdysseyRuntime::start(config).await?;
    let stop = CancellationToken::new();
    let grace = Duration::from_secs(args.shutdown_grace_seconds);
    let task = tokio::spawn(grpc::serve(
        runtime.clone(),
        args.grpc_options(),
        listener,
        stop.clone().cancelled_owned(),
        grace,
    ));
    let gateway = gateway_listener.map(|(listener, addr)| {
        tracing::info!(%addr, "HTTP gateway listening");
        let task = tokio::spawn(gateway::serve(
            runtime.clone(),
            args.http_options(),
            listener,
            stop.clone().cancelled_owned(),
        ));
        (addr, task)
    });
    Ok(ServerHandle {
        addr,
        runtime,
        stop,
        task,
        gateway,
    })
}

/// Binds one of the server's addresses; anything but loopback needs a token or --insecure.
async fn bind(
    args: &ServeArgs,
    wanted: SocketAddr,
) -> Result<(TcpListener, SocketAddr), ServeError> {
    if !wanted.ip().is_loopback()
        && args.auth_token.as_deref().is_none_or(str::is_empty)
        && !args.insecure
    {
        return Err(ServeError::InsecureBind(wanted));
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

/// Runs the server until SIGINT or SIGTERM, then shuts down gracefully.
pub async fn run(args: ServeArgs) -> Result<(), ServeError> {
    init_logging(args.log_format);
    let server = start(&args).await?;
    let info = server.runtime().server_info();
    tracing::info!(
        addr = %server.addr(),
        home = %server.runtime().config().home.display(),
        auth = args.auth_token.is_some(),
        workers = info.worker_count,
        queue = info.queue_capacity,
        bubblewrap = info.sandbox.bubblewrap,
        landlock = info.sandbox.landlock,
        seccomp = info.sandbox.seccomp,
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
