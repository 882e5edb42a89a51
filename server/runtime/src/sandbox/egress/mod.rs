//! Egress of networked sandboxes: their only way out is a proxy the server runs per
//! session.
//!
//! A networked sandbox has a network namespace of its own, like any other (only loopback),
//! so it can reach neither the host's loopback (where the server's own listeners are) nor
//! the local network. Inside it, the `odyssey-sandbox` helper starts a relay on
//! `127.0.0.1:`[`RELAY_PORT`] before it restricts and execs the command; `HTTP_PROXY` and
//! `HTTPS_PROXY` (and their lower-case forms) point at it, so curl, pip, npm and git use
//! it. The relay forwards each connection, as it is, over a Unix socket bind-mounted at
//! [`EGRESS_MOUNT`] to the session's proxy in the server (`proxy`), which decides:
//!
//! 1. the host name must match the bundle's network list and the operator's
//!    (`sandbox.network_domains`, empty for any host) (`domains`);
//! 2. it is resolved once, and each address must be public, or inside a range the
//!    operator allows (`sandbox.network_cidrs`), and never one of the server's own
//!    listeners (`addresses`);
//! 3. the proxy connects to the checked address itself (`connect`).
//!
//! Every attempt, allowed or not, is reported to the session (an event). The relay makes
//! no decision, so a process that talks to the socket directly gains nothing.
//!
//! A session's proxy starts with its first networked process and stops when its cell is
//! removed or the server shuts down ([`EgressProxies`]).

mod addresses;
mod connect;
pub mod domains;
mod proxy;

use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub use addresses::{AddressPolicy, special_range};
pub use domains::{DomainList, DomainPattern, DomainPolicy, PatternError};
pub use ipnet::IpNet;

use self::proxy::SessionProxy;
use super::error::SandboxError;
use super::helper::Relay;
use crate::events::NetworkConnectionAttempted;

/// The relay's port on the sandbox's own loopback.
pub const RELAY_PORT: u16 = 3128;
/// Where the folder holding the proxy's socket appears inside the sandbox.
pub const EGRESS_MOUNT: &str = "/run/odyssey-egress";
/// The proxy's socket, in that folder.
pub const SOCKET_NAME: &str = "proxy.sock";
/// The cell's folder holding the socket (`<cell>/egress/`): the server's, never writable
/// or even visible as such to the sandbox, which sees it read-only at [`EGRESS_MOUNT`].
const CELL_FOLDER: &str = "egress";

/// Receives each connection attempt of a session's processes (the runtime turns it into
/// a session event).
pub type ConnectionReporter = Arc<dyn Fn(NetworkConnectionAttempted) + Send + Sync>;

/// What one networked process may reach, and where its attempts are reported.
#[derive(Clone)]
pub struct NetworkGrant {
    pub domains: DomainPolicy,
    pub report: ConnectionReporter,
}

impl NetworkGrant {
    pub fn new(domains: DomainPolicy, report: ConnectionReporter) -> Self {
        Self { domains, report }
    }
}

impl fmt::Debug for NetworkGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NetworkGrant")
            .field("domains", &self.domains)
            .finish_non_exhaustive()
    }
}

/// The operator's address settings of the egress proxy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EgressSettings {
    /// Special-purpose ranges (loopback, private...) sandboxes may reach anyway.
    pub allowed_cidrs: Vec<IpNet>,
    /// The server's own listeners, which no sandbox may reach (set by `serve` once bound).
    pub server_listeners: Vec<SocketAddr>,
}

/// The environment that sends HTTP clients to the relay, replacing any such variable the
/// bundle set.
pub fn proxy_env(env: &[(OsString, OsString)]) -> Vec<(OsString, OsString)> {
    const NAMES: [&str; 4] = ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"];
    let url = format!("http://127.0.0.1:{RELAY_PORT}");
    env.iter()
        .filter(|(name, _)| !NAMES.iter().any(|n| name == n))
        .cloned()
        .chain(
            NAMES
                .iter()
                .map(|n| (OsString::from(n), OsString::from(&url))),
        )
        .collect()
}

