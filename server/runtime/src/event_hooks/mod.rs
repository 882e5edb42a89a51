//! Operator event hooks: programs and webhooks that receive every session event (or the
//! types they ask for) as JSON, to feed audit trails, dashboards or alerting.
//!
//! Hooks are fail-open: they observe, they never decide. Each hook has its own bounded
//! queue and its own task; handing an event to a hook is a non-blocking `try_send`, so a
//! slow, failing or hanging hook never delays a turn or the event log. A hook that falls
//! behind loses the events that do not fit its queue (counted in
//! `odyssey_event_hook_events_total{outcome="dropped"}`); failures are counted by kind
//! and logged at most once per window per hook.
//!
//! Each event is encoded by the runtime's [`EventEncoder`]: a server installs the API's
//! public JSON form (the proto3 JSON of SubscribeSession's message), and an embedded
//! runtime without one sends its own serde form. Events carry no secrets, and hooks get
//! nothing else —
//! a command runs with an empty environment but `PATH`, `LANG` and `TZ`, and a webhook
//! request carries no credentials. Within a session, a hook sees events in sequence
//! order, each once it is published to subscribers.

mod command;
mod config;
mod delivery;
mod encoder;
mod throttle;
mod webhook;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus_client::encoding::DescriptorEncoder;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use config::{EventHookConfig, HookTarget, check_all};
pub use delivery::{DeliveryError, RetryPolicy, RetryingWebhook};
pub use encoder::{EncodeEvent, EventEncoder};

use self::throttle::Throttle;
use crate::events::Event;
use crate::metrics;

/// At most one log line per hook and concern in this window.
const LOG_EVERY: Duration = Duration::from_secs(30);

/// Why a delivery (or a hook's process) failed, as the `kind` label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Failure {
    /// The command could not be started.
    Start,
    /// The command exited with a failure status (or was killed by a signal).
    Exit,
    /// A delivery took longer than the hook's timeout.
    Timeout,
    /// Writing to the command's stdin failed.
    Write,
    /// The webhook answered with a status other than 2xx.
    Status,
    /// The webhook request failed (connection refused, TLS, reset).
    Request,
}

const FAILURES: [Failure; 6] = [
    Failure::Start,
    Failure::Exit,
    Failure::Timeout,
    Failure::Write,
    Failure::Status,
    Failure::Request,
];

impl Failure {
    fn label(self) -> &'static str {
        match self {
            Self::Start => "start",
            Self::Exit => "exit",
            Self::Timeout => "timeout",
            Self::Write => "write",
            Self::Status => "status",
            Self::Request => "request",
        }
    }

    fn index(self) -> usize {
        FAILURES.iter().position(|f| *f == self).unwrap_or(0)
    }
}

/// One hook's counters, shared by the dispatcher and the hook's task.
struct HookStats {
    name: String,
    delivered: AtomicU64,
    failed: AtomicU64,
    dropped: AtomicU64,
    errors: [AtomicU64; FAILURES.len()],
    failure_log: Throttle,
    drop_log: Throttle,
}

impl HookStats {
    fn new(name: String) -> Self {
        Self {
            name,
            delivered: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            errors: Default::default(),
            failure_log: Throttle::new(LOG_EVERY),
            drop_log: Throttle::new(LOG_EVERY),
        }
    }

    fn delivered(&self, count: u64) {
        self.delivered.fetch_add(count, Ordering::Relaxed);
    }

    /// Events that did not reach the hook (their failure, if any, is counted apart).
    fn events_failed(&self, count: u64) {
        self.failed.fetch_add(count, Ordering::Relaxed);
    }

    /// Counts a failure and logs it, rate-limited. `detail` never holds event content.
    fn error(&self, failure: Failure, detail: &dyn fmt::Display) {
        self.errors[failure.index()].fetch_add(1, Ordering::Relaxed);
        if let Some(held_back) = self.failure_log.allow() {
            tracing::warn!(
                hook = %self.name,
                kind = failure.label(),
                not_logged_since = held_back,
                "event hook failed: {detail}; turns go on without it"
            );
        }
    }

    fn dropped(&self, count: u64) {
        self.dropped.fetch_add(count, Ordering::Relaxed);
        if let Some(held_back) = self.drop_log.allow() {
            tracing::warn!(
                hook = %self.name,
                not_logged_since = held_back,
                "event hook is behind; events that do not fit its queue are dropped for it"
            );
        }
    }
}

/// Ends hooks' tasks: `stop` lets them deliver what is queued, `abort` ends them now.
#[derive(Clone, Default)]
struct Control {
    stop: CancellationToken,
    abort: CancellationToken,
}

struct Hook {
    /// Bit `i` set: receives events of type `TYPE_NAMES[i]`.
    mask: u32,
    capacity: usize,
    sender: mpsc::Sender<Arc<Event>>,
    stats: Arc<HookStats>,
}

/// The running hooks of a runtime.
pub struct EventHooks {
    hooks: Vec<Hook>,
    control: Control,
    tasks: TaskTracker,
}

