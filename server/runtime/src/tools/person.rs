//! A tool call tells its turn while it waits for a person (an MCP server's request for
//! input), so the turn gives its worker slot back meanwhile, as it does while a call for
//! approval waits: a person's pace never holds a worker that other sessions could use.

use std::sync::Arc;

use tokio::sync::watch;

/// How many of one call's requests to a person wait now.
#[derive(Clone, Debug)]
pub struct PersonWaits(Arc<watch::Sender<usize>>);

impl Default for PersonWaits {
    fn default() -> Self {
        Self(Arc::new(watch::Sender::new(0)))
    }
}

impl PersonWaits {
    /// Marks a wait for a person, until the returned guard is dropped.
    pub fn begin(&self) -> PersonWait {
        self.0.send_modify(|n| *n += 1);
        PersonWait(self.0.clone())
    }

    /// Follows the count (the turn holds the slot only while it is zero).
    pub fn watch(&self) -> watch::Receiver<usize> {
        self.0.subscribe()
    }
}

/// One wait for a person; ends when dropped.
#[derive(Debug)]
pub struct PersonWait(Arc<watch::Sender<usize>>);

impl Drop for PersonWait {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}
