//! A real `odysseyd` (the binary Cargo built for these tests) in its own process: started
//! on a free loopback port with JSON logs, found through its `odysseyd serving` line,
//! killed with SIGKILL or stopped with SIGTERM.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use odyssey_api::v1::{
    bundle_service_client::BundleServiceClient, execution_service_client::ExecutionServiceClient,
    server_service_client::ServerServiceClient, session_service_client::SessionServiceClient,
};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::oneshot;
use tonic::transport::Channel;

pub const ODYSSEYD: &str = env!("CARGO_BIN_EXE_odysseyd");
/// The sandbox helper beside `odysseyd`, where a workspace build puts it (it belongs to
/// the `odyssey-sandbox` package, whose binaries cargo does not name to this one).
pub fn sandbox_helper() -> String {
    let helper = std::path::Path::new(ODYSSEYD).with_file_name("odyssey-sandbox");
    assert!(
        helper.is_file(),
        "{} is missing: build it first (cargo build -p odyssey-sandbox)",
        helper.display()
    );
    helper.display().to_string()
}
/// The API key the loopback model server expects and the child holds.
pub const MODEL_KEY: &str = "sk-faults-loopback-0123456789";

/// How `odysseyd` is started: its home, the loopback model it talks to, extra flags, and
/// optionally a program that runs it (`unshare ... sh -c '...; exec "$@"'`).
#[derive(Clone, Debug)]
pub struct Launch {
    pub home: PathBuf,
    pub model_url: Option<String>,
    pub flags: Vec<String>,
    /// The command odysseyd's own command line is appended to.
    pub wrapper: Vec<String>,
    /// Environment variables set besides the few every child gets.
    pub env: Vec<(String, String)>,
}

impl Launch {
    pub fn new(home: &Path) -> Self {
        Self {
            home: home.to_path_buf(),
            model_url: None,
            flags: Vec::new(),
            wrapper: Vec::new(),
            env: Vec::new(),
        }
    }

    fn command_line(&self) -> Vec<String> {
        let mut line = self.wrapper.clone();
        line.push(ODYSSEYD.into());
        for flag in [
            "--listen",
            "127.0.0.1:0",
            "--log-format",
            "json",
            "--heartbeat-seconds",
            "1",
            "--home",
        ] {
            line.push(flag.into());
        }
        line.push(self.home.display().to_string());
        line.push("--sandbox-helper".into());
        line.push(sandbox_helper());
        if let Some(url) = &self.model_url {
            line.push("--provider-base-url".into());
            line.push(format!("openai={url}"));
        }
        line.extend(self.flags.iter().cloned());
        line
    }
}

/// A running child server. Killed when dropped.
pub struct Odysseyd {
    child: Child,
    pid: u32,
    pub addr: SocketAddr,
    pub channel: Channel,
    log: Arc<Mutex<Vec<String>>>,
}

/// Log lines kept per server, for failure messages and the tests' own checks.
const KEPT_LINES: usize = 2000;

impl Odysseyd {
    /// Starts the server and waits (at most 30 s) until it serves.
    pub async fn start(launch: &Launch) -> Self {
        let line = launch.command_line();
        let mut command = Command::new(&line[0]);
        command
            .args(&line[1..])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &launch.home)
            .env("RUST_LOG", "info")
            .env("OPENAI_API_KEY", MODEL_KEY)
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("odysseyd starts");
        let pid = child.id().expect("a running child has a pid");
        let stderr = child.stderr.take().expect("piped stderr");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (serving_tx, serving_rx) = oneshot::channel();
        tokio::spawn(read_log(stderr, log.clone(), serving_tx));
        let addr = match tokio::time::timeout(Duration::from_secs(30), serving_rx).await {
            Ok(Ok(addr)) => addr,
            _ => panic!(
                "odysseyd did not start serving; its log:\n{}",
                log.lock().unwrap_or_else(|p| p.into_inner()).join("\n")
            ),
        };
        let channel = Channel::from_shared(format!("http://{addr}"))
            .expect("url")
            .connect()
            .await
            .expect("connect to odysseyd");
        Self {
            child,
            pid,
            addr,
            channel,
            log,
        }
    }

    /// Starts the process without waiting for it to serve, for kills during startup.
    pub fn spawn_only(launch: &Launch) -> Child {
        let line = launch.command_line();
        Command::new(&line[0])
            .args(&line[1..])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &launch.home)
            .env("OPENAI_API_KEY", MODEL_KEY)
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("odysseyd starts")
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// SIGKILL, then waits for the process to be gone.
    pub async fn kill(mut self) -> Vec<String> {
        self.child.start_kill().expect("SIGKILL");
        self.child.wait().await.expect("reaped");
        self.log_lines()
    }

    /// SIGTERM (a graceful stop), then waits at most `within` for the process to exit.
    pub async fn terminate(mut self, within: Duration) -> Vec<String> {
        signal(self.pid, rustix::process::Signal::TERM);
        let status = tokio::time::timeout(within, self.child.wait())
            .await
            .expect("odysseyd stops after SIGTERM")
            .expect("reaped");
        assert!(status.success(), "odysseyd exited with {status}");
        self.log_lines()
    }

    /// The log lines so far (JSON objects, one per line).
    pub fn log_lines(&self) -> Vec<String> {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn bundles(&self) -> BundleServiceClient<Channel> {
        BundleServiceClient::new(self.channel.clone())
    }

    pub fn sessions(&self) -> SessionServiceClient<Channel> {
        SessionServiceClient::new(self.channel.clone())
    }

    pub fn executions(&self) -> ExecutionServiceClient<Channel> {
        ExecutionServiceClient::new(self.channel.clone())
    }

    pub fn server(&self) -> ServerServiceClient<Channel> {
        ServerServiceClient::new(self.channel.clone())
    }
}

pub fn signal(pid: u32, signal: rustix::process::Signal) {
    let raw = i32::try_from(pid).expect("pid fits");
    let target = rustix::process::Pid::from_raw(raw).expect("not pid 0");
    rustix::process::kill_process(target, signal)
        .unwrap_or_else(|e| panic!("kill({pid}, {signal:?}): {e}"));
}

/// Collects the child's log lines and reports the address it serves on.
async fn read_log(
    stderr: tokio::process::ChildStderr,
    log: Arc<Mutex<Vec<String>>>,
    serving: oneshot::Sender<SocketAddr>,
) {
    let mut serving = Some(serving);
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if serving.is_some()
            && let Ok(record) = serde_json::from_str::<Value>(&line)
            && record["fields"]["message"] == "odysseyd serving"
            && let Some(addr) = record["fields"]["addr"]
                .as_str()
                .and_then(|a| a.parse().ok())
            && let Some(tx) = serving.take()
        {
            let _ = tx.send(addr);
        }
        let mut kept = log.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() == KEPT_LINES {
            kept.remove(0);
        }
        kept.push(line);
    }
}

/// The log lines whose message is `message`.
pub fn lines_with(lines: &[String], message: &str) -> usize {
    lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["fields"]["message"] == message)
        .count()
}
