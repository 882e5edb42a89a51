//! The harness's settings: sizes and durations of each benchmark, from the command line.

use serde::{Deserialize, Serialize};

/// Every setting has a default sized for a 2-core machine and a run of a few minutes.
#[derive(Clone, Debug, clap::Args, Serialize, Deserialize)]
pub struct Settings {
    /// overhead: turns measured (after the warm-up turns).
    #[arg(long, default_value_t = 1000)]
    pub overhead_turns: usize,
    /// overhead: turns run first and not measured.
    #[arg(long, default_value_t = 50)]
    pub overhead_warmup: usize,
    /// overhead: turns per session before the next session is used, kept below the
    /// history's compaction point so that every turn makes exactly one model call.
    #[arg(long, default_value_t = 32)]
    pub overhead_turns_per_session: usize,
    /// throughput: sessions running turns at once (the daemon gets as many workers).
    #[arg(long, default_value_t = 64)]
    pub sessions: usize,
    /// throughput: measured seconds (after the warm-up).
    #[arg(long, default_value_t = 10.0)]
    pub throughput_seconds: f64,
    /// throughput: seconds run first and not measured.
    #[arg(long, default_value_t = 2.0)]
    pub throughput_warmup_seconds: f64,
    /// append: the later turn whose cost is compared with the turn-10 cost.
    #[arg(long, default_value_t = 10_000)]
    pub append_turns: usize,
    /// append: turns measured at each of the two points (the late turns around the later
    /// one; turns 1 to 20 of fresh sessions for turn 10).
    #[arg(long, default_value_t = 100)]
    pub append_window: usize,
    /// startup: sessions on disk.
    #[arg(long, default_value_t = 10_000)]
    pub startup_sessions: usize,
    /// startup: starts measured with those sessions (and with an empty home).
    #[arg(long, default_value_t = 5)]
    pub startup_runs: usize,
    /// delivery: events of one busy turn (model text deltas).
    #[arg(long, default_value_t = 100_000)]
    pub delivery_events: usize,
    /// delivery: subscribers on the busy session at once.
    #[arg(long, default_value_t = 100)]
    pub subscribers: usize,
    /// delivery: busy turns per measurement.
    #[arg(long, default_value_t = 7)]
    pub delivery_runs: usize,
    /// sandbox: tool calls measured.
    #[arg(long, default_value_t = 200)]
    pub sandbox_calls: usize,
    /// sandbox: tool calls per turn.
    #[arg(long, default_value_t = 10)]
    pub sandbox_calls_per_turn: usize,
    /// egress: requests measured each way (through the proxy, plain and CONNECT, and
    /// direct); the networked Bash calls take `--sandbox-calls`.
    #[arg(long, default_value_t = 200)]
    pub egress_requests: usize,
    /// replay: events in the replayed session.
    #[arg(long, default_value_t = 100_000)]
    pub replay_events: usize,
    /// replay: full replays measured.
    #[arg(long, default_value_t = 5)]
    pub replay_runs: usize,
    /// archives: times each hostile archive is sent through each RPC.
    #[arg(long, default_value_t = 5)]
    pub archive_runs: usize,
    /// turn-cost: pairs (a direct model call, then a turn) measured per model server
    /// variant, at most.
    #[arg(long, default_value_t = 200)]
    #[serde(default = "default_turn_cost_pairs")]
    pub turn_cost_pairs: usize,
    /// turn-cost: seconds of model calls per variant, which bounds the pairs of the
    /// variants whose first token is late (at least 10 pairs each).
    #[arg(long, default_value_t = 6.0)]
    #[serde(default = "default_turn_cost_seconds")]
    pub turn_cost_seconds: f64,
    /// mcp: warm MCP tool calls measured.
    #[arg(long, default_value_t = 200)]
    #[serde(default = "default_mcp_calls")]
    pub mcp_calls: usize,
    /// mcp: MCP tool calls per turn.
    #[arg(long, default_value_t = 10)]
    #[serde(default = "default_mcp_calls_per_turn")]
    pub mcp_calls_per_turn: usize,
    /// mcp: MCP server starts measured.
    #[arg(long, default_value_t = 30)]
    #[serde(default = "default_mcp_starts")]
    pub mcp_starts: usize,
    /// subagents: samples measured (each three turns: a parent with an `Agent` call, the
    /// same parent with an `UpdatePlan` call, the child agent alone).
    #[arg(long, default_value_t = 300)]
    #[serde(default = "default_subagent_turns")]
    pub subagent_turns: usize,
    /// workspace: files of the large workspace that is forked and snapshotted.
    #[arg(long, default_value_t = 10_000)]
    #[serde(default = "default_workspace_files")]
    pub workspace_files: usize,
    /// workspace: bytes of those files, in all.
    #[arg(long, default_value_t = 1 << 30)]
    #[serde(default = "default_workspace_bytes")]
    pub workspace_bytes: u64,
    /// workspace: forks of the large session measured (after one not measured).
    #[arg(long, default_value_t = 5)]
    #[serde(default = "default_workspace_forks")]
    pub workspace_forks: usize,
    /// workspace: turns rewriting one file measured in each fork.
    #[arg(long, default_value_t = 10)]
    #[serde(default = "default_workspace_turns_per_fork")]
    pub workspace_turns_per_fork: usize,
    /// a2a: pairs measured (each a turn through A2A SendMessage and one through Run).
    #[arg(long, default_value_t = 300)]
    #[serde(default = "default_a2a_turns")]
    pub a2a_turns: usize,
    /// scale: the PostgreSQL server to measure on, `postgres://USER:PASSWORD@HOST:PORT/DB`
    /// [default: `ODYSSEY_BENCH_DATABASE_URL`, else `ODYSSEY_TEST_DATABASE_URL`]; each
    /// cluster of replicas gets a database of its own on it, dropped afterwards. Never
    /// written to the report.
    #[arg(long, value_name = "URL")]
    #[serde(skip)]
    pub database_url: Option<String>,
    /// scale: turns measured for the overhead on each store (after `--overhead-warmup`
    /// turns not measured).
    #[arg(long, default_value_t = 300)]
    #[serde(default = "default_scale_turns")]
    pub scale_turns: usize,
    /// scale: sessions running turns at once, spread over the replicas (each replica gets
    /// as many workers as it has sessions). Kept within a replica's pool of 16 database
    /// connections: with 48 on one replica, turns waited for a connection and failed
    /// UNAVAILABLE (bench/scale/48-sessions).
    #[arg(long, default_value_t = 12)]
    #[serde(default = "default_scale_sessions")]
    pub scale_sessions: usize,
    /// scale: seconds of turns/s measured per cluster (after `--throughput-warmup-seconds`).
    #[arg(long, default_value_t = 8.0)]
    #[serde(default = "default_scale_seconds")]
    pub scale_seconds: f64,
    /// scale: text deltas of each turn whose events a subscriber on another replica times,
    /// one every 5 ms.
    #[arg(long, default_value_t = 200)]
    #[serde(default = "default_scale_deltas")]
    pub scale_deltas: usize,
    /// A further odysseyd flag for every daemon (`--daemon-arg=--long-term-memory=false`);
    /// repeatable.
    #[arg(long = "daemon-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub daemon_args: Vec<String>,
}