impl fmt::Debug for EventHooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.hooks.iter().map(|h| &h.stats.name))
            .finish()
    }
}

impl EventHooks {
    /// No hooks.
    pub fn none() -> Self {
        Self {
            hooks: Vec::new(),
            control: Control::default(),
            tasks: TaskTracker::new(),
        }
    }

    /// Checks the configurations and starts one task per hook (a command starts with
    /// its first event), each delivering events as `encoder` writes them. Needs a tokio
    /// runtime.
    pub fn start(configs: &[EventHookConfig], encoder: &EventEncoder) -> Result<Self, String> {
        check_all(configs)?;
        let mut hooks = Self::none();
        let needs_client = configs
            .iter()
            .any(|c| matches!(c.target, HookTarget::Webhook { .. }));
        let client = needs_client.then(webhook::client).transpose()?;
        for config in configs {
            let (sender, receiver) = mpsc::channel(config.queue_capacity);
            let stats = Arc::new(HookStats::new(config.name.clone()));
            let control = hooks.control.clone();
            match (&config.target, &client) {
                (HookTarget::Command(argv), _) => {
                    let hook = command::CommandHook::new(
                        argv.clone(),
                        config.timeout,
                        encoder.clone(),
                        stats.clone(),
                    );
                    hooks.tasks.spawn(hook.run(receiver, control));
                }
                (HookTarget::Webhook { url, .. }, Some(client)) => {
                    let hook = webhook::Webhook::new(
                        client.clone(),
                        url.clone(),
                        config.timeout,
                        encoder.clone(),
                        stats.clone(),
                    );
                    hooks.tasks.spawn(hook.run(receiver, control));
                }
                (HookTarget::Webhook { .. }, None) => {}
            }
            tracing::info!(hook = %config.name, target = %describe(&config.target), "event hook ready");
            hooks.hooks.push(Hook {
                mask: config.type_mask(),
                capacity: config.queue_capacity,
                sender,
                stats,
            });
        }
        Ok(hooks)
    }

    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// Queues `event` for every hook that wants its type; never waits.
    pub fn dispatch(&self, event: &Arc<Event>) {
        let bit = 1u32 << event.payload.type_index();
        for hook in &self.hooks {
            if hook.mask & bit == 0 {
                continue;
            }
            if hook.sender.try_send(event.clone()).is_err() {
                hook.stats.dropped(1);
            }
        }
    }

    /// `count` events could not be handed over at all; every hook missed them.
    pub fn missed(&self, count: u64) {
        for hook in &self.hooks {
            hook.stats.dropped(count);
        }
    }

    /// Stops taking events, gives the hooks `grace` to deliver what is queued, then ends
    /// them (killing hook commands).
    pub async fn close(&self, grace: Duration) {
        self.control.stop.cancel();
        self.tasks.close();
        if tokio::time::timeout(grace, self.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("event hooks still delivering after the grace period; stopping them");
            self.control.abort.cancel();
            self.tasks.wait().await;
        }
    }

    /// The hooks' counters and queue depths.
    pub fn encode(&self, encoder: &mut DescriptorEncoder) -> fmt::Result {
        let stats = || self.hooks.iter().map(|h| h.stats.as_ref());
        metrics::counters(
            encoder,
            "odyssey_event_hook_events",
            "Events per event hook, by outcome: delivered, failed (the delivery failed), \
             dropped (the hook's queue was full).",
            stats().flat_map(|s| {
                [
                    ("delivered", &s.delivered),
                    ("failed", &s.failed),
                    ("dropped", &s.dropped),
                ]
                .map(|(outcome, n)| {
                    (
                        [("hook", s.name.as_str()), ("outcome", outcome)],
                        n.load(Ordering::Relaxed),
                    )
                })
            }),
        )?;
        metrics::counters(
            encoder,
            "odyssey_event_hook_errors",
            "Event hook failures, by hook and kind: start, exit, timeout, write, status, request.",
            stats().flat_map(|s| {
                FAILURES.map(|f| {
                    (
                        [("hook", s.name.as_str()), ("kind", f.label())],
                        s.errors[f.index()].load(Ordering::Relaxed),
                    )
                })
            }),
        )?;
        metrics::gauges(
            encoder,
            "odyssey_event_hook_queue_depth",
            "Events waiting for each event hook.",
            self.hooks.iter().map(|h| {
                let waiting = h.capacity.saturating_sub(h.sender.capacity());
                (
                    [("hook", h.stats.name.as_str())],
                    i64::try_from(waiting).unwrap_or(i64::MAX),
                )
            }),
        )
    }
}

/// A hook's target for the startup log: the program, or the webhook's scheme, host and
/// port (the path and query may hold a receiver's secret).
fn describe(target: &HookTarget) -> String {
    match target {
        HookTarget::Command(argv) => argv.first().cloned().unwrap_or_default(),
        HookTarget::Webhook { url, .. } => reqwest::Url::parse(url)
            .map(|u| u.origin().ascii_serialization())
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests;
