//! Figure 7: SubscribeSession from sequence 0 over a long session: the stored events are
//! read back from the log and streamed, then the stream follows live ones.

use std::time::{Duration, Instant};

use odyssey_testing::openai_wire::Script;

use super::Outcome;
use crate::bundle::{self, Tools};
use crate::daemon::MODEL_KEY;
use crate::env::{self, Env};
use crate::error::{BenchError, Result};
use crate::floors::Floor;
use crate::follow::{self, Until};
use crate::replies;
use crate::report::{Bound, Figure, Statistic};
use crate::stats::Summary;
use crate::turn;

/// Replayed events per second ÷ a bare server stream's.
const REPLAY_LIMIT: f64 = 0.15;

pub async fn run(env: &Env) -> Result<Outcome> {
    let s = &env.settings;
    let model = env::model(Script::repeat(MODEL_KEY, replies::busy(s.replay_events))).await?;
    let home = env.home("replay")?;
    let daemon = env.daemon(&home, Some(&model), &[]).await?;
    let client = daemon.client().await?;
    let bundle = bundle::install(&client, Tools::None).await?;
    let session = bundle::session(&client, &bundle).await?;
    let run = turn::run(&client, &session, "Write at length.").await?;
    let last = run.status.last_sequence;
    if (last as usize) < s.replay_events {
        return Err(BenchError::check(format!(
            "the session holds {last} events, fewer than {}",
            s.replay_events
        )));
    }

    let mut rates = Vec::new();
    for _ in 0..s.replay_runs.max(1) {
        rates.push(replay(&daemon, &session, last).await?.0);
    }
    // Once more right after a restart: the session is opened (its log read once to rebuild
    // its state) by the subscription itself.
    daemon.stop().await?;
    let daemon = env.daemon(&home, Some(&model), &[]).await?;
    let (cold_rate, cold) = replay(&daemon, &session, last).await?;
    daemon.stop().await?;

    let mut outcome = Outcome::default();
    outcome.figures.push(
        Figure::new(
            "replay from sequence 0",
            "events/s",
            format!(
                "a session of {last} events (one busy turn of text deltas), replayed by a \
                 new SubscribeSession stream from after_sequence 0: events ÷ time from the \
                 subscribe call to the last event received; the session is open"
            ),
        )
        .samples(Summary::of(&rates))
        .against(Floor::Stream)
        .ratio_target(Statistic::P50, Bound::AtLeast, REPLAY_LIMIT),
    );
    outcome.figures.push(
        Figure::new(
            "replay right after a restart",
            "events/s",
            format!(
                "the same, first thing after the server restarted, so opening the session \
                 (reading its log once) is included: {:.0} ms in all",
                cold.as_secs_f64() * 1e3
            ),
        )
        .value(cold_rate)
        .against(Floor::Stream),
    );
    Ok(outcome)
}

/// Replays the whole session; the rate and the time it took.
async fn replay(
    daemon: &crate::daemon::Daemon,
    session: &str,
    last: u64,
) -> Result<(f64, Duration)> {
    let client = daemon.client().await?;
    let started = Instant::now();
    let stream = follow::subscribe(&client, session, 0).await?;
    let followed = follow::follow(stream, Until::Sequence(last)).await?;
    let elapsed = started.elapsed();
    if !followed.in_order || followed.events != last {
        return Err(BenchError::check(format!(
            "the replay gave {} events (in order: {}), the log holds {last}",
            followed.events, followed.in_order
        )));
    }
    Ok((last as f64 / elapsed.as_secs_f64(), elapsed))
}
