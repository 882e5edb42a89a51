//! What the machine gives at a moment: the floors a benchmark's figures are read against,
//! measured just before and just after it, in the same run.
//!
//! - a bare unary RPC (`Run` of the echo server, same client and connection settings);
//! - a bare server stream (`SubscribeSession` of the echo server, the same event type);
//! - `fdatasync` of a 256-byte append in the temporary folder (where the homes are);
//! - starting `/bin/true` and waiting for it;
//! - bubblewrap running `true` with the sandbox's own options (`BwrapPlan::args` of
//!   `odyssey-runtime`, for a `workspace_write` cell), without the helper and bash.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use odyssey_runtime::sandbox::helper::{HelperArgs, LandlockRequirement};
use odyssey_runtime::sandbox::{
    APP, Bind, BwrapPlan, CACHE, CellPaths, RUN, SANDBOX_PATH, SystemLayout, TMP, WORKSPACE,
};
use serde::{Deserialize, Serialize};

use crate::echo::EchoServer;
use crate::error::{BenchError, Result};
use crate::follow::{self, Until};
use crate::machine;
use crate::report::Statistic;
use crate::stats::Summary;
use crate::turn;

/// Unary calls timed one after the other (after a few not timed).
const UNARY_CALLS: usize = 300;
const UNARY_WARMUP: usize = 20;
/// Streams read, and events in each.
const STREAMS: usize = 3;
pub const STREAM_EVENTS: u64 = 30_000;
/// The concurrent unary floor: calls at once over this many connections, for this long.
const CONCURRENT_CALLS: usize = 64;
const CONCURRENT_CONNECTIONS: usize = 4;
const CONCURRENT_FOR: Duration = Duration::from_millis(700);
const SYNC_ROUNDS: usize = 30;
const PROCESS_ROUNDS: usize = 30;
const BWRAP_ROUNDS: usize = 20;

/// One measurement of every floor (a floor that could not be measured is `None`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Floors {
    /// `Run` of the echo server, one call at a time, ms.
    pub unary_ms: Option<Summary>,
    /// `Run` of the echo server, 64 calls at once over 4 connections, calls/s (measured
    /// only around the benchmarks that need it).
    pub unary_concurrent_per_s: Option<f64>,
    /// `SubscribeSession` of the echo server, events/s of one stream (one sample a stream).
    pub stream_events_per_s: Option<Summary>,
    pub fdatasync_ms: Option<Summary>,
    pub process_start_ms: Option<Summary>,
    pub bwrap_true_ms: Option<Summary>,
    /// Why a floor is missing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

/// Which floor a figure is read against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Floor {
    /// A bare unary call.
    Unary,
    /// A bare unary call plus one `fdatasync`: what a durable turn cannot go below.
    UnaryAndSync,
    /// Bare unary calls per second at the throughput benchmark's concurrency.
    UnaryConcurrent,
    /// Events per second of a bare server stream.
    Stream,
    Fdatasync,
    ProcessStart,
    /// bubblewrap running `true` with the sandbox's options.
    Bwrap,
}

impl Floor {
    pub fn label(self) -> &'static str {
        match self {
            Floor::Unary => "bare unary RPC",
            Floor::UnaryAndSync => "bare unary RPC + fdatasync",
            Floor::UnaryConcurrent => "bare unary RPCs/s, 64 at once",
            Floor::Stream => "bare server stream",
            Floor::Fdatasync => "fdatasync of an append",
            Floor::ProcessStart => "starting /bin/true",
            Floor::Bwrap => "bubblewrap `true`",
        }
    }

    pub fn unit(self) -> &'static str {
        match self {
            Floor::UnaryConcurrent => "calls/s",
            Floor::Stream => "events/s",
            _ => "ms",
        }
    }
}

