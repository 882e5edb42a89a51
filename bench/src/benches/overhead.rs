//! Figure 1: what the runtime adds to a turn with one model call and no tools, through
//! `Run`: the client's wall time of `Run` less the model server's own time on the call.

use std::path::Path;
use std::time::Duration;

use odyssey_testing::openai_wire::{OpenAiWireServer, Script};

use super::Outcome;
use crate::bundle::{self, Tools};
use crate::daemon::MODEL_KEY;
use crate::env::{self, Env};
use crate::error::{BenchError, Result};
use crate::floors::Floor;
use crate::machine::filesystem_of;
use crate::replies;
use crate::report::{Bound, Figure, Statistic};
use crate::stats::Summary;
use crate::turn;

/// Where a home on memory (no disk under the log) can go, when the machine has it.
const MEMORY_FS: &str = "/dev/shm";

/// Turn overhead on disk ÷ (a bare unary call + one `fdatasync`), at the p50 and the p99.
const P50_LIMIT: f64 = 8.0;
const P99_LIMIT: f64 = 15.0;
/// Turn overhead on tmpfs (the runtime's own work) ÷ a bare unary call, at the p50.
const MEMORY_LIMIT: f64 = 20.0;

/// What the turns of one run took.
struct Samples {
    wall: Vec<Duration>,
    model: Vec<Duration>,
    overhead: Vec<Duration>,
}

pub async fn run(env: &Env) -> Result<Outcome> {
    let model = env::model(Script::repeat(MODEL_KEY, replies::short())).await?;
    let home = env.home("overhead")?;
    let disk = turns(env, &model, &home).await?;

    let mut outcome = Outcome::default();
    outcome.figures.push(
        Figure::new(
            "turn overhead",
            "ms",
            "Run's wall time at the client less the model server's time on the turn's one \
             call (request read → last byte of the answer sent); the home is on the disk of \
             the temporary folder, so this includes the turn's durable sync",
        )
        .samples(Summary::of_millis(&disk.overhead))
        .against(Floor::UnaryAndSync)
        .ratio_target(Statistic::P50, Bound::AtMost, P50_LIMIT)
        .ratio_target(Statistic::P99, Bound::AtMost, P99_LIMIT),
    );
    outcome.figures.push(
        Figure::new(
            "Run wall time",
            "ms",
            "the same turns' wall time at the client",
        )
        .samples(Summary::of_millis(&disk.wall))
        .against(Floor::Unary),
    );
    outcome.figures.push(
        Figure::new(
            "model server time",
            "ms",
            "the loopback model server's time on each turn's call",
        )
        .samples(Summary::of_millis(&disk.model)),
    );

    // The same turns with the home on memory: the runtime's own cost without the disk.
    if filesystem_of(Path::new(MEMORY_FS)).starts_with("tmpfs") {
        let parent = tempfile::Builder::new()
            .prefix("odyssey-bench-")
            .tempdir_in(MEMORY_FS)
            .map_err(|e| BenchError::io("create a folder in", MEMORY_FS, e))?;
        let home = env.home_in(Some(parent.path()), "overhead-tmpfs")?;
        let memory = turns(env, &model, &home).await?;
        outcome.figures.push(
            Figure::new(
                "turn overhead, home on tmpfs",
                "ms",
                "as `turn overhead`, with the home on tmpfs: what the runtime itself adds, \
                 syncs costing next to nothing",
            )
            .samples(Summary::of_millis(&memory.overhead))
            .against(Floor::Unary)
            .ratio_target(Statistic::P50, Bound::AtMost, MEMORY_LIMIT),
        );
    }
    let fsync = env_fsync_note(&disk);
    outcome.notes.push(fsync);
    Ok(outcome)
}

/// Runs the warm-up and measured turns on a daemon with `home`.
async fn turns(env: &Env, model: &OpenAiWireServer, home: &crate::env::Home) -> Result<Samples> {
    let s = &env.settings;
    let daemon = env.daemon(home, Some(model), &[]).await?;
    let client = daemon.client().await?;
    let bundle = bundle::install(&client, Tools::None).await?;
    let mut samples = Samples {
        wall: Vec::with_capacity(s.overhead_turns),
        model: Vec::with_capacity(s.overhead_turns),
        overhead: Vec::with_capacity(s.overhead_turns),
    };
    let mut session = String::new();
    let per_session = s.overhead_turns_per_session.max(1);
    for i in 0..s.overhead_warmup + s.overhead_turns {
        if i % per_session == 0 {
            session = bundle::session(&client, &bundle).await?;
        }
        model.take_timings();
        let run = turn::run(&client, &session, "What is the answer?").await?;
        let calls = model.take_timings();
        if calls.len() != 1 {
            return Err(BenchError::check(format!(
                "a turn made {} model calls instead of one",
                calls.len()
            )));
        }
        if i >= s.overhead_warmup {
            samples.wall.push(run.wall);
            samples.model.push(calls[0].duration());
            samples.overhead.push(turn::overhead(run.wall, &calls));
        }
    }
    daemon.stop().await?;
    Ok(samples)
}

fn env_fsync_note(disk: &Samples) -> String {
    let summary = Summary::of_millis(&disk.overhead);
    let (p50, p99) = summary.map_or((0.0, 0.0), |s| (s.p50, s.p99));
    format!(
        "A turn's start and end are made durable before anyone sees them (README, \
         \"Sessions and events\"); a turn this short does both with one `fdatasync` of the \
         session's log at its end, as slow as the disk under the home (the `fdatasync` \
         floor), so its floor is a bare unary call plus one `fdatasync`; the slowest turns are those whose sync waited on the disk. \
         With the home on tmpfs the same turns show the runtime's own cost. On disk: p50 \
         {p50:.3} ms, p99 {p99:.3} ms."
    )
}