// Reports written before `turn-cost` existed lack its settings; they still compare.
fn default_turn_cost_pairs() -> usize {
    200
}

fn default_turn_cost_seconds() -> f64 {
    6.0
}

// Likewise for `mcp`.
fn default_mcp_calls() -> usize {
    200
}

fn default_mcp_calls_per_turn() -> usize {
    10
}

fn default_mcp_starts() -> usize {
    30
}

// Reports written before `subagents` existed lack its setting; they still compare.
fn default_subagent_turns() -> usize {
    300
}

// Likewise for `workspace`.
fn default_workspace_files() -> usize {
    10_000
}

fn default_workspace_bytes() -> u64 {
    1 << 30
}

fn default_workspace_forks() -> usize {
    5
}

fn default_workspace_turns_per_fork() -> usize {
    10
}

// Likewise for `a2a`.
fn default_a2a_turns() -> usize {
    300
}

// Likewise for `scale`.
fn default_scale_turns() -> usize {
    300
}

fn default_scale_sessions() -> usize {
    12
}

fn default_scale_seconds() -> f64 {
    8.0
}

fn default_scale_deltas() -> usize {
    200
}

impl Settings {
    /// The sizes of `quick`: every setting of its benchmarks capped, so that the whole
    /// of it runs in under a minute on two cores.
    pub fn quick(mut self) -> Self {
        self.overhead_turns = self.overhead_turns.min(200);
        self.overhead_warmup = self.overhead_warmup.min(20);
        self.sandbox_calls = self.sandbox_calls.min(30);
        self.egress_requests = self.egress_requests.min(30);
        self.archive_runs = self.archive_runs.min(1);
        self
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}
