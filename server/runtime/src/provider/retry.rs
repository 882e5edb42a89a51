//! When to try a model call again, and how long to wait first.
//!
//! Only the start of a call is ever retried (see the HTTP providers): once a delta reached
//! the caller, a second attempt would replay half an answer.

use std::time::{Duration, SystemTime};

use rand::Rng;
use reqwest::header::HeaderMap;

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

/// The wait a provider asked for in its response headers: OpenAI's `retry-after-ms`, else
/// the standard `Retry-After`, either in seconds or as an HTTP-date (RFC 9110, section
/// 10.2.3), which some gateways in front of providers send. A date already past means
/// "now".
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    retry_after_at(headers, SystemTime::now())
}

fn retry_after_at(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name: &str| Some(headers.get(name)?.to_str().ok()?.trim());
    // Bounded so a hostile value cannot overflow `Duration`; anything this long is
    // refused by the retry policy anyway.
    let seconds = |value: f64| {
        (value.is_finite() && value >= 0.0).then(|| Duration::from_secs_f64(value.min(1e9)))
    };
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return seconds(ms / 1000.0);
    }
    let value = header("retry-after")?;
    match value.parse::<f64>() {
        Ok(number) => seconds(number),
        Err(_) => {
            let at = httpdate::parse_http_date(value).ok()?;
            Some(at.duration_since(now).unwrap_or(Duration::ZERO))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn retry_after_in_seconds_milliseconds_and_http_dates() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(150)));

        headers.clear();
        headers.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        let date = httpdate::parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT").expect("date");
        let before = date - Duration::from_secs(3);
        assert_eq!(
            retry_after_at(&headers, before),
            Some(Duration::from_secs(3))
        );
        // Already past: retry now.
        assert_eq!(retry_after(&headers), Some(Duration::ZERO));
        // The obsolete RFC 850 form is accepted too, as HTTP requires of recipients.
        headers.insert(
            "retry-after",
            HeaderValue::from_static("Wednesday, 21-Oct-15 07:28:00 GMT"),
        );
        assert_eq!(
            retry_after_at(&headers, before),
            Some(Duration::from_secs(3))
        );

        headers.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", HeaderValue::from_static("-4"));
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", HeaderValue::from_static("1e300"));
        assert!(
            retry_after(&headers).is_some(),
            "huge values are clamped, not a panic"
        );
    }

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
