//! MCP servers of a session: a warm stdio server's tool call through a turn, and a stdio
//! server's start in the session's sandbox up to its answers, each beyond what the server
//! itself takes.
//!
//! The server is a small one on Python's standard library (`SERVER`), run with `python3`
//! in the sandbox cell. It reports, as each call's result, the nanoseconds between reading
//! the request and writing its answer: the server's own time, taken out of the call.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use odyssey_client::proto::session_event::Payload;
use odyssey_client::{OdysseyClient, OperatorCommand, pack_files};
use odyssey_testing::openai_wire::{OpenAiWireServer, Script};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::Outcome;
use crate::bundle::{self, MODEL};
use crate::daemon::MODEL_KEY;
use crate::env::{self, Env};
use crate::error::{BenchError, ClientContext, Result};
use crate::floors::Floor;
use crate::replies;
use crate::report::{Bound, Figure, Statistic};
use crate::stats::Summary;

/// The interpreter, in the sandbox and out of it alike (not a shim found on `PATH`).
const PYTHON: &str = "/usr/bin/python3";
/// The tool the model calls: `mcp__<server>__<tool>`.
const TOOL: &str = "mcp__clock__now";
/// Turns per session, the first not measured (it starts the server); few enough that the
/// history never needs a summary (an extra model call).
const TURNS_PER_SESSION: usize = 5;
/// A warm call's overhead beyond the server's own time, p50, in ms.
const CALL_LIMIT_MS: f64 = 1.0;
/// A server's start in the sandbox up to its answers beyond its own start, p50, in ms.
const START_LIMIT_MS: f64 = 20.0;

/// A stdio MCP server (newline-delimited JSON-RPC) with one tool, `now`, whose result is
/// the nanoseconds it spent between reading the call and writing its answer.
const SERVER: &str = r#"import json, sys, time
def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()
tool = {"name": "now", "description": "The time.", "inputSchema": {"type": "object", "properties": {}}}
for line in sys.stdin:
    start = time.perf_counter_ns()
    message = json.loads(line)
    method, rid = message.get("method"), message.get("id")
    if rid is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "clock", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [tool]}})
    elif method == "tools/call":
        text = json.dumps({"content": [{"type": "text", "text": "%d"}]})
        own = time.perf_counter_ns() - start
        sys.stdout.write(('{"jsonrpc": "2.0", "id": %s, "result": ' % json.dumps(rid)) + (text % own) + "}\n")
        sys.stdout.flush()
    else:
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
"#;

pub async fn run(env: &Env) -> Result<Outcome> {
    let s = &env.settings;
    let per_turn = s.mcp_calls_per_turn.max(1);
    let model = env::model(Script::tool_loop(
        MODEL_KEY,
        TOOL,
        "{}",
        per_turn,
        replies::short(),
    ))
    .await?;
    let home = env.home("mcp")?;
    let args = ["--max-turn-steps".to_owned(), (per_turn + 1).to_string()];
    let daemon = env.daemon(&home, Some(&model), &args).await?;
    let client = daemon.client().await?;
    let bundle = install(&client).await?;
    let calls = warm_calls(&client, &model, &bundle, per_turn, s.mcp_calls).await?;
    let starts = starts(&client, &bundle, env.tmp(), s.mcp_starts).await?;
    daemon.stop().await?;

    let mut outcome = Outcome::default();
    let p50 = |samples: &[f64]| Summary::of(samples).map_or(f64::NAN, |s| s.p50);
    outcome.notes.push(format!(
        "A warm call: from the model's answer calling `{TOOL}` to its next request, less the \
         server's own time (p50 {:.3} ms, which it reports as the call's result). What is left \
         is the runtime's: the call decoded, the rule checked, the request written to the \
         server's stdin and its answer read and decoded by rmcp, the result rendered, two \
         events, the next model request.",
        p50(&calls.own_ms)
    ));
    outcome.notes.push(format!(
        "A start: ListSessionTools on a new session whose cell exists (the server started \
         in the session's sandbox cell, `initialize` and `tools/list` answered) less the same call once the \
         server runs (p50 {:.1} ms), less the server's own start: python3 run directly, \
         without the sandbox, until it answered `initialize` and `tools/list` (p50 {:.1} ms). \
         What is left is bubblewrap, the helper's Landlock and seccomp, the cell's process \
         record and the client's handshake.",
        p50(&starts.warm_ms),
        p50(&starts.own_ms)
    ));
    outcome.figures.push(
        Figure::new(
            "warm stdio MCP tool call, beyond the server",
            "ms",
            format!(
                "at the model server: from the last byte of an answer calling `{TOOL}` to \
                 the arrival of the next request, less the server's own time; {per_turn} \
                 calls per turn, the server started by each session's first turn"
            ),
        )
        .samples(Summary::of(&calls.overhead_ms))
        .against(Floor::Unary)
        .target(Statistic::P50, Bound::AtMost, CALL_LIMIT_MS),
    );
    outcome.figures.push(
        Figure::new(
            "stdio MCP server start in the sandbox, beyond its own",
            "ms",
            "ListSessionTools on a new session less the same call on the running server, \
             less the server started directly until it answered initialize and tools/list",
        )
        .samples(Summary::of(&starts.overhead_ms))
        .against(Floor::Bwrap)
        .target(Statistic::P50, Bound::AtMost, START_LIMIT_MS),
    );
    Ok(outcome)
}

