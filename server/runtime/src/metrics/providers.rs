//! Model calls by provider: how many, how long until the first piece of the answer, how
//! long in all, and why the failed ones failed. Providers are labelled by the names the
//! registry knows (built-in and the embedder's), never by model names clients send; a
//! turn's provider is looked up once, when the turn starts, so the stream itself only
//! touches atomics.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use futures::Stream;
use futures::stream::BoxStream;
use prometheus_client::encoding::DescriptorEncoder;

use super::encode;
use super::histogram::Histogram;
use crate::provider::{ModelDelta, ModelProvider, ModelRequest, ProviderError};

/// How a model call ended, as a label.
const OUTCOMES: [&str; 3] = ["ok", "error", "cancelled"];
const OK: usize = 0;
const ERROR: usize = 1;
const CANCELLED: usize = 2;

/// The label of calls to a provider the metrics were not told about.
const OTHER: &str = "other";

/// One provider's numbers.
#[derive(Debug)]
pub struct ProviderMetrics {
    name: String,
    /// By outcome.
    calls: [Histogram; 3],
    first_delta: Histogram,
    /// By error reason (`PROVIDER_TIMEOUT`, ...): a fixed set of static names, and errors
    /// are rare, so a small locked map is cheap enough.
    errors: Mutex<BTreeMap<&'static str, u64>>,
}

impl ProviderMetrics {
    fn new(name: String) -> Self {
        Self {
            name,
            calls: std::array::from_fn(|_| Histogram::seconds()),
            first_delta: Histogram::seconds(),
            errors: Mutex::new(BTreeMap::new()),
        }
    }

    fn error(&self, error: &ProviderError) {
        let mut errors = crate::sync::lock(&self.errors);
        *errors.entry(error.reason()).or_default() += 1;
    }
}

/// Every provider's numbers.
#[derive(Debug)]
pub struct ProviderCalls {
    by_name: HashMap<String, Arc<ProviderMetrics>>,
    other: Arc<ProviderMetrics>,
}

impl ProviderCalls {
    /// Slots for the providers in `names`; calls to any other count under `other`.
    pub fn new(names: impl IntoIterator<Item = String>) -> Self {
        Self {
            by_name: names
                .into_iter()
                .map(|name| (name.clone(), Arc::new(ProviderMetrics::new(name))))
                .collect(),
            other: Arc::new(ProviderMetrics::new(OTHER.to_owned())),
        }
    }

    /// `provider`'s calls, timed and counted under `name`.
    pub fn meter(&self, name: &str, provider: Arc<dyn ModelProvider>) -> Arc<dyn ModelProvider> {
        let metrics = self.by_name.get(name).unwrap_or(&self.other).clone();
        Arc::new(MeteredProvider {
            inner: provider,
            metrics,
        })
    }

    fn all(&self) -> Vec<&ProviderMetrics> {
        let mut all: Vec<&ProviderMetrics> = self.by_name.values().map(Arc::as_ref).collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all.push(&self.other);
        all
    }

    pub fn encode(&self, encoder: &mut DescriptorEncoder) -> fmt::Result {
        let all = self.all();
        let used: Vec<&ProviderMetrics> = all
            .iter()
            .copied()
            .filter(|p| p.calls.iter().any(|h| h.count() > 0))
            .collect();
        let rows = || {
            used.iter().flat_map(|p| {
                OUTCOMES
                    .iter()
                    .zip(&p.calls)
                    .map(|(outcome, h)| ([("provider", p.name.as_str()), ("outcome", *outcome)], h))
            })
        };
        encode::counters(
            encoder,
            "odyssey_provider_calls",
            "Model calls, by provider and outcome (ok, error, cancelled).",
            rows().map(|(labels, h)| (labels, h.count())),
        )?;
        encode::histograms(
            encoder,
            "odyssey_provider_call_duration_seconds",
            "Wall-clock time of model calls, from the request to the end of the answer.",
            rows()
                .filter(|(_, h)| h.count() > 0)
                .map(|(labels, h)| (labels, h.snapshot())),
        )?;
        encode::histograms(
            encoder,
            "odyssey_provider_first_delta_seconds",
            "Time from a model call's request to the first piece of its answer.",
            used.iter()
                .map(|p| ([("provider", p.name.as_str())], p.first_delta.snapshot())),
        )?;
        let errors: Vec<(&str, String, u64)> = used
            .iter()
            .flat_map(|p| {
                let errors = crate::sync::lock(&p.errors).clone();
                errors
                    .into_iter()
                    .map(|(reason, n)| (p.name.as_str(), reason.to_ascii_lowercase(), n))
            })
            .collect();
        encode::counters(
            encoder,
            "odyssey_provider_errors",
            "Failed model calls, by provider and error kind (provider_unavailable, \
             provider_timeout, provider_http_error, ...).",
            errors.iter().map(|(provider, kind, n)| {
                ([("provider", *provider), ("kind", kind.as_str())], *n)
            }),
        )
    }
}

/// A provider whose calls are timed and counted.
struct MeteredProvider {
    inner: Arc<dyn ModelProvider>,
    metrics: Arc<ProviderMetrics>,
}

impl ModelProvider for MeteredProvider {
    fn stream(
        &self,
        request: ModelRequest,
    ) -> BoxStream<'static, Result<ModelDelta, ProviderError>> {
        Box::pin(MeteredStream {
            inner: self.inner.stream(request),
            metrics: self.metrics.clone(),
            started: Instant::now(),
            first_seen: false,
            ended: false,
        })
    }
}

/// One call: timed from its creation to its end, an error, or being dropped (the turn
/// was cancelled or gave up on it).
struct MeteredStream {
    inner: BoxStream<'static, Result<ModelDelta, ProviderError>>,
    metrics: Arc<ProviderMetrics>,
    started: Instant,
    first_seen: bool,
    ended: bool,
}

impl MeteredStream {
    fn end(&mut self, outcome: usize) {
        if !self.ended {
            self.ended = true;
            self.metrics.calls[outcome].observe(self.started.elapsed());
        }
    }
}

impl Stream for MeteredStream {
    type Item = Result<ModelDelta, ProviderError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let item = self.inner.as_mut().poll_next(cx);
        match &item {
            Poll::Ready(Some(Ok(_))) if !self.first_seen => {
                self.first_seen = true;
                self.metrics.first_delta.observe(self.started.elapsed());
            }
            Poll::Ready(Some(Err(error))) if !self.ended => {
                self.metrics.error(error);
                self.end(ERROR);
            }
            Poll::Ready(None) => self.end(OK),
            _ => {}
        }
        item
    }
}

impl Drop for MeteredStream {
    fn drop(&mut self) {
        self.end(CANCELLED);
    }
}
