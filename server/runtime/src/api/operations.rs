//! The runtime seen from operations: its metrics for a Prometheus registry, and the
//! observer that counts every session's events and hands them to the event hooks.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use uuid::Uuid;

use super::OdysseyRuntime;
use crate::event_hooks::EventHooks;
use crate::events::Event;
use crate::execution::{ExecutionState, ExecutionStatus, ExecutionTable};
use crate::metrics::{self, Metrics};
use crate::session::{ClosedTurn, EventObserver};

/// How long event hooks may go on delivering queued events when the runtime stops.
pub(super) const HOOK_GRACE: Duration = Duration::from_secs(2);

impl OdysseyRuntime {
    /// Every runtime metric, counters and live gauges, for a `prometheus-client`
    /// registry (`Registry::register_collector`). Reading it costs a few locks per
    /// scrape, nothing per event.
    pub fn metrics_collector(&self) -> RuntimeCollector {
        RuntimeCollector {
            runtime: self.clone(),
        }
    }

    /// The runtime's counters.
    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }
}

/// See [`OdysseyRuntime::metrics_collector`].
pub struct RuntimeCollector {
    runtime: OdysseyRuntime,
}

impl fmt::Debug for RuntimeCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuntimeCollector").finish_non_exhaustive()
    }
}

impl Collector for RuntimeCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let inner = &self.runtime.inner;
        let config = &inner.config;
        let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        metrics::info(
            &mut encoder,
            "odyssey_build",
            "The server's version.",
            [("version", env!("CARGO_PKG_VERSION"))],
        )?;
        metrics::gauge(
            &mut encoder,
            "odyssey_queue_depth",
            "Turns waiting for a worker.",
            count(inner.queue.queued()),
        )?;
        metrics::gauge(
            &mut encoder,
            "odyssey_queue_capacity",
            "Turns that may wait for a worker before Submit is refused.",
            count(config.queue_capacity),
        )?;
        metrics::gauge(
            &mut encoder,
            "odyssey_workers",
            "Turns that may run at once.",
            count(config.worker_count),
        )?;
        metrics::gauge(
            &mut encoder,
            "odyssey_approvals_pending",
            "Tool calls waiting for a human decision.",
            count(inner.approvals.pending_count()),
        )?;
        let activity = self.runtime.activity();
        metrics::gauge(
            &mut encoder,
            "odyssey_runtime_tasks",
            "Tasks alive on the server's async runtime (connections, streams, turns, timers).",
            count(activity.tasks),
        )?;
        metrics::gauge(
            &mut encoder,
            "odyssey_sessions_open",
            "Sessions held open in memory.",
            count(activity.open_sessions),
        )?;
        metrics::gauge(
            &mut encoder,
            "odyssey_subscriptions",
            "Live event subscriptions (SubscribeSession and gateway event streams).",
            count(activity.subscriptions),
        )?;
        inner.metrics.encode(&mut encoder)?;
        inner.event_hooks.encode(&mut encoder)
    }
}

/// What sessions tell the runtime about their events.
struct RuntimeObserver {
    metrics: Arc<Metrics>,
    hooks: Arc<EventHooks>,
    executions: Arc<ExecutionTable>,
}

pub(super) fn observer(
    metrics: &Arc<Metrics>,
    hooks: &Arc<EventHooks>,
    executions: &Arc<ExecutionTable>,
) -> Arc<dyn EventObserver> {
    Arc::new(RuntimeObserver {
        metrics: metrics.clone(),
        hooks: hooks.clone(),
        executions: executions.clone(),
    })
}

impl EventObserver for RuntimeObserver {
    fn appended(&self, event: &Event) {
        self.metrics.event_appended(event);
    }

    fn follows_published(&self) -> bool {
        !self.hooks.is_empty()
    }

    fn published(&self, event: &Arc<Event>) {
        self.hooks.dispatch(event);
    }

    fn missed(&self, count: u64) {
        self.hooks.missed(count);
    }

    /// A turn a crash left open (or whose end could not be written) is answerable by
    /// GetExecutionStatus from now on, as its log records it.
    fn turn_closed(&self, session_id: Uuid, turn: &ClosedTurn) {
        self.executions.record_closed(ExecutionStatus {
            execution_id: turn.turn_id,
            session_id,
            state: ExecutionState::from_outcome(turn.outcome),
            response: String::new(),
            error: turn.error.clone(),
            usage: turn.usage,
            first_sequence: turn.first_sequence,
            last_sequence: turn.last_sequence,
        });
    }
}
