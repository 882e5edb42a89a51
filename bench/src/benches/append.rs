//! Figure 3: a turn's cost late in a long session against its cost early on. Appending to
//! the log, the history window, compaction and the session's state must not grow with the
//! session's length, so turn 10,000 should cost about what turn 10 does.

use odyssey_server::testing::openai_wire::Script;

use super::Outcome;
use crate::bundle::{self, Tools};
use crate::daemon::MODEL_KEY;
use crate::env::{self, Env};
use crate::error::Result;
use crate::replies;
use crate::report::{Bound, Figure, Statistic};
use crate::stats::Summary;
use crate::turn;

/// The early turn of the comparison.
const EARLY: usize = 10;

pub async fn run(env: &Env) -> Result<Outcome> {
    let s = &env.settings;
    let late = s.append_turns.max(EARLY * 2);
    let window = s.append_window.clamp(1, EARLY * 2);
    // Turns measured around a point: `window` of them, centred on it.
    let around = |point: usize| {
        let first = (point + 1).saturating_sub(window.div_ceil(2)).max(1);
        first..first + window
    };
    let (early_turns, late_turns) = (around(EARLY), around(late));

    let model = env::model(Script::repeat(MODEL_KEY, replies::short())).await?;
    let home = env.home("append")?;
    let daemon = env.daemon(&home, Some(&model), &[]).await?;
    let client = daemon.client().await?;
    let bundle = bundle::install(&client, Tools::None).await?;
    let session = bundle::session(&client, &bundle).await?;

    let (mut early, mut later) = (Vec::new(), Vec::new());
    let mut last_sequence = 0;
    for number in 1..late_turns.end {
        model.take_timings();
        let run = turn::run(&client, &session, &format!("Question number {number}?")).await?;
        let overhead = turn::overhead(run.wall, &model.take_timings());
        last_sequence = run.status.last_sequence;
        if early_turns.contains(&number) {
            early.push(overhead);
        } else if late_turns.contains(&number) {
            later.push(overhead);
        }
        if number % 1000 == 0 {
            eprintln!("  append: {number} turns");
        }
    }
    daemon.stop().await?;

    let early_summary = Summary::of_millis(&early);
    let late_summary = Summary::of_millis(&later);
    let ratio = match (&early_summary, &late_summary) {
        (Some(e), Some(l)) if e.p50 > 0.0 => l.p50 / e.p50,
        _ => f64::NAN,
    };
    let range = |r: &std::ops::Range<usize>| format!("{}–{}", r.start, r.end - 1);
    let mut outcome = Outcome::default();
    outcome.figures.push(
        Figure::new(
            &format!("turn {late} ÷ turn {EARLY}"),
            "ratio",
            format!(
                "p50 of the turn overhead (Run wall time less model time) over turns {} \
                 ÷ the same over turns {}, in one session",
                range(&late_turns),
                range(&early_turns)
            ),
        )
        .value(ratio)
        .target(Statistic::Value, Bound::AtMost, 1.5),
    );
    outcome.figures.push(
        Figure::new(
            &format!("overhead around turn {EARLY}"),
            "ms",
            format!("turns {}", range(&early_turns)),
        )
        .samples(early_summary),
    );
    outcome.figures.push(
        Figure::new(
            &format!("overhead around turn {late}"),
            "ms",
            format!(
                "turns {}; the session's log then holds {last_sequence} events",
                range(&late_turns)
            ),
        )
        .samples(late_summary),
    );
    Ok(outcome)
}
