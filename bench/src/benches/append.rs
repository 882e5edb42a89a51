//! Figure 3: a turn's cost late in a long session against its cost early on. Appending to
//! the log, the history window, compaction and the session's state must not grow with the
//! session's length, so turn 10,000 should cost about what turn 10 does.

use odyssey_testing::openai_wire::Script;

use super::Outcome;
use crate::bundle::{self, Tools};
use crate::daemon::MODEL_KEY;
use crate::env::{self, Env};
use crate::error::Result;
use crate::replies;
use crate::report::{Bound, Figure, Statistic};
use crate::stats::Summary;
use crate::turn;

/// The early turn of the comparison: early samples are turns 1..=2×EARLY of fresh
/// sessions.
const EARLY: usize = 10;

pub async fn run(env: &Env) -> Result<Outcome> {
    let s = &env.settings;
    let late = s.append_turns.max(EARLY * 4);
    let samples = s.append_window.max(1);
    let per_early_session = EARLY * 2;
    // The late samples are `samples` turns centred on `late`.
    let first_late = (late + 1)
        .saturating_sub(samples.div_ceil(2))
        .max(EARLY * 2);
    let late_turns = first_late..first_late + samples;

    let model = env::model(Script::repeat(MODEL_KEY, replies::short())).await?;
    let home = env.home("append")?;
    let daemon = env.daemon(&home, Some(&model), &[]).await?;
    let client = daemon.client().await?;
    let bundle = bundle::install(&client, Tools::None).await?;
    let long = bundle::session(&client, &bundle).await?;
    let overhead_of = |run: crate::turn::TurnRun| turn::overhead(run.wall, &model.take_timings());

    for number in 1..late_turns.start {
        model.take_timings();
        turn::run(&client, &long, &format!("Question number {number}?")).await?;
        if number % 1000 == 0 {
            eprintln!("  append: {number} turns");
        }
    }
    // Late and early turns alternate, so that both see the same load on the machine.
    let (mut early, mut later) = (Vec::new(), Vec::new());
    let mut early_session = String::new();
    let mut last_sequence = 0;
    for (i, number) in late_turns.clone().enumerate() {
        model.take_timings();
        let run = turn::run(&client, &long, &format!("Question number {number}?")).await?;
        last_sequence = run.status.last_sequence;
        later.push(overhead_of(run));

        if i % per_early_session == 0 {
            early_session = bundle::session(&client, &bundle).await?;
        }
        model.take_timings();
        let prompt = format!("Question number {}?", i % per_early_session + 1);
        early.push(overhead_of(
            turn::run(&client, &early_session, &prompt).await?,
        ));
    }
    daemon.stop().await?;

    let early_summary = Summary::of_millis(&early);
    let late_summary = Summary::of_millis(&later);
    let ratio = match (&early_summary, &late_summary) {
        (Some(e), Some(l)) if e.p50 > 0.0 => l.p50 / e.p50,
        _ => f64::NAN,
    };
    let early_range = format!("1–{per_early_session}");
    let late_range = format!("{}–{}", late_turns.start, late_turns.end - 1);
    let mut outcome = Outcome::default();
    outcome.figures.push(
        Figure::new(
            &format!("turn {late} ÷ turn {EARLY}"),
            "ratio",
            format!(
                "p50 of the turn overhead (Run wall time less model time) over turns \
                 {late_range} of one session ÷ the same over turns {early_range} of fresh \
                 sessions, one late and one early turn in turn"
            ),
        )
        .value(ratio)
        .target(Statistic::Value, Bound::AtMost, 1.5),
    );
    outcome.figures.push(
        Figure::new(
            &format!("overhead around turn {EARLY}"),
            "ms",
            format!(
                "turns {early_range} of {} sessions",
                samples.div_ceil(per_early_session)
            ),
        )
        .samples(early_summary),
    );
    outcome.figures.push(
        Figure::new(
            &format!("overhead around turn {late}"),
            "ms",
            format!("turns {late_range}; the session's log then holds {last_sequence} events"),
        )
        .samples(late_summary),
    );
    Ok(outcome)
}
