//! Sandboxed processes: how many ran and how long they took, by sandbox mode and by how
//! they ended. Exit codes are folded into success / failure: the code itself is the
//! event log's business, and as a label it would multiply the series.

use std::fmt;
use std::time::Duration;

use prometheus_client::encoding::DescriptorEncoder;

use super::encode;
use super::histogram::Histogram;
use crate::policy::SandboxMode;
use crate::sandbox::{ExecOutcome, SandboxError};

const MODES: [SandboxMode; 3] = [
    SandboxMode::ReadOnly,
    SandboxMode::WorkspaceWrite,
    SandboxMode::DangerFullAccess,
];

/// How a sandboxed process ended, as a label.
const OUTCOMES: [&str; 5] = ["success", "failure", "timeout", "cancelled", "not_started"];

fn mode_index(mode: SandboxMode) -> usize {
    match mode {
        SandboxMode::ReadOnly => 0,
        SandboxMode::WorkspaceWrite => 1,
        SandboxMode::DangerFullAccess => 2,
    }
}

/// The position in [`OUTCOMES`] of a run's result.
fn outcome_index(result: &Result<ExecOutcome, SandboxError>) -> usize {
    match result {
        Err(_) => 4,
        Ok(outcome) if outcome.cancelled => 3,
        Ok(outcome) if outcome.timed_out => 2,
        Ok(outcome) if outcome.exit_code == 0 => 0,
        Ok(_) => 1,
    }
}

#[derive(Debug)]
pub struct SandboxMetrics {
    /// By mode, then by outcome.
    executions: [[Histogram; 5]; 3],
}

impl Default for SandboxMetrics {
    fn default() -> Self {
        Self {
            executions: std::array::from_fn(|_| std::array::from_fn(|_| Histogram::seconds())),
        }
    }
}

impl SandboxMetrics {
    pub fn record(
        &self,
        mode: SandboxMode,
        result: &Result<ExecOutcome, SandboxError>,
        elapsed: Duration,
    ) {
        self.executions[mode_index(mode)][outcome_index(result)].observe(elapsed);
    }

    fn rows(&self) -> impl Iterator<Item = ([(&'static str, &'static str); 2], &Histogram)> {
        MODES.into_iter().flat_map(move |mode| {
            OUTCOMES.iter().enumerate().map(move |(at, outcome)| {
                (
                    [("mode", mode.as_str()), ("outcome", *outcome)],
                    &self.executions[mode_index(mode)][at],
                )
            })
        })
    }

    pub fn encode(&self, encoder: &mut DescriptorEncoder) -> fmt::Result {
        encode::counters(
            encoder,
            "odyssey_sandbox_executions",
            "Processes run in the sandbox (tool commands), by sandbox mode and outcome: \
             success (exit 0), failure (other exit or signal), timeout, cancelled, not_started.",
            self.rows().map(|(labels, h)| (labels, h.count())),
        )?;
        encode::histograms(
            encoder,
            "odyssey_sandbox_execution_duration_seconds",
            "Wall-clock time of sandboxed processes, by sandbox mode and outcome.",
            self.rows()
                .filter(|(_, h)| h.count() > 0)
                .map(|(labels, h)| (labels, h.snapshot())),
        )
    }
}