impl Floors {
    /// The floor's value for a figure's statistic: the same statistic of its samples
    /// (p50 for a single value).
    pub fn get(&self, floor: Floor, statistic: Statistic) -> Option<f64> {
        let stat = |s: &Option<Summary>| {
            s.as_ref().map(|s| match statistic {
                Statistic::P99 => s.p99,
                Statistic::Max => s.max,
                Statistic::P50 | Statistic::Value => s.p50,
            })
        };
        match floor {
            Floor::Unary => stat(&self.unary_ms),
            Floor::UnaryAndSync => Some(stat(&self.unary_ms)? + stat(&self.fdatasync_ms)?),
            Floor::UnaryConcurrent => self.unary_concurrent_per_s,
            Floor::Stream => stat(&self.stream_events_per_s),
            Floor::Fdatasync => stat(&self.fdatasync_ms),
            Floor::ProcessStart => stat(&self.process_start_ms),
            Floor::Bwrap => stat(&self.bwrap_true_ms),
        }
    }
}

/// Everything a floor measurement needs, made once a run.
pub struct FloorKit {
    echo: EchoServer,
    tmp: PathBuf,
    bwrap: Option<(PathBuf, Vec<OsString>)>,
    bwrap_error: Option<String>,
}

impl FloorKit {
    /// `helper` is the `odyssey-sandbox` binary the daemons use (bound into the sandbox,
    /// as the runtime does, though not started).
    pub async fn new(tmp: &Path, helper: &Path) -> Result<Self> {
        let echo = EchoServer::start(STREAM_EVENTS).await?;
        let (bwrap, bwrap_error) = match bwrap_command(tmp, helper) {
            Ok(command) => (Some(command), None),
            Err(e) => (None, Some(e.to_string())),
        };
        Ok(Self {
            echo,
            tmp: tmp.to_path_buf(),
            bwrap,
            bwrap_error,
        })
    }

    /// Measures every floor; the concurrent unary one only when `concurrent`.
    pub async fn measure(&self, concurrent: bool) -> Floors {
        let mut floors = Floors::default();
        let note = floors_error;
        match self.unary().await {
            Ok(s) => floors.unary_ms = s,
            Err(e) => floors.errors.push(note("unary", e)),
        }
        if concurrent {
            match self.concurrent().await {
                Ok(rate) => floors.unary_concurrent_per_s = Some(rate),
                Err(e) => floors.errors.push(note("concurrent unary", e)),
            }
        }
        match self.stream().await {
            Ok(s) => floors.stream_events_per_s = s,
            Err(e) => floors.errors.push(note("stream", e)),
        }
        floors.fdatasync_ms = machine::fdatasync_latency(&self.tmp, SYNC_ROUNDS);
        floors.process_start_ms = machine::process_start(PROCESS_ROUNDS);
        match &self.bwrap {
            Some((program, args)) => match bwrap_true(program, args) {
                Ok(s) => floors.bwrap_true_ms = s,
                Err(e) => floors.errors.push(note("bubblewrap", e)),
            },
            None => floors.errors.push(format!(
                "bubblewrap: {}",
                self.bwrap_error.as_deref().unwrap_or("not available")
            )),
        }
        floors
    }

    async fn unary(&self) -> Result<Option<Summary>> {
        let client = self.echo.client().await?;
        let mut times = Vec::with_capacity(UNARY_CALLS);
        for i in 0..UNARY_WARMUP + UNARY_CALLS {
            let run = turn::run(&client, "echo", "What is the answer?").await?;
            if i >= UNARY_WARMUP {
                times.push(run.wall);
            }
        }
        Ok(Summary::of_millis(&times))
    }

    async fn concurrent(&self) -> Result<f64> {
        let mut clients = Vec::with_capacity(CONCURRENT_CONNECTIONS);
        for _ in 0..CONCURRENT_CONNECTIONS {
            clients.push(self.echo.client().await?);
        }
        let started = Instant::now();
        let until = started + CONCURRENT_FOR;
        let mut tasks = Vec::with_capacity(CONCURRENT_CALLS);
        for i in 0..CONCURRENT_CALLS {
            let client = clients[i % CONCURRENT_CONNECTIONS].clone();
            tasks.push(tokio::spawn(async move {
                let mut calls = 0u64;
                while Instant::now() < until {
                    turn::run(&client, "echo", "What is the answer?").await?;
                    calls += 1;
                }
                Ok::<_, BenchError>(calls)
            }));
        }
        let mut calls = 0;
        for task in tasks {
            calls += task
                .await
                .map_err(|e| BenchError::check(format!("a floor task failed: {e}")))??;
        }
        Ok(calls as f64 / started.elapsed().as_secs_f64())
    }

