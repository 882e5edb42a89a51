//! A real OCI registry for tests: the CNCF `distribution` registry (Debian's
//! `docker-registry` package), started on a free loopback port with its storage in a
//! temporary folder and a generated configuration file.
//!
//! ```text
//! let registry = TestRegistry::start().await?;                       // anonymous
//! let private = TestRegistry::start_with_basic_auth("ci", "s3cret").await?;
//! // push to `{registry.host()}/team/demo:1.0.0` ...
//! registry.tamper_blob("sha256:…")?;                                  // serve wrong bytes
//! ```
//!
//! The binary is `$ODYSSEY_TEST_REGISTRY`, else `docker-registry` (or `registry`) on
//! `PATH`, else `/usr/bin/docker-registry`. Dropped, the registry process is killed and its
//! storage removed.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

/// Where Debian installs the registry.
const DEBIAN_BINARY: &str = "/usr/bin/docker-registry";

/// How often a start is retried when the chosen port was taken in the meantime.
const START_ATTEMPTS: usize = 5;

/// A running registry; killed when dropped.
pub struct TestRegistry {
    addr: SocketAddr,
    /// Dropped (killed) before `dir` is removed.
    child: Option<Child>,
    dir: tempfile::TempDir,
}

impl TestRegistry {
    /// A registry that accepts anonymous pushes and pulls.
    pub async fn start() -> io::Result<Self> {
        Self::start_inner(None).await
    }

    /// A registry that requires HTTP basic auth as `username` / `password` (htpasswd,
    /// bcrypt) for every request.
    pub async fn start_with_basic_auth(username: &str, password: &str) -> io::Result<Self> {
        let hash = bcrypt::hash(password, 5).map_err(io::Error::other)?;
        Self::start_inner(Some(format!("{username}:{hash}\n"))).await
    }

    async fn start_inner(htpasswd: Option<String>) -> io::Result<Self> {
        let binary = binary()?;
        let dir = tempfile::Builder::new()
            .prefix("odyssey-registry-")
            .tempdir()?;
        let htpasswd_path = match htpasswd {
            Some(line) => {
                let path = dir.path().join("htpasswd");
                std::fs::write(&path, line)?;
                Some(path)
            }
            None => None,
        };
        let mut last_error = None;
        for _ in 0..START_ATTEMPTS {
            let port = free_port()?;
            let config = dir.path().join("config.yml");
            std::fs::write(
                &config,
                config_yaml(&dir.path().join("storage"), port, htpasswd_path.as_deref()),
            )?;
            let log = std::fs::File::create(dir.path().join("registry.log"))?;
            let mut child = Command::new(&binary)
                .arg("serve")
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(log.try_clone()?)
                .stderr(log)
                .kill_on_drop(true)
                .spawn()
                .map_err(|e| {
                    io::Error::new(e.kind(), format!("cannot run {}: {e}", binary.display()))
                })?;
            let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
            match wait_until_listening(&mut child, addr).await {
                Ok(()) => {
                    return Ok(Self {
                        addr,
                        dir,
                        child: Some(child),
                    });
                }
                Err(e) => {
                    let _ = child.kill().await;
                    last_error = Some(e);
                }
            }
        }
        let log = std::fs::read_to_string(dir.path().join("registry.log")).unwrap_or_default();
        Err(io::Error::other(format!(
            "the registry did not start: {}; its log:\n{log}",
            last_error.map(|e| e.to_string()).unwrap_or_default()
        )))
    }

    /// `127.0.0.1:PORT`, the registry host as references name it.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Kills the registry (its storage stays until drop): it is down from now on.
    pub async fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
    }

    /// The file holding a blob in the registry's filesystem storage.
    pub fn blob_path(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
        let prefix = hex.get(..2).unwrap_or(hex);
        self.dir
            .path()
            .join("storage/docker/registry/v2/blobs/sha256")
            .join(prefix)
            .join(hex)
            .join("data")
    }

    /// The manifest digest a tag points to, read from the registry's storage.
    pub fn tag_digest(&self, repository: &str, tag: &str) -> io::Result<String> {
        let link = self
            .dir
            .path()
            .join("storage/docker/registry/v2/repositories")
            .join(repository)
            .join("_manifests/tags")
            .join(tag)
            .join("current/link");
        Ok(std::fs::read_to_string(link)?.trim().to_owned())
    }

    /// The manifest a tag points to, as stored (JSON).
    pub fn stored_manifest(&self, repository: &str, tag: &str) -> io::Result<serde_json::Value> {
        let bytes = std::fs::read(self.blob_path(&self.tag_digest(repository, tag)?))?;
        serde_json::from_slice(&bytes).map_err(io::Error::other)
    }

    /// Flips bytes of a stored blob, keeping its size: the registry goes on serving it
    /// under its old digest, as a corrupted disk or a malicious mirror would.
    pub fn tamper_blob(&self, digest: &str) -> io::Result<()> {
        let path = self.blob_path(digest);
        let mut bytes = std::fs::read(&path)?;
        let middle = bytes.len() / 2;
        for byte in bytes.iter_mut().skip(middle).take(16) {
            *byte ^= 0x5a;
        }
        std::fs::write(&path, bytes)
    }

    /// The registry's own log, for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default()
    }
}

/// The registry binary, or an error that says how to install it.
fn binary() -> io::Result<PathBuf> {
    if let Some(path) = std::env::var_os("ODYSSEY_TEST_REGISTRY") {
        return Ok(PathBuf::from(path));
    }
    let on_path = std::env::var_os("PATH").into_iter().flat_map(|paths| {
        std::env::split_paths(&paths)
            .flat_map(|dir| [dir.join("docker-registry"), dir.join("registry")])
            .collect::<Vec<_>>()
    });
    on_path
        .chain([PathBuf::from(DEBIAN_BINARY)])
        .find(|path| path.is_file())
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                "no OCI registry binary: install Debian's `docker-registry` package \
                 (apt-get install docker-registry) or set ODYSSEY_TEST_REGISTRY",
            )
        })
}

/// A loopback port nobody listens on right now.
fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
        .local_addr()?
        .port())
}

/// Polls until the registry accepts connections; fails if it exits first.
async fn wait_until_listening(child: &mut Child, addr: SocketAddr) -> io::Result<()> {
    for _ in 0..200 {
        if let Some(status) = child.try_wait()? {
            return Err(io::Error::other(format!("the registry exited ({status})")));
        }
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            // Someone listens; make sure it is this registry and not a process that took
            // the port first (then the registry exits at once, failing to bind).
            tokio::time::sleep(Duration::from_millis(50)).await;
            if let Some(status) = child.try_wait()? {
                return Err(io::Error::other(format!("the registry exited ({status})")));
            }
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    Err(io::Error::new(
        io::ErrorKind::TimedOut,
        format!("the registry did not listen on {addr} within 5 s"),
    ))
}

fn config_yaml(storage: &Path, port: u16, htpasswd: Option<&Path>) -> String {
    let secret = uuid::Uuid::new_v4().simple().to_string();
    let mut yaml = format!(
        "version: 0.1\n\
         log:\n  level: warn\n  accesslog:\n    disabled: true\n\
         storage:\n  filesystem:\n    rootdirectory: '{}'\n  delete:\n    enabled: true\n\
         http:\n  addr: 127.0.0.1:{port}\n  secret: {secret}\n",
        storage.display()
    );
    if let Some(path) = htpasswd {
        yaml.push_str(&format!(
            "auth:\n  htpasswd:\n    realm: odyssey-test\n    path: '{}'\n",
            path.display()
        ));
    }
    yaml
}