/// Installs the bundle: one agent on the loopback model, using the stdio server `clock`
/// (`SERVER`, run with the host's `/usr/bin/python3`), its tools allowed.
async fn install(client: &OdysseyClient) -> Result<String> {
    let name = "bench-mcp";
    let manifest = format!(
        "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: {name}\n  \
         version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      \
         default: true\n  mcp_servers:\n    - name: clock\n      command: [/usr/bin/python3, /app/clock.py]\n  \
         sandbox:\n    mode: workspace_write\n"
    );
    let agent = format!(
        "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\n  version: 0.1.0\n  \
         description: benchmark agent\nspec:\n  kind: prompt\n  prompt: You are a benchmark \
         agent. Answer briefly.\n  model:\n    provider: openai\n    name: {MODEL}\n  \
         mcp_servers: [clock]\n  tools:\n    allow: [\"mcp__clock__*\"]\n"
    );
    let archive = pack_files(&[
        ("odyssey.bundle.yaml", manifest.as_bytes()),
        ("agents/main/agent.yaml", agent.as_bytes()),
        ("clock.py", SERVER.as_bytes()),
    ])
    .context("pack the MCP benchmark bundle")?;
    client
        .build_bundle(archive, "", false)
        .await
        .context("install the MCP benchmark bundle")?;
    Ok(name.to_owned())
}

/// Warm calls: each overhead (end to end less the server's time) and the server's time.
struct WarmCalls {
    overhead_ms: Vec<f64>,
    own_ms: Vec<f64>,
}

async fn warm_calls(
    client: &OdysseyClient,
    model: &OpenAiWireServer,
    bundle: &str,
    per_turn: usize,
    count: usize,
) -> Result<WarmCalls> {
    let (mut overhead_ms, mut own_ms) = (Vec::new(), Vec::new());
    let mut session = String::new();
    let mut number = 0;
    while overhead_ms.len() < count {
        if number % TURNS_PER_SESSION == 0 {
            session = bundle::session(client, bundle).await?;
        }
        let measured = number % TURNS_PER_SESSION > 0;
        number += 1;
        model.take_timings();
        let mut turn = client
            .run_turn(&session, "Tell the time, repeatedly.", Default::default())
            .await
            .context("run a turn")?;
        let mut own = Vec::new();
        while let Some(event) = turn.next().await.context("read the turn's events")? {
            match event.payload {
                Some(Payload::ToolCallFinished(done)) => {
                    let nanos: f64 = match (done.success, done.result.trim().parse()) {
                        (true, Ok(nanos)) => nanos,
                        _ => {
                            return Err(BenchError::check(format!(
                                "the MCP call failed: {}",
                                done.result
                            )));
                        }
                    };
                    own.push(nanos / 1e6);
                }
                Some(Payload::TurnCompleted(done)) if !done.error.is_empty() => {
                    return Err(BenchError::check(format!(
                        "the turn failed: {}",
                        done.error
                    )));
                }
                _ => {}
            }
        }
        let timings = model.take_timings();
        if own.len() != per_turn || timings.len() != per_turn + 1 || !measured {
            continue;
        }
        for (pair, own) in timings.windows(2).zip(own) {
            let call = pair[1].received.saturating_duration_since(pair[0].answered);
            overhead_ms.push(millis(call) - own);
            own_ms.push(own);
        }
    }
    overhead_ms.truncate(count);
    Ok(WarmCalls {
        overhead_ms,
        own_ms,
    })
}

