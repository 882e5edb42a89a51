//! A real `odysseyd` as a child process: on a free loopback port, with its own home, its
//! log in a file, and killed with the harness (even if the harness itself is killed).

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use odyssey_client::OdysseyClient;
use tokio::process::{Child, Command};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

use crate::error::{BenchError, ClientContext, Result};

/// The API key the loopback model server expects and the daemon is given.
pub const MODEL_KEY: &str = "sk-bench-loopback";

/// How long a start may take before the harness gives up (not a measurement bound).
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a graceful stop may take before the daemon is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(20);

/// How to start one daemon.
#[derive(Clone, Debug)]
pub struct DaemonSpec {
    pub binary: PathBuf,
    pub home: PathBuf,
    /// Where its stderr goes (appended, so restarts keep one log).
    pub log: PathBuf,
    /// `http://127.0.0.1:PORT/v1` of the loopback model server, as the `openai` provider.
    pub model_url: Option<String>,
    /// Further flags.
    pub args: Vec<String>,
    /// Further environment variables (`SSL_CERT_FILE` naming a test CA).
    pub env: Vec<(String, PathBuf)>,
}

/// A running daemon; killed when dropped.
pub struct Daemon {
    child: Child,
    pid: u32,
    url: String,
    log: PathBuf,
}

/// Resident memory of a process, from `/proc/<pid>/status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Memory {
    /// VmRSS, KiB.
    pub rss_kib: u64,
    /// VmHWM (peak RSS), KiB.
    pub hwm_kib: u64,
}

impl Daemon {
    /// `path` as the daemon sees it: `odysseyd` mounts overlay workspaces in a mount
    /// namespace of its own, which `/proc/<pid>/root` resolves paths in.
    pub fn path_inside(&self, path: &std::path::Path) -> PathBuf {
        let relative = path.strip_prefix("/").unwrap_or(path);
        PathBuf::from(format!("/proc/{}/root", self.pid)).join(relative)
    }

    /// Starts a daemon and waits until its health check answers SERVING.
    pub async fn start(spec: &DaemonSpec) -> Result<Self> {
        Ok(Self::start_timed(spec).await?.0)
    }

    /// Like [`Daemon::start`], returning the time from spawning the process to the first
    /// SERVING answer.
    pub async fn start_timed(spec: &DaemonSpec) -> Result<(Self, Duration)> {
        // The port is found free, released and handed to the daemon; another process may
        // take it meanwhile, so a failed bind is retried on another port.
        let mut last = None;
        for _ in 0..3 {
            let port = free_port()?;
            let spawned = Instant::now();
            let mut daemon = Self::spawn(spec, port)?;
            match daemon.wait_serving(spawned).await {
                Ok(elapsed) => return Ok((daemon, elapsed)),
                Err(e) => {
                    let _ = daemon.child.start_kill();
                    let _ = daemon.child.wait().await;
                    let retry = matches!(&e, BenchError::Daemon { log, .. } if log.contains("cannot listen"));
                    if !retry {
                        return Err(e);
                    }
                    last = Some(e);
                }
            }
        }
        Err(last.unwrap_or_else(|| BenchError::check("odysseyd did not start")))
    }

