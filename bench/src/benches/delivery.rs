//! Figure 5: live delivery of a busy turn's events (one model text delta each) to one
//! subscriber, to many at once, and past a subscriber that reads nothing.

use std::time::Duration;

use odyssey_testing::openai_wire::Script;

use super::Outcome;
use crate::bundle::{self, Tools};
use crate::daemon::MODEL_KEY;
use crate::env::{self, Env};
use crate::error::{BenchError, Result};
use crate::floors::Floor;
use crate::follow::{self, Followed, Until};
use crate::replies;
use crate::report::{Bound, Figure, Statistic};
use crate::stats::Summary;
use crate::turn;

/// Client connections the many subscribers are spread over.
const CONNECTIONS: usize = 4;
/// Subscribers that never read, each on its own connection, in the stall measure.
const STALLED: usize = 4;
/// Events/s to one subscriber ÷ a bare server stream's.
const ONE_LIMIT: f64 = 0.07;
/// Extra daemon CPU per stalled stream ÷ the daemon CPU of the same turn without one.
const STALL_CPU_LIMIT: f64 = 0.3;

pub async fn run(env: &Env) -> Result<Outcome> {
    let s = &env.settings;
    let runs = s.delivery_runs.max(1);
    let model = env::model(Script::repeat(MODEL_KEY, replies::busy(s.delivery_events))).await?;
    let home = env.home("delivery")?;
    let daemon = env.daemon(&home, Some(&model), &[]).await?;
    let mut clients = Vec::with_capacity(CONNECTIONS);
    for _ in 0..CONNECTIONS {
        clients.push(daemon.client().await?);
    }
    let client = &clients[0];
    let bundle = bundle::install(client, Tools::None).await?;

    // One subscriber, and the same turn with none (the baseline of the stall test).
    let (mut one_rates, mut one_events) = (Vec::new(), 0);
    let (mut alone, mut stalled) = (Vec::new(), Vec::new());
    let (mut alone_cpu, mut stalled_cpu) = (Vec::new(), Vec::new());
    for run in 0..runs {
        let session = bundle::session(client, &bundle).await?;
        let stream = follow::subscribe(client, &session, 0).await?;
        let reader = tokio::spawn(follow::follow(stream, Until::TurnEnd));
        let run_one = turn::run(client, &session, "Write at length.").await?;
        let followed = joined(reader).await?;
        check_all(&followed, run_one.status.last_sequence)?;
        one_rates.push(followed.rate());
        one_events = followed.events;

        // Alternately first, so that neither side gains from its place.
        for stall in [run % 2 == 1, run % 2 == 0] {
            let session = bundle::session(client, &bundle).await?;
            if !stall {
                let cpu = daemon.cpu_time()?;
                alone.push(turn::run(client, &session, "Write at length.").await?.wall);
                alone_cpu.push(daemon.cpu_time()?.saturating_sub(cpu));
                continue;
            }
            // Subscribers, each on its own connection, that never read: the server's buffer
            // and the connection's flow-control window fill up, then their cursors stay
            // behind.
            let mut idle = Vec::with_capacity(STALLED);
            for _ in 0..STALLED {
                let reader_client = daemon.client().await?;
                idle.push(follow::subscribe(&reader_client, &session, 0).await?);
            }
            let cpu = daemon.cpu_time()?;
            stalled.push(turn::run(client, &session, "Write at length.").await?.wall);
            stalled_cpu.push(daemon.cpu_time()?.saturating_sub(cpu));
            drop(idle);
        }
    }

    // Many subscribers on one busy session.
    let session = bundle::session(client, &bundle).await?;
    let mut readers = Vec::with_capacity(s.subscribers);
    for i in 0..s.subscribers {
        let stream = follow::subscribe(&clients[i % CONNECTIONS], &session, 0).await?;
        readers.push(tokio::spawn(follow::follow(stream, Until::TurnEnd)));
    }
    let many_run = turn::run(client, &session, "Write at length.").await?;
    let mut many = Vec::with_capacity(readers.len());
    for reader in readers {
        many.push(joined(reader).await?);
    }
    daemon.stop().await?;

    let complete = many
        .iter()
        .filter(|f| f.in_order && f.events == many_run.status.last_sequence)
        .count();
    let delivered: u64 = many.iter().map(|f| f.events).sum();
    let first = many.iter().map(|f| f.first_at).min();
    let last = many.iter().map(|f| f.last_at).max();
    let aggregate = match (first, last) {
        (Some(first), Some(last)) => delivered as f64 / last.duration_since(first).as_secs_f64(),
        _ => f64::NAN,
    };
    let median = |d: &[Duration]| Summary::of_millis(d).map_or(f64::NAN, |s| s.p50);
    let slowdown = (median(&stalled) / median(&alone) - 1.0) * 100.0;
    let extra_cpu = (median(&stalled_cpu) - median(&alone_cpu)) / STALLED as f64;
    let n = s.subscribers;

    let mut outcome = Outcome::default();
    outcome.figures.push(
        Figure::new(
            "events/s to one subscriber",
            "events/s",
            format!(
                "a busy turn of {one_events} events (model text deltas) followed live by one \
                 SubscribeSession stream: events received ÷ time from the first to the last; \
                 one sample per turn"
            ),
        )
        .samples(Summary::of(&one_rates))
        .against(Floor::Stream)
        .ratio_target(Statistic::P50, Bound::AtLeast, ONE_LIMIT),
    );
    outcome.figures.push(
        Figure::new(
            &format!("subscribers with every event, of {n}"),
            "subscribers",
            format!(
                "{n} subscribers (over {CONNECTIONS} connections) on one busy session: those \
                 that received all {} events of the log, in order, none twice",
                many_run.status.last_sequence
            ),
        )
        .value(complete as f64)
        .target(Statistic::Value, Bound::AtLeast, n as f64),
    );
    outcome.figures.push(
        Figure::new(
            &format!("events/s to {n} subscribers"),
            "events/s",
            "events received by all of them ÷ time from the first event any got to the last",
        )
        .value(aggregate)
        .against(Floor::Stream),
    );
    outcome.figures.push(
        Figure::new(
            &format!("turn time with {n} subscribers"),
            "ms",
            "Run's wall time of that turn",
        )
        .value(many_run.wall.as_secs_f64() * 1e3),
    );
    outcome.figures.push(
        Figure::new(
            "extra daemon CPU per stalled stream ÷ the turn's",
            "ratio",
            format!(
                "(p50 of odysseyd's CPU time over a busy turn with {STALLED} subscribers that \
                 never read, each on its own connection − p50 of the same with none) ÷ \
                 {STALLED} ÷ p50 of the turn's CPU time with none; runs interleaved"
            ),
        )
        .value(extra_cpu / median(&alone_cpu))
        .target(Statistic::Value, Bound::AtMost, STALL_CPU_LIMIT),
    );
    outcome.figures.push(
        Figure::new(
            "extra daemon CPU per stalled stream",
            "ms",
            "the same difference of CPU time ÷ the stalled streams, in ms",
        )
        .value(extra_cpu),
    );
    outcome.figures.push(
        Figure::new(
            &format!("turn slowdown from {STALLED} stalled subscribers"),
            "%",
            format!(
                "p50 of Run's wall time of the busy turn with {STALLED} subscribers that never \
                 read, against p50 of the same turn with none: wall time, which moves with \
                 the machine's other work (two cores)"
            ),
        )
        .value(slowdown),
    );
    outcome.figures.push(
        Figure::new("busy turn, no subscriber", "ms", "Run's wall time")
            .samples(Summary::of_millis(&alone)),
    );
    outcome.figures.push(
        Figure::new(
            &format!("busy turn, {STALLED} stalled subscribers"),
            "ms",
            "Run's wall time",
        )
        .samples(Summary::of_millis(&stalled)),
    );
    outcome.figures.push(
        Figure::new(
            "daemon CPU, busy turn, no subscriber",
            "ms",
            "CPU time odysseyd's threads used during the turn",
        )
        .samples(Summary::of_millis(&alone_cpu)),
    );
    outcome.figures.push(
        Figure::new(
            &format!("daemon CPU, busy turn, {STALLED} stalled subscribers"),
            "ms",
            "the same with the stalled subscribers",
        )
        .samples(Summary::of_millis(&stalled_cpu)),
    );
    outcome.notes.push(
        "A stalled subscriber is not free: its client's HTTP/2 flow-control window (2 MiB \
         per stream for the Rust client) is filled before the server's sends block, so the \
         daemon spends the CPU time of delivering that many events (the extra daemon CPU \
         per stalled stream). From then on the subscriber costs nothing: its cursor waits in the \
         log. On two cores that extra CPU time shows in the turn's wall time only as far as \
         both cores are busy."
            .to_owned(),
    );
    let produced: Vec<f64> = alone
        .iter()
        .map(|wall| one_events as f64 / wall.as_secs_f64())
        .collect();
    outcome.figures.push(
        Figure::new(
            "events/s produced by a busy turn",
            "events/s",
            "the turn's events ÷ Run's wall time with no subscriber: the most a live \
             subscriber can receive",
        )
        .samples(Summary::of(&produced))
        .against(Floor::Stream),
    );
    Ok(outcome)
}

async fn joined(reader: tokio::task::JoinHandle<Result<Followed>>) -> Result<Followed> {
    reader
        .await
        .map_err(|e| BenchError::check(format!("a subscriber's task failed: {e}")))?
}

/// Fails unless a subscriber got every event of the turn's session, in order.
fn check_all(followed: &Followed, last_sequence: u64) -> Result<()> {
    if followed.in_order && followed.events == last_sequence {
        return Ok(());
    }
    Err(BenchError::check(format!(
        "the subscriber got {} events (in order: {}), the log holds {last_sequence}",
        followed.events, followed.in_order
    )))
}