/// Server starts: each overhead, and the warm listing and own start beside it.
struct Starts {
    overhead_ms: Vec<f64>,
    warm_ms: Vec<f64>,
    own_ms: Vec<f64>,
}

async fn starts(client: &OdysseyClient, bundle: &str, tmp: &Path, count: usize) -> Result<Starts> {
    let script = tmp.join("mcp-clock.py");
    std::fs::write(&script, SERVER).map_err(|e| BenchError::io("write", &script, e))?;
    let mut starts = Starts {
        overhead_ms: Vec::new(),
        warm_ms: Vec::new(),
        own_ms: Vec::new(),
    };
    // The first start of all (python3's files read from disk) is not measured.
    let first = bundle::session(client, bundle).await?;
    listed(client, &first).await?;
    own_start(&script).await?;
    for _ in 0..count {
        let session = bundle::session(client, bundle).await?;
        // The cell made first (a command run in it), so that the listing that starts the
        // server does not also stage the bundle into a new cell.
        client
            .run_session_command(
                &session,
                OperatorCommand::Argv(vec!["true".to_owned()]),
                None,
                None,
            )
            .await
            .context("run `true` in a new session's cell")?;
        let cold = listed(client, &session).await?;
        let warm = listed(client, &session).await?;
        let own = own_start(&script).await?;
        client
            .delete_session(&session)
            .await
            .context("delete a session")?;
        starts
            .overhead_ms
            .push(millis(cold) - millis(warm) - millis(own));
        starts.warm_ms.push(millis(warm));
        starts.own_ms.push(millis(own));
    }
    Ok(starts)
}

/// How long ListSessionTools took; it must list the server's tool.
async fn listed(client: &OdysseyClient, session: &str) -> Result<Duration> {
    let started = Instant::now();
    let listed = client
        .list_session_tools(session)
        .await
        .context("list a session's tools")?;
    let took = started.elapsed();
    if !listed.tools.iter().any(|t| t.name == TOOL) {
        return Err(BenchError::check(format!(
            "ListSessionTools did not list {TOOL}: {:?}",
            listed.mcp_server_errors
        )));
    }
    Ok(took)
}

/// The server run directly (no sandbox): from its spawn until it answered `initialize`
/// and `tools/list`.
async fn own_start(script: &Path) -> Result<Duration> {
    let started = Instant::now();
    let mut child = tokio::process::Command::new(PYTHON)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| BenchError::io("start", script, e))?;
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(BenchError::check("python3 has no stdin or stdout"));
    };
    let mut lines = BufReader::new(stdout).lines();
    let requests = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    ];
    for request in requests {
        stdin
            .write_all(format!("{request}\n").as_bytes())
            .await
            .map_err(|e| BenchError::io("write to", script, e))?;
    }
    for _ in 0..2 {
        match lines.next_line().await {
            Ok(Some(_)) => {}
            Ok(None) => return Err(BenchError::check("python3 ended before it answered")),
            Err(e) => return Err(BenchError::io("read from", script, e)),
        }
    }
    let took = started.elapsed();
    drop(stdin);
    let _ = child.kill().await;
    Ok(took)
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
