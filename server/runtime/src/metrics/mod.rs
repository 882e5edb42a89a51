//! The runtime's numbers for operators: turns, sandboxed processes, model calls and
//! events appended. Hot paths touch only atomics (an event appended is one `fetch_add`),
//! and every label takes its values from a fixed, small set: no session ids, prompts,
//! model names or anything else a client chooses, so a scrape stays the same size however
//! long the server runs and whatever clients send.
//!
//! [`crate::OdysseyRuntime::metrics_collector`] encodes these together with the
//! live gauges (queue depth, pending approvals, event hooks) in the Prometheus format;
//! `crate::http::metrics` serves the text.

mod encode;
mod histogram;
mod providers;
mod sandbox;
mod turns;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use prometheus_client::encoding::DescriptorEncoder;

pub use encode::{Labels, counters, gauge, gauges, histograms, info};
pub use histogram::{Histogram, SECONDS, Snapshot};
pub use providers::{ProviderCalls, ProviderMetrics};
pub use sandbox::SandboxMetrics;
pub use turns::{RunningTurn, TurnMetrics};

use crate::events::{Event, EventPayload};

/// Every counter the runtime core keeps.
#[derive(Debug)]
pub struct Metrics {
    pub turns: TurnMetrics,
    pub providers: ProviderCalls,
    /// Shared with the sandbox, which records every process it runs.
    pub sandbox: std::sync::Arc<SandboxMetrics>,
    /// By [`EventPayload::type_index`].
    events: [AtomicU64; EventPayload::TYPE_NAMES.len()],
}

impl Metrics {
    /// Counters for a runtime whose registry knows the `providers` named.
    pub fn new(providers: impl IntoIterator<Item = String>) -> Self {
        Self {
            turns: TurnMetrics::default(),
            providers: ProviderCalls::new(providers),
            sandbox: Default::default(),
            events: Default::default(),
        }
    }

    /// An event was written to a session's log.
    pub fn event_appended(&self, event: &Event) {
        self.events[event.payload.type_index()].fetch_add(1, Ordering::Relaxed);
    }

    /// Writes every counter family.
    pub fn encode(&self, encoder: &mut DescriptorEncoder) -> fmt::Result {
        self.turns.encode(encoder)?;
        self.providers.encode(encoder)?;
        self.sandbox.encode(encoder)?;
        encode::counters(
            encoder,
            "odyssey_events_appended",
            "Events written to session logs, by event type.",
            EventPayload::TYPE_NAMES
                .iter()
                .zip(&self.events)
                .map(|(name, n)| ([("type", *name)], n.load(Ordering::Relaxed))),
        )
    }
}
