//! What `odysseyd` (and `odyssey serve`) runs: flags over the layered configuration,
//! logging, safety checks on the bind address, TLS, and a server that shuts down
//! gracefully on SIGINT/SIGTERM.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::{
    self, ConfigError, DatabaseSettings, LogFormat, ServeArgs, ServerConfig, Sources, TlsFiles,
};
use crate::grpc::{self, GrpcOptions};
use crate::http::{self as gateway, HttpOptions, MetricsTokens};
use crate::tls::TlsIdentity;
use odyssey_runtime::store::Store;
use odyssey_runtime::{OdysseyRuntime, RuntimeConfig, RuntimeError};
use odyssey_store_postgres::{StoreConfig, StoreError};

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
    #[error("cannot serve from the PostgreSQL database {target}: {source}")]
    Database {
        /// The database, without its password.
        target: String,
        #[source]
        source: StoreError,
    },
    #[error("cannot create the workspace root {} (server.workspace_root): {source}", path.display())]
    WorkspaceRoot {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
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
    #[error(
        "the console is served on the HTTP gateway's address: set --http-listen (or server.http_listen) with --console"
    )]
    ConsoleWithoutGateway,
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
    if config.console && config.http_listen.is_none() {
        return Err(ServeError::ConsoleWithoutGateway);
    }
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
    let mut http = http_options(&config, identity.clone());
    // One set of A2A settings and push registrations for every binding.
    let mut a2a = crate::a2a::A2aOptions::new(
        config.grpc.a2a_default_agent.clone(),
        config.grpc.a2a_push_allowed_urls.clone(),
    );
    a2a.site = crate::a2a::Site {
        grpc_port: addr.port(),
        http_port: gateway_listener.as_ref().map(|(_, addr)| addr.port()),
        http_tls: http.tls.is_some(),
        bearer: config.grpc.auth_token.is_some(),
    };
    http.a2a_cards = Some(crate::a2a::CardOptions {
        grpc_port: addr.port(),
        a2a: a2a.clone(),
        bearer: config.grpc.auth_token.is_some(),
        // Set by the HTTP listener, which knows whether it speaks HTTPS.
        http_tls: false,
    });
    let allowed_hosts = config.grpc.allowed_hosts.clone();
    let metrics_tls = identity.clone();
    let mut grpc = GrpcOptions::new(config.grpc, identity, rpc_metrics.clone());
    grpc.a2a = a2a;
    let tls = grpc.tls.is_some();
    let mut runtime_config = config.runtime;
    // Event hooks get the API's public JSON form, as the gateway serves events.
    runtime_config.event_hook_encoder =
        odyssey_runtime::event_hooks::EventEncoder::new(crate::http::ApiEventJson);
    // Networked sandboxes may never reach these, whatever ranges the operator opens.
    runtime_config.sandbox.egress.server_listeners = std::iter::once(addr)
        .chain(gateway_listener.as_ref().map(|(_, addr)| *addr))
        .chain(metrics_listener.as_ref().map(|(_, addr)| *addr))
        .collect();
    if let Some(root) = &runtime_config.workspace_root {
        create_workspace_root(root)?;
    }
    let runtime = match open_database(&config.database, &mut runtime_config).await? {
        Some(store) => {
            OdysseyRuntime::builder(runtime_config)
                .store(store)
                .start()
                .await?
        }
        None => OdysseyRuntime::start(runtime_config).await?,
    };
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

/// The PostgreSQL store as this replica, when `database.url` is set; its password comes
/// from `ODYSSEY_DATABASE_PASSWORD` (this process's environment) or
/// `database.password_file`. Workspaces are then snapshotted by copies, which every replica
/// can read.
async fn open_database(
    database: &DatabaseSettings,
    runtime: &mut RuntimeConfig,
) -> Result<Option<Store>, ServeError> {
    let env: BTreeMap<String, String> = std::env::var(config::PASSWORD_VARIABLE)
        .ok()
        .map(|password| (config::PASSWORD_VARIABLE.to_owned(), password))
        .into_iter()
        .collect();
    let unnamed = |source| ServeError::Database {
        target: "(database.url)".to_owned(),
        source,
    };
    let Some(db) = database.connect_config(&env).map_err(unnamed)? else {
        return Ok(None);
    };
    config::shared_store_snapshots(&mut runtime.snapshots)
        .map_err(|message| ServeError::Config(ConfigError::Inconsistent(message)))?;
    let target = db.target();
    runtime.store_outage_wait = database.outage;
    let mut store_config = StoreConfig::new(db, runtime);
    store_config.lease_ttl = database.lease;
    store_config.cluster_queue_limit = database.cluster_queue_limit;
    let store = odyssey_store_postgres::open_store(store_config, &database.replica_id)
        .await
        .map_err(|source| ServeError::Database {
            target: target.clone(),
            source,
        })?;
    tracing::info!(
        store = %store.kind(),
        replica = %database.replica_id,
        database = %target,
        lease_seconds = database.lease.as_secs(),
        "serving from the PostgreSQL database"
    );
    Ok(Some(store))
}

/// The folder of sessions' workspaces, when the operator named one: created (0700) if
/// missing, so that a wrong path stops the server now rather than a session's first turn.
fn create_workspace_root(root: &std::path::Path) -> Result<(), ServeError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(root)
        .map_err(|source| ServeError::WorkspaceRoot {
            path: root.to_owned(),
            source,
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
        console: config.console,
        max_message_bytes: config.grpc.max_message_bytes,
        a2a_cards: None,
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
        workspace_root = %server.runtime().config().sandbox_dir().display(),
        store = %info.store,
        replica = %info.replica_id.as_deref().unwrap_or("-"),
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