    async fn stream(&self) -> Result<Option<Summary>> {
        let client = self.echo.client().await?;
        let mut rates = Vec::with_capacity(STREAMS);
        for _ in 0..STREAMS {
            let stream = follow::subscribe(&client, "echo", 0).await?;
            let followed = follow::follow(stream, Until::Sequence(STREAM_EVENTS)).await?;
            if !followed.in_order || followed.events != STREAM_EVENTS {
                return Err(BenchError::check(format!(
                    "the echo stream gave {} events (in order: {})",
                    followed.events, followed.in_order
                )));
            }
            rates.push(followed.rate());
        }
        Ok(Summary::of(&rates))
    }
}

fn floors_error(what: &str, e: BenchError) -> String {
    format!("{what}: {e}")
}

/// The bubblewrap command line the sandbox would run for a `workspace_write` cell under
/// `tmp`, with `/bin/true` in place of the helper and its command.
fn bwrap_command(tmp: &Path, helper: &Path) -> Result<(PathBuf, Vec<OsString>)> {
    let cell = CellPaths::under(tmp.join("floor-cell"));
    let run_dir = cell.run_dir("floor");
    for dir in [&cell.app, &cell.data, &cell.cache, &cell.tmp, &run_dir] {
        std::fs::create_dir_all(dir).map_err(|e| BenchError::io("create", dir, e))?;
    }
    let layout = SystemLayout::detect();
    // The cell's folders where a `workspace_write` run sees them (the runtime's
    // `cell_binds`, which is not public).
    let binds: Vec<Bind> = [
        (&cell.data, WORKSPACE, true),
        (&cell.app, APP, false),
        (&cell.cache, CACHE, true),
        (&cell.tmp, TMP, true),
        (&run_dir, RUN, true),
    ]
    .into_iter()
    .map(|(source, dest, writable)| Bind {
        source: source.clone(),
        dest: PathBuf::from(dest),
        writable,
    })
    .collect();
    let env: Vec<(OsString, OsString)> = [
        ("HOME", "/workspace"),
        ("TMPDIR", "/tmp"),
        ("PATH", SANDBOX_PATH),
    ]
    .iter()
    .map(|(k, v)| (OsString::from(k), OsString::from(v)))
    .collect();
    let cwd = PathBuf::from("/workspace");
    let plan = BwrapPlan {
        layout: &layout,
        binds: &binds,
        env: &env,
        cwd: &cwd,
        helper,
    };
    let (read_only, read_write, devices) = plan.landlock_paths();
    let helper_args = HelperArgs {
        read_only,
        read_write,
        devices,
        network: false,
        relay: None,
        landlock: LandlockRequirement::BestEffort,
        limits: Default::default(),
        lifeline: None,
        command: vec![OsString::from("true")],
    };
    let mut args = plan.args(&helper_args);
    // Everything up to the helper: the sandbox's own options; then `true` alone.
    let end = args
        .iter()
        .position(|a| a == "--")
        .ok_or_else(|| BenchError::check("the bubblewrap arguments have no `--`"))?;
    args.truncate(end);
    args.extend([OsString::from("--"), OsString::from("/bin/true")]);
    let program = which("bwrap")
        .ok_or_else(|| BenchError::check("bubblewrap (bwrap) is not on PATH".to_owned()))?;
    Ok((program, args))
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

fn bwrap_true(program: &Path, args: &[OsString]) -> Result<Option<Summary>> {
    let mut times = Vec::with_capacity(BWRAP_ROUNDS);
    for _ in 0..BWRAP_ROUNDS {
        let started = Instant::now();
        let output = std::process::Command::new(program)
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| BenchError::io("run", program, e))?;
        times.push(started.elapsed());
        if !output.status.success() {
            return Err(BenchError::check(format!(
                "bwrap … true ended with {}: {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
    }
    Ok(Summary::of_millis(&times))
}
