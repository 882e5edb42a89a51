//! Rate-limited logging: a hook that fails on every event must not turn the server log
//! into a copy of its event stream. At most one line per window per hook and concern;
//! the next line that gets through says how many were held back.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub struct Throttle {
    every_ms: u64,
    origin: Instant,
    /// Milliseconds after `origin` before which nothing more is logged.
    next_ms: AtomicU64,
    suppressed: AtomicU64,
}

impl Throttle {
    pub fn new(every: Duration) -> Self {
        Self {
            every_ms: u64::try_from(every.as_millis()).unwrap_or(u64::MAX),
            origin: Instant::now(),
            next_ms: AtomicU64::new(0),
            suppressed: AtomicU64::new(0),
        }
    }

    /// `Some(lines held back since the last one)` when a line may be logged now.
    pub fn allow(&self) -> Option<u64> {
        let now = u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX);
        let next = self.next_ms.load(Ordering::Relaxed);
        let open = now >= next
            && self
                .next_ms
                .compare_exchange(
                    next,
                    now.saturating_add(self.every_ms),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok();
        if open {
            Some(self.suppressed.swap(0, Ordering::Relaxed))
        } else {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_window_then_the_count_of_held_back_ones() {
        let throttle = Throttle::new(Duration::from_secs(3600));
        assert_eq!(throttle.allow(), Some(0));
        assert_eq!(throttle.allow(), None);
        assert_eq!(throttle.allow(), None);
        // The window ends (as if an hour passed).
        throttle.next_ms.store(0, Ordering::Relaxed);
        assert_eq!(throttle.allow(), Some(2));
        let open = Throttle::new(Duration::ZERO);
        assert_eq!(open.allow(), Some(0));
        assert_eq!(open.allow(), Some(0));
    }
}
