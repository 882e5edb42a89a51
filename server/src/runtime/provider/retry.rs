//! When to try a model call again, and how long to wait first.
//!
//! Only the start of a call is ever retried (see the HTTP providers): once a delta reached
//! the caller, a second attempt would replay half an answer.

use std::time::Duration;

use rand::Rng;

/// First backoff step; doubled per retry, capped by the policy's maximum.
const BASE_DELAY: Duration = Duration::from_millis(500);

/// Bounded exponential backoff with jitter.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// No single wait is longer than this; a provider asking for more is not retried.
    pub max_delay: Duration,
}

/// What to do after a failed attempt.
#[derive(Debug, PartialEq)]
pub(crate) enum RetryDecision {
    Wait(Duration),
    GiveUp,
}

impl RetryPolicy {
    /// `retry` counts from 0 (the wait before the second attempt). `retry_after` is the
    /// provider's own request; it wins over backoff because it knows its rate limits.
    pub fn decide(&self, retry: u32, retry_after: Option<Duration>) -> RetryDecision {
        if retry >= self.max_retries {
            return RetryDecision::GiveUp;
        }
        match retry_after {
            Some(wait) if wait > self.max_delay => RetryDecision::GiveUp,
            Some(wait) => RetryDecision::Wait(wait),
            None => RetryDecision::Wait(self.backoff(retry)),
        }
    }

    /// Exponential step, capped, then scaled into [50%, 100%] so clients that failed
    /// together do not retry together.
    fn backoff(&self, retry: u32) -> Duration {
        let step = BASE_DELAY.saturating_mul(2u32.saturating_pow(retry.min(16)));
        let capped = step.min(self.max_delay);
        capped.mul_f64(rand::rng().random_range(0.5..=1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_is_bounded_and_gives_up() {
        let policy = RetryPolicy {
            max_retries: 3,
            max_delay: Duration::from_secs(1),
        };
        for retry in 0..3 {
            match policy.decide(retry, None) {
                RetryDecision::Wait(d) => assert!(d <= Duration::from_secs(1), "{d:?}"),
                RetryDecision::GiveUp => panic!("gave up at retry {retry}"),
            }
        }
        assert_eq!(policy.decide(3, None), RetryDecision::GiveUp);
    }

    #[test]
    fn retry_after_is_honoured_within_the_bound() {
        let policy = RetryPolicy {
            max_retries: 3,
            max_delay: Duration::from_secs(8),
        };
        let two = Duration::from_secs(2);
        assert_eq!(policy.decide(0, Some(two)), RetryDecision::Wait(two));
        assert_eq!(
            policy.decide(0, Some(Duration::from_secs(60))),
            RetryDecision::GiveUp
        );
    }
}