/// The relay the helper starts for a networked process.
pub fn relay() -> Relay {
    Relay {
        port: RELAY_PORT,
        socket: Path::new(EGRESS_MOUNT).join(SOCKET_NAME),
    }
}

/// The running proxies, one per session cell.
#[derive(Debug)]
pub struct EgressProxies {
    addresses: Arc<AddressPolicy>,
    /// By the cell's canonical root.
    proxies: Mutex<HashMap<PathBuf, SessionProxy>>,
}

impl EgressProxies {
    pub fn new(settings: &EgressSettings) -> Self {
        Self {
            addresses: Arc::new(AddressPolicy {
                allowed: settings.allowed_cidrs.clone(),
                server_listeners: settings.server_listeners.clone(),
            }),
            proxies: Mutex::default(),
        }
    }

    /// Starts the proxy of the cell at `cell_root` (canonical) unless it runs, hands it
    /// `grant`, and answers the folder to bind at [`EGRESS_MOUNT`]. `owner` is the
    /// sandbox user when the server runs as root: the socket becomes theirs to connect to.
    pub(crate) fn open(
        &self,
        cell_root: &Path,
        grant: &NetworkGrant,
        owner: Option<(u32, u32)>,
    ) -> Result<PathBuf, SandboxError> {
        let folder = cell_root.join(CELL_FOLDER);
        let mut proxies = self
            .proxies
            .lock()
            .map_err(|_| SandboxError::io("egress proxies", std::io::Error::other("poisoned")))?;
        if let Some(proxy) = proxies.get(cell_root) {
            proxy.update(grant.clone());
            return Ok(folder);
        }
        let proxy = start(&folder, grant, self.addresses.clone(), owner)?;
        proxies.insert(cell_root.to_path_buf(), proxy);
        Ok(folder)
    }

    /// Stops the cell's proxy (if it runs) and waits for its tasks.
    pub(crate) async fn close(&self, cell_root: &Path) {
        let proxy = self
            .proxies
            .lock()
            .ok()
            .and_then(|mut p| p.remove(cell_root));
        if let Some(proxy) = proxy {
            proxy.stop().await;
        }
    }

    /// Stops every proxy (server shutdown).
    pub(crate) async fn close_all(&self) {
        let all: Vec<SessionProxy> = self
            .proxies
            .lock()
            .map(|mut p| p.drain().map(|(_, proxy)| proxy).collect())
            .unwrap_or_default();
        futures::future::join_all(all.into_iter().map(SessionProxy::stop)).await;
    }

    /// How many proxies run, and how many tasks they have alive in all.
    pub fn activity(&self) -> (usize, usize) {
        self.proxies.lock().map_or((0, 0), |p| {
            (p.len(), p.values().map(SessionProxy::tasks).sum())
        })
    }
}

/// Creates the cell's egress folder and starts a proxy on a socket in it.
fn start(
    folder: &Path,
    grant: &NetworkGrant,
    addresses: Arc<AddressPolicy>,
    owner: Option<(u32, u32)>,
) -> Result<SessionProxy, SandboxError> {
    let io = |what: &str, e| SandboxError::io(format!("{what} {}", folder.display()), e);
    // The sandbox user must pass through the folder to reach the socket: set on the open
    // folder, since the server's umask (077) strips the mode given at creation.
    let mode = if owner.is_some() { 0o711 } else { 0o700 };
    match std::fs::DirBuilder::new().mode(mode).create(folder) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            return Err(io("creating", e));
        }
        _ => {}
    }
    // A socket address holds at most 107 bytes of path; the folder is reached through its
    // descriptor so a deep server home still fits.
    let dir = std::fs::File::open(folder).map_err(|e| io("opening", e))?;
    dir.set_permissions(std::fs::Permissions::from_mode(mode))
        .map_err(|e| io("opening up", e))?;
    let short = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd())).join(SOCKET_NAME);
    let socket = folder.join(SOCKET_NAME);
    let proxy = SessionProxy::start(socket.clone(), &short, grant.clone(), addresses)
        .map_err(|e| io("listening in", e))?;
    std::fs::set_permissions(&short, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| io("securing the socket in", e))?;
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(&short, Some(uid), Some(gid))
            .map_err(|e| io("handing the socket over in", e))?;
    }
    Ok(proxy)
}
