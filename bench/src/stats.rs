//! Percentiles of a set of samples.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Nearest-rank percentiles, mean and range of samples (in a figure's unit).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
}

impl Summary {
    /// `None` without samples.
    pub fn of(samples: &[f64]) -> Option<Self> {
        if samples.is_empty() {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let rank = |q: f64| {
            // Nearest rank: the smallest sample with at least q of all samples at or below it.
            let index = (q * sorted.len() as f64).ceil() as usize;
            sorted[index.clamp(1, sorted.len()) - 1]
        };
        Some(Self {
            n: sorted.len(),
            p50: rank(0.50),
            p95: rank(0.95),
            p99: rank(0.99),
            mean: sorted.iter().sum::<f64>() / sorted.len() as f64,
            min: sorted[0],
            max: sorted[sorted.len() - 1],
        })
    }

    /// Durations in milliseconds.
    pub fn of_millis(samples: &[Duration]) -> Option<Self> {
        let millis: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        Self::of(&millis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let samples: Vec<f64> = (1..=100).map(f64::from).collect();
        let s = Summary::of(&samples).expect("samples");
        assert_eq!((s.p50, s.p95, s.p99), (50.0, 95.0, 99.0));
        assert_eq!((s.min, s.max, s.mean), (1.0, 100.0, 50.5));
        let one = Summary::of(&[7.0]).expect("one sample");
        assert_eq!((one.p50, one.p99), (7.0, 7.0));
        assert!(Summary::of(&[]).is_none());
    }
}
