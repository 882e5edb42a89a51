//! Turns: how many ended, by outcome; how long the ones that ran took; how many run now.

use std::fmt;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Instant;

use prometheus_client::encoding::DescriptorEncoder;

use super::encode;
use super::histogram::Histogram;
use crate::events::TurnOutcome;

const OUTCOMES: [TurnOutcome; 4] = [
    TurnOutcome::Completed,
    TurnOutcome::Failed,
    TurnOutcome::Cancelled,
    TurnOutcome::Interrupted,
];

fn index(outcome: TurnOutcome) -> usize {
    match outcome {
        TurnOutcome::Completed => 0,
        TurnOutcome::Failed => 1,
        TurnOutcome::Cancelled => 2,
        TurnOutcome::Interrupted => 3,
    }
}

fn name(outcome: TurnOutcome) -> &'static str {
    match outcome {
        TurnOutcome::Completed => "completed",
        TurnOutcome::Failed => "failed",
        TurnOutcome::Cancelled => "cancelled",
        TurnOutcome::Interrupted => "interrupted",
    }
}

#[derive(Debug)]
pub struct TurnMetrics {
    ended: [AtomicU64; 4],
    durations: [Histogram; 4],
    running: AtomicI64,
}

impl Default for TurnMetrics {
    fn default() -> Self {
        Self {
            ended: Default::default(),
            durations: std::array::from_fn(|_| Histogram::seconds()),
            running: AtomicI64::new(0),
        }
    }
}

impl TurnMetrics {
    /// A turn starts running; it counts as running until the guard is finished or
    /// dropped.
    pub fn begin(&self) -> RunningTurn<'_> {
        self.running.fetch_add(1, Ordering::Relaxed);
        RunningTurn {
            metrics: self,
            started: Instant::now(),
            outcome: None,
        }
    }

    /// A turn ended before it ran (cancelled in the queue, or the server stopping).
    pub fn ended_unstarted(&self, outcome: TurnOutcome) {
        self.ended[index(outcome)].fetch_add(1, Ordering::Relaxed);
    }

    pub fn running(&self) -> i64 {
        self.running.load(Ordering::Relaxed)
    }

    pub fn encode(&self, encoder: &mut DescriptorEncoder) -> fmt::Result {
        encode::counters(
            encoder,
            "odyssey_turns",
            "Turns ended, by outcome (including turns cancelled before they started).",
            OUTCOMES.map(|o| {
                (
                    [("outcome", name(o))],
                    self.ended[index(o)].load(Ordering::Relaxed),
                )
            }),
        )?;
        encode::histograms(
            encoder,
            "odyssey_turn_duration_seconds",
            "Wall-clock time of turns that ran, from start to their record, by outcome.",
            OUTCOMES
                .into_iter()
                .filter(|o| self.durations[index(*o)].count() > 0)
                .map(|o| ([("outcome", name(o))], self.durations[index(o)].snapshot())),
        )?;
        encode::gauge(
            encoder,
            "odyssey_turns_running",
            "Turns running now, including those waiting for an approval.",
            self.running(),
        )
    }
}

/// A running turn; see [`TurnMetrics::begin`].
pub struct RunningTurn<'a> {
    metrics: &'a TurnMetrics,
    started: Instant,
    outcome: Option<TurnOutcome>,
}

impl RunningTurn<'_> {
    pub fn finish(mut self, outcome: TurnOutcome) {
        self.outcome = Some(outcome);
    }
}

/// A turn that ends without saying how (it could not be recorded) counts as failed.
impl Drop for RunningTurn<'_> {
    fn drop(&mut self) {
        let at = index(self.outcome.unwrap_or(TurnOutcome::Failed));
        self.metrics.running.fetch_sub(1, Ordering::Relaxed);
        self.metrics.ended[at].fetch_add(1, Ordering::Relaxed);
        self.metrics.durations[at].observe(self.started.elapsed());
    }
}
