//! Console logins: random ids handed out as cookies, each honoured for a bounded time.
//! Kept in memory only: a restart logs everyone out, which is the safe way to fail.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// How long a login is honoured.
pub(crate) const LIFETIME: Duration = Duration::from_secs(12 * 3600);

/// The most logins kept at once; the oldest goes first.
const CAPACITY: usize = 1024;

/// The live logins. Cloning shares them.
#[derive(Clone, Default)]
pub(crate) struct Logins {
    live: Arc<Mutex<HashMap<String, Instant>>>,
}

impl Logins {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Instant>> {
        // Nothing under this lock panics halfway; a poisoned map is still a map.
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new login: 256 random bits from the operating system's generator, as hex.
    pub(crate) fn open(&self) -> String {
        let bytes: [u8; 32] = rand::random();
        let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let now = Instant::now();
        let mut live = self.lock();
        live.retain(|_, opened| now.duration_since(*opened) < LIFETIME);
        while live.len() >= CAPACITY {
            let Some(oldest) = live
                .iter()
                .min_by_key(|(_, opened)| **opened)
                .map(|(id, _)| id.clone())
            else {
                break;
            };
            live.remove(&oldest);
        }
        live.insert(id.clone(), now);
        id
    }

    pub(crate) fn is_live(&self, id: &str) -> bool {
        self.lock()
            .get(id)
            .is_some_and(|opened| opened.elapsed() < LIFETIME)
    }

    pub(crate) fn close(&self, id: &str) {
        self.lock().remove(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logins_are_random_live_until_closed_and_bounded() {
        let logins = Logins::default();
        let first = logins.open();
        let second = logins.open();
        assert_eq!(first.len(), 64);
        assert_ne!(first, second);
        assert!(logins.is_live(&first));
        assert!(!logins.is_live("not-a-login"));
        logins.close(&first);
        assert!(!logins.is_live(&first));
        for _ in 0..CAPACITY + 10 {
            logins.open();
        }
        assert!(logins.lock().len() <= CAPACITY);
    }
}
