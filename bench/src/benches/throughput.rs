//! Figure 2: turns per second with many sessions running turns at once, on an instant
//! model, with the event log durable as always.

use std::time::{Duration, Instant};

use odyssey_testing::openai_wire::Script;

use super::Outcome;
use crate::bundle::{self, Tools};
use crate::daemon::MODEL_KEY;
use crate::env::{self, Env};
use crate::error::{BenchError, Result};
use crate::floors::Floor;
use crate::replies;
use crate::report::{Bound, Figure, Statistic};
use crate::stats::Summary;
use crate::turn;

/// Turns per second ÷ bare unary calls per second at the same concurrency.
const RATE_LIMIT: f64 = 0.03;

/// Client connections the sessions' calls are spread over.
const CONNECTIONS: usize = 4;
/// Width of the windows whose rates make the distribution.
const WINDOW: Duration = Duration::from_millis(500);

pub async fn run(env: &Env) -> Result<Outcome> {
    let s = &env.settings;
    let sessions = s.sessions.max(1);
    let model = env::model(Script::repeat(MODEL_KEY, replies::short())).await?;
    let home = env.home("throughput")?;
    let args = [
        "--worker-count".to_owned(),
        sessions.to_string(),
        "--queue-capacity".to_owned(),
        (sessions * 2).max(128).to_string(),
    ];
    let daemon = env.daemon(&home, Some(&model), &args).await?;
    let mut clients = Vec::with_capacity(CONNECTIONS);
    for _ in 0..CONNECTIONS {
        clients.push(daemon.client().await?);
    }
    let bundle = bundle::install(&clients[0], Tools::None).await?;
    let mut ids = Vec::with_capacity(sessions);
    for _ in 0..sessions {
        ids.push(bundle::session(&clients[0], &bundle).await?);
    }

    let warmup = Duration::from_secs_f64(s.throughput_warmup_seconds);
    let measured = Duration::from_secs_f64(s.throughput_seconds.max(0.5));
    let start = Instant::now();
    let (from, until) = (start + warmup, start + warmup + measured);
    let mut tasks = Vec::with_capacity(sessions);
    for (i, id) in ids.into_iter().enumerate() {
        let client = clients[i % CONNECTIONS].clone();
        tasks.push(tokio::spawn(async move {
            // (when the turn ended, its wall time)
            let mut done: Vec<(Instant, Duration)> = Vec::new();
            while Instant::now() < until {
                let run = turn::run(&client, &id, "What is the answer?").await?;
                done.push((Instant::now(), run.wall));
            }
            Ok::<_, BenchError>(done)
        }));
    }
    let mut ended = Vec::new();
    for task in tasks {
        let done = task
            .await
            .map_err(|e| BenchError::check(format!("a session's task failed: {e}")))??;
        ended.extend(done);
    }
    let memory = daemon.memory()?;
    daemon.stop().await?;
    drop(model);

    let in_window: Vec<&(Instant, Duration)> = ended
        .iter()
        .filter(|(at, _)| *at >= from && *at < until)
        .collect();
    let rate = in_window.len() as f64 / measured.as_secs_f64();
    let windows = (measured.as_secs_f64() / WINDOW.as_secs_f64())
        .floor()
        .max(1.0) as usize;
    let mut per_window = vec![0usize; windows];
    for (at, _) in &in_window {
        let index = (at.duration_since(from).as_secs_f64() / WINDOW.as_secs_f64()) as usize;
        if let Some(count) = per_window.get_mut(index) {
            *count += 1;
        }
    }
    let rates: Vec<f64> = per_window
        .iter()
        .map(|n| *n as f64 / WINDOW.as_secs_f64())
        .collect();
    let latencies: Vec<Duration> = in_window.iter().map(|(_, wall)| *wall).collect();

    let mut outcome = Outcome::default();
    outcome.notes.push(
        "The harness's client and model server share the machine's cores with the daemon, \
         so this is a floor: on the same machine a separate client would leave the daemon \
         more CPU time. Every turn makes its start and end durable (an fdatasync of its \
         session's log; one for both when the turn takes under 10 ms)."
            .to_owned(),
    );
    outcome.figures.push(
        Figure::new(
            "turns per second",
            "turns/s",
            format!(
                "turns completed in the measured {:.0} s (after {:.0} s of warm-up) ÷ its \
                 length, {sessions} sessions each running turns back to back through Run \
                 over {CONNECTIONS} connections, `--worker-count {sessions}`; the \
                 distribution is of {} ms windows",
                measured.as_secs_f64(),
                warmup.as_secs_f64(),
                WINDOW.as_millis()
            ),
        )
        .samples(Summary::of(&rates))
        .value(rate)
        .against(Floor::UnaryConcurrent)
        .ratio_target(Statistic::Value, Bound::AtLeast, RATE_LIMIT),
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    outcome.figures.push(
        Figure::new(
            "turns per second per core",
            "turns/s",
            format!("turns per second ÷ the {cores} cores the harness and daemon share"),
        )
        .value(rate / cores as f64),
    );
    outcome.figures.push(
        Figure::new(
            "turn latency under load",
            "ms",
            "Run's wall time of the measured turns",
        )
        .samples(Summary::of_millis(&latencies)),
    );
    outcome.figures.push(
        Figure::new("daemon peak RSS", "MB", "VmHWM of odysseyd at the end")
            .value(memory.hwm_kib as f64 * 1024.0 / 1e6),
    );
    Ok(outcome)
}
