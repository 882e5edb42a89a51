//! Measures what metrics and event hooks add to appending an event: N deltas (default
//! 100,000) appended to one session's log with no observer, with the runtime's metrics,
//! and with the metrics and a command hook (`cat > /dev/null`) that receives every event.
//! Prints the time per append and what the hook received, delivered or dropped.
//!
//! Run it with `cargo run -p odyssey-server --release --example event_observers [N]`.

use std::error::Error;
use std::sync::Arc;
use std::time::{Duration, Instant};

use odyssey_runtime::event_hooks::{EventEncoder, EventHookConfig, EventHooks, HookTarget};
use odyssey_runtime::events::{Event, EventPayload};
use odyssey_runtime::metrics::Metrics;
use odyssey_runtime::model::ModelSpec;
use odyssey_runtime::session::{BundlePin, EventObserver, SessionRecord, SessionStore};
use odyssey_runtime::{ApprovalPolicy, SandboxMode};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::registry::Registry;
use uuid::Uuid;

/// Runs per case; the fastest counts (the others met a busier machine).
const ROUNDS: usize = 3;

/// What the runtime hands sessions: the metrics, and the hooks when there are any.
struct Observer {
    metrics: Metrics,
    hooks: Option<Arc<EventHooks>>,
}

impl EventObserver for Observer {
    fn appended(&self, event: &Event) {
        self.metrics.event_appended(event);
    }

    fn follows_published(&self) -> bool {
        self.hooks.is_some()
    }

    fn published(&self, event: &Arc<Event>) {
        if let Some(hooks) = &self.hooks {
            hooks.dispatch(event);
        }
    }

    fn missed(&self, count: u64) {
        if let Some(hooks) = &self.hooks {
            hooks.missed(count);
        }
    }
}

fn record() -> SessionRecord {
    SessionRecord {
        id: Uuid::now_v7(),
        bundle_reference: "bench".into(),
        bundle: BundlePin {
            namespace: "local".into(),
            name: "bench".into(),
            version: "0.1.0".into(),
            digest: "sha256:00".into(),
        },
        agent_id: "main".into(),
        model: ModelSpec::new("replay", "main"),
        sandbox_mode: SandboxMode::WorkspaceWrite,
        approval_policy: ApprovalPolicy::OnRequest,
        created_at_ms: 0,
        metadata: Default::default(),
        token_budget: None,
        forked: None,
        parent: None,
    }
}

/// Appends `count` deltas to a new session of a store seen by `observer`.
fn append(
    count: u64,
    observer: Option<Arc<dyn EventObserver>>,
) -> Result<Duration, Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    let mut store = SessionStore::open(dir.path().join("sessions"), dir.path().join("quarantine"))?;
    if let Some(observer) = observer {
        store = store.with_observer(observer);
    }
    let session = store.create(record())?;
    let started = Instant::now();
    for i in 0..count {
        session.append_now(
            None,
            EventPayload::AgentMessageDelta {
                delta: format!("piece {i} "),
            },
        )?;
    }
    Ok(started.elapsed())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let count: u64 = std::env::args()
        .nth(1)
        .map(|n| n.parse())
        .transpose()?
        .unwrap_or(100_000);
    let report = |case: &str, took: Duration| {
        println!(
            "{case:<28} {:>8.0} ns per append",
            took.as_nanos() as f64 / count as f64
        );
    };
    let best = |observer: &dyn Fn() -> Option<Arc<dyn EventObserver>>| {
        (0..ROUNDS)
            .map(|_| append(count, observer()))
            .try_fold(Duration::MAX, |best, took| took.map(|t| best.min(t)))
    };
    report("no observer", best(&|| None)?);
    report(
        "metrics",
        best(&|| {
            Some(Arc::new(Observer {
                metrics: Metrics::new(Vec::new()),
                hooks: None,
            }))
        })?,
    );
    let mut hook = EventHookConfig::new(
        "sink",
        HookTarget::Command(vec![
            "/bin/sh".into(),
            "-c".into(),
            "cat > /dev/null".into(),
        ]),
    );
    hook.queue_capacity = 4096;
    let hooks = Arc::new(EventHooks::start(&[hook], &EventEncoder::default())?);
    let with_hook = Arc::new(Observer {
        metrics: Metrics::new(Vec::new()),
        hooks: Some(hooks.clone()),
    });
    report(
        "metrics and a command hook",
        append(count, Some(with_hook))?,
    );
    hooks.close(Duration::from_secs(30)).await;
    let mut registry = Registry::default();
    registry.register_collector(Box::new(HookMetrics(hooks)));
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry)?;
    for line in text
        .lines()
        .filter(|l| l.starts_with("odyssey_event_hook_events_total"))
    {
        println!("  {line}");
    }
    Ok(())
}

/// The hook's counters, for printing.
#[derive(Debug)]
struct HookMetrics(Arc<EventHooks>);

impl Collector for HookMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
        self.0.encode(&mut encoder)
    }
}