    fn spawn(spec: &DaemonSpec, port: u16) -> Result<Self> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&spec.log)
            .map_err(|e| BenchError::io("open", &spec.log, e))?;
        let mut command = Command::new(&spec.binary);
        command
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--home")
            .arg(&spec.home)
            .args(&spec.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true);
        if let Some(url) = &spec.model_url {
            command
                .arg("--provider-base-url")
                .arg(format!("openai={url}"));
        }
        // Only the flags above configure it: no setting leaks in from the environment.
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("ODYSSEY_") {
                command.env_remove(name);
            }
        }
        // Logs at the default level, as an operator runs it.
        command.env_remove("RUST_LOG");
        command.env("OPENAI_API_KEY", MODEL_KEY);
        command.envs(spec.env.iter().map(|(name, value)| (name, value)));
        // The daemon dies with the harness, even if the harness is killed.
        odyssey_sandbox::host::prepare_child(
            command.as_std_mut(),
            odyssey_sandbox::host::ChildSetup {
                server_pid: std::process::id(),
                ..Default::default()
            },
        );
        let child = command
            .spawn()
            .map_err(|e| BenchError::io("start", &spec.binary, e))?;
        let pid = child
            .id()
            .ok_or_else(|| BenchError::check("odysseyd exited at once"))?;
        Ok(Self {
            child,
            pid,
            url: format!("http://127.0.0.1:{port}"),
            log: spec.log.clone(),
        })
    }

    /// Polls the health check until SERVING; the time since `spawned`.
    async fn wait_serving(&mut self, spawned: Instant) -> Result<Duration> {
        let deadline = spawned + START_TIMEOUT;
        loop {
            if let Some(status) = self
                .child
                .try_wait()
                .map_err(|e| BenchError::io("wait for", "odysseyd", e))?
            {
                return Err(self.failed(format!("exited before serving ({status})")));
            }
            if health(&self.url).await == Some(ServingStatus::Serving) {
                return Ok(spawned.elapsed());
            }
            if Instant::now() > deadline {
                return Err(self.failed(format!("not SERVING after {START_TIMEOUT:?}")));
            }
            tokio::time::sleep(Duration::from_micros(500)).await;
        }
    }

    fn failed(&self, message: String) -> BenchError {
        BenchError::Daemon {
            message,
            log: tail(&self.log, 20),
        }
    }

    /// `http://127.0.0.1:PORT` of its gRPC port.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A new client connection (its own HTTP/2 connection).
    pub async fn client(&self) -> Result<OdysseyClient> {
        OdysseyClient::connect(self.url.clone(), None)
            .await
            .context(format!("connect to {}", self.url))
    }

    /// The daemon's resident memory now.
    pub fn memory(&self) -> Result<Memory> {
        let path = format!("/proc/{}/status", self.pid);
        let status =
            std::fs::read_to_string(&path).map_err(|e| BenchError::io("read", &path, e))?;
        let field = |name: &str| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|kib| kib.parse::<u64>().ok())
                .ok_or_else(|| BenchError::check(format!("{path} has no {name}")))
        };
        Ok(Memory {
            rss_kib: field("VmRSS:")?,
            hwm_kib: field("VmHWM:")?,
        })
    }

    /// Bytes the daemon has caused to be written to storage so far (`write_bytes` of
    /// `/proc/<pid>/io`).
    pub fn disk_written(&self) -> Result<u64> {
        let path = format!("/proc/{}/io", self.pid);
        let io = std::fs::read_to_string(&path).map_err(|e| BenchError::io("read", &path, e))?;
        io.lines()
            .find_map(|line| line.strip_prefix("write_bytes:"))
            .and_then(|n| n.trim().parse::<u64>().ok())
            .ok_or_else(|| BenchError::check(format!("{path} has no write_bytes")))
    }

    /// CPU time the daemon's threads have used so far (from each thread's
    /// `/proc/<pid>/task/<tid>/schedstat`; threads that ended are not counted).
    pub fn cpu_time(&self) -> Result<Duration> {
        let dir = format!("/proc/{}/task", self.pid);
        let tasks = std::fs::read_dir(&dir).map_err(|e| BenchError::io("list", &dir, e))?;
        let mut nanos = 0u64;
        for task in tasks.flatten() {
            let stat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
            nanos += stat
                .split_whitespace()
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
        }
        Ok(Duration::from_nanos(nanos))
    }

    /// Kills it at once (SIGKILL), as a machine dying would, and reaps it.
    pub async fn kill(mut self) -> Result<()> {
        self.child
            .start_kill()
            .map_err(|e| BenchError::io("kill", "odysseyd", e))?;
        self.child
            .wait()
            .await
            .map_err(|e| BenchError::io("wait for", "odysseyd", e))?;
        Ok(())
    }

    /// Stops gracefully (SIGTERM), killing it if it takes too long.
    pub async fn stop(mut self) -> Result<()> {
        // Our own child, not reaped yet: the pid is still its.
        let pid = i32::try_from(self.pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
            .ok_or_else(|| self.failed(format!("pid {} out of range", self.pid)))?;
        if rustix::process::kill_process(pid, rustix::process::Signal::TERM).is_err() {
            return Err(self.failed("cannot send SIGTERM".into()));
        }
        match tokio::time::timeout(STOP_TIMEOUT, self.child.wait()).await {
            Ok(Ok(status)) if status.success() => Ok(()),
            Ok(Ok(status)) => Err(self.failed(format!("stopped with {status}"))),
            Ok(Err(e)) => Err(BenchError::io("wait for", "odysseyd", e)),
            Err(_) => {
                let _ = self.child.start_kill();
                let _ = self.child.wait().await;
                Err(self.failed(format!(
                    "still running {STOP_TIMEOUT:?} after SIGTERM; killed"
                )))
            }
        }
    }
}

/// The health status at `url`, or `None` when nothing answers yet.
async fn health(url: &str) -> Option<ServingStatus> {
    let endpoint = tonic::transport::Endpoint::from_shared(url.to_owned())
        .ok()?
        .connect_timeout(Duration::from_secs(1))
        .timeout(Duration::from_secs(5));
    let channel = endpoint.connect().await.ok()?;
    let response = HealthClient::new(channel)
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .ok()?;
    ServingStatus::try_from(response.into_inner().status).ok()
}

fn free_port() -> Result<u16> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    let listener = TcpListener::bind(addr).map_err(|e| BenchError::io("bind", "127.0.0.1:0", e))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| BenchError::io("bind", "127.0.0.1:0", e))
}

/// The last `lines` lines of a file (for error messages).
pub fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
