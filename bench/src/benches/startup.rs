//! Figure 4: how fast the server is SERVING with many sessions on disk, and its memory
//! then and with no session at all. Startup must not read every session (only those a
//! journal says were mid-turn), so neither its time nor its memory follows their number.

use std::time::{Duration, Instant};

use futures::StreamExt;
use odyssey_client::SessionFilter;
use odyssey_testing::openai_wire::Script;

use super::Outcome;
use crate::bundle::{self, Tools};
use crate::daemon::{Daemon, MODEL_KEY, Memory};
use crate::env::{self, Env};
use crate::error::{BenchError, ClientContext, Result};
use crate::replies;
use crate::report::{Bound, Figure, Statistic};
use crate::stats::Summary;
use crate::turn;

/// Sessions created (each with one turn) at once while filling the home.
const FILL_CONCURRENCY: usize = 64;
/// How long the daemon idles before its resident memory is read.
const SETTLE: Duration = Duration::from_secs(1);

/// Start with many sessions ÷ start with none, at the p99.
const START_LIMIT: f64 = 4.0;

/// Megabytes (10^6 bytes), the unit of the targets.
fn mb(kib: u64) -> f64 {
    kib as f64 * 1024.0 / 1e6
}

pub async fn run(env: &Env) -> Result<Outcome> {
    let s = &env.settings;
    let runs = s.startup_runs.max(1);
    let mut outcome = Outcome::default();

    // An empty home: start time and idle memory.
    let (mut empty_start, mut empty_rss) = (Vec::new(), Vec::new());
    for run in 0..runs {
        let home = env.home(&format!("startup-empty-{run}"))?;
        let (daemon, elapsed) = Daemon::start_timed(&env.spec(&home, None, &[])).await?;
        tokio::time::sleep(SETTLE).await;
        empty_rss.push(mb(daemon.memory()?.rss_kib));
        empty_start.push(elapsed);
        daemon.stop().await?;
    }

    // A home with many sessions, each with one completed turn.
    let model = env::model(Script::repeat(MODEL_KEY, replies::short())).await?;
    let home = env.home("startup-full")?;
    let workers = ["--worker-count".to_owned(), FILL_CONCURRENCY.to_string()];
    let filled = Instant::now();
    let daemon = env.daemon(&home, Some(&model), &workers).await?;
    let client = daemon.client().await?;
    let bundle = bundle::install(&client, Tools::None).await?;
    let created = futures::stream::iter(0..s.startup_sessions)
        .map(|_| {
            let (client, bundle) = (client.clone(), bundle.clone());
            async move {
                let session = bundle::session(&client, &bundle).await?;
                turn::run(&client, &session, "What is the answer?").await?;
                Ok::<_, BenchError>(())
            }
        })
        .buffer_unordered(FILL_CONCURRENCY)
        .collect::<Vec<_>>()
        .await;
    created.into_iter().collect::<Result<Vec<()>>>()?;
    daemon.stop().await?;
    let fill_seconds = filled.elapsed().as_secs_f64();
    drop(model);

    let (mut starts, mut serving_rss, mut settled): (Vec<Duration>, Vec<f64>, Vec<Memory>) =
        (Vec::new(), Vec::new(), Vec::new());
    let mut listing = None;
    for run in 0..runs {
        let (daemon, elapsed) = Daemon::start_timed(&env.spec(&home, None, &[])).await?;
        serving_rss.push(mb(daemon.memory()?.rss_kib));
        starts.push(elapsed);
        tokio::time::sleep(SETTLE).await;
        settled.push(daemon.memory()?);
        if run + 1 == runs {
            listing = Some(list_all(&daemon, s.startup_sessions).await?);
        }
        daemon.stop().await?;
    }
    let settled_rss: Vec<f64> = settled.iter().map(|m| mb(m.rss_kib)).collect();
    let peak: Vec<f64> = settled.iter().map(|m| mb(m.hwm_kib)).collect();
    let n = s.startup_sessions;

    outcome.figures.push(
        Figure::new(
            &format!("start to SERVING, {n} sessions"),
            "s",
            format!(
                "from spawning odysseyd on a home with {n} sessions (each with one turn) to \
                 the first SERVING answer of grpc.health.v1 (polled every 0.5 ms, a new \
                 connection each time); the page cache is warm"
            ),
        )
        .samples(Summary::of(
            &starts.iter().map(Duration::as_secs_f64).collect::<Vec<_>>(),
        )),
    );
    let p99 = |d: &[Duration]| {
        Summary::of(&d.iter().map(Duration::as_secs_f64).collect::<Vec<_>>())
            .map_or(f64::NAN, |s| s.p99)
    };
    outcome.figures.push(
        Figure::new(
            &format!("start with {n} sessions ÷ with none"),
            "ratio",
            format!(
                "p99 of start to SERVING on the home with {n} sessions ÷ the same on an empty \
                 home, measured in the same round: the empty home is this figure's floor"
            ),
        )
        .value(p99(&starts) / p99(&empty_start))
        .target(Statistic::Value, Bound::AtMost, START_LIMIT),
    );
    outcome.figures.push(
        Figure::new(
            &format!("RSS, {n} sessions"),
            "MB",
            format!("VmRSS {} s after SERVING", SETTLE.as_secs()),
        )
        .samples(Summary::of(&settled_rss))
        .target(Statistic::Max, Bound::AtMost, 60.0),
    );
    outcome.figures.push(
        Figure::new(
            &format!("peak RSS while starting, {n} sessions"),
            "MB",
            "VmHWM at the same moment",
        )
        .samples(Summary::of(&peak)),
    );
    outcome.figures.push(
        Figure::new(
            "RSS at SERVING",
            "MB",
            "VmRSS right after the first SERVING answer",
        )
        .samples(Summary::of(&serving_rss)),
    );
    if let Some((elapsed, memory)) = listing {
        outcome.figures.push(
            Figure::new(
                &format!("RSS after listing {n} sessions"),
                "MB",
                format!(
                    "VmRSS after ListSessions paged through all of them (took {:.2} s); \
                     listing reads each session's record, not its log",
                    elapsed.as_secs_f64()
                ),
            )
            .value(mb(memory.rss_kib)),
        );
    }
    outcome.figures.push(
        Figure::new(
            "idle RSS, no sessions",
            "MB",
            format!(
                "VmRSS {} s after SERVING on an empty home",
                SETTLE.as_secs()
            ),
        )
        .samples(Summary::of(&empty_rss))
        .target(Statistic::Max, Bound::AtMost, 20.0),
    );
    outcome.figures.push(
        Figure::new(
            "start to SERVING, empty home",
            "s",
            "as above, on an empty home",
        )
        .samples(Summary::of(
            &empty_start
                .iter()
                .map(Duration::as_secs_f64)
                .collect::<Vec<_>>(),
        )),
    );
    outcome.notes.push(
        "The memory targets stay in megabytes: resident memory does not move with the \
         machine's load."
            .to_owned(),
    );
    outcome.notes.push(format!(
        "Filling the home ({n} sessions created and one turn run in each, \
         {FILL_CONCURRENCY} at a time) took {fill_seconds:.1} s."
    ));
    Ok(outcome)
}

/// Pages through every session; checks their number.
async fn list_all(daemon: &Daemon, expected: usize) -> Result<(Duration, Memory)> {
    let client = daemon.client().await?;
    let started = Instant::now();
    let sessions = client
        .list_sessions(&SessionFilter::default())
        .await
        .context("ListSessions")?;
    let elapsed = started.elapsed();
    if sessions.len() != expected {
        return Err(BenchError::check(format!(
            "ListSessions found {} sessions, {expected} were created",
            sessions.len()
        )));
    }
    Ok((elapsed, daemon.memory()?))
}
