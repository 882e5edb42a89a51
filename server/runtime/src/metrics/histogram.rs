//! A latency histogram made of atomics: observing is a bucket search over a short
//! constant list and two `fetch_add`s, with no lock and no allocation, so it can sit on
//! any path. A scrape reads the buckets one by one; an observation racing with it may
//! show in the sum before its bucket, which Prometheus tolerates.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds, in seconds, shared by every duration this server measures: from a
/// millisecond (a unary RPC, a `true` in the sandbox) to half an hour (a long turn or an
/// event stream), roughly ×2.5 apart.
pub const SECONDS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
    120.0, 300.0, 600.0, 1800.0,
];

pub struct Histogram {
    bounds: &'static [f64],
    /// Observations per bucket (not cumulative): one per bound, then `+Inf`.
    counts: Box<[AtomicU64]>,
    sum_nanos: AtomicU64,
}

/// A histogram as read at one scrape.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    pub sum_seconds: f64,
    pub count: u64,
    /// `(upper bound, observations in this bucket)`, not cumulative, ending with `+Inf`.
    pub buckets: Vec<(f64, u64)>,
}

impl Histogram {
    pub fn new(bounds: &'static [f64]) -> Self {
        Self {
            bounds,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_nanos: AtomicU64::new(0),
        }
    }

    /// With the shared [`SECONDS`] buckets.
    pub fn seconds() -> Self {
        Self::new(SECONDS)
    }

    pub fn observe(&self, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        let bucket = self
            .bounds
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(self.bounds.len());
        self.counts[bucket].fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// Observations so far.
    pub fn count(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    pub fn snapshot(&self) -> Snapshot {
        let buckets: Vec<(f64, u64)> = self
            .bounds
            .iter()
            .copied()
            .chain(std::iter::once(f64::INFINITY))
            .zip(self.counts.iter().map(|c| c.load(Ordering::Relaxed)))
            .collect();
        Snapshot {
            sum_seconds: self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9,
            count: buckets.iter().map(|(_, n)| n).sum(),
            buckets,
        }
    }
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram")
            .field("count", &self.count())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_land_in_the_first_bucket_that_holds_them() {
        let h = Histogram::new(&[0.01, 0.1, 1.0]);
        h.observe(Duration::from_millis(10));
        h.observe(Duration::from_millis(50));
        h.observe(Duration::from_millis(50));
        h.observe(Duration::from_secs(5));
        let snapshot = h.snapshot();
        assert_eq!(
            snapshot.buckets,
            vec![(0.01, 1), (0.1, 2), (1.0, 0), (f64::INFINITY, 1)]
        );
        assert_eq!(snapshot.count, 4);
        assert!((snapshot.sum_seconds - 5.11).abs() < 1e-9, "{snapshot:?}");
        assert_eq!(h.count(), 4);
    }
}
