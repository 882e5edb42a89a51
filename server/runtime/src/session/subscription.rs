//! Following a session: its stored events first, then live ones, with no gap and no
//! duplicate, from the in-memory ring when the subscriber is close behind and from the log
//! file when it is further back.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::watch;

use super::handle::SessionHandle;
use super::log::LogReader;
use crate::error::{Result, RuntimeError};
use crate::events::Event;

/// Events handed to a subscriber per batch.
const BATCH: usize = 256;

/// A cursor over a session's events: stored ones first, then live ones as they are
/// appended, with no gap and no duplicate. Holds at most one batch in memory.
pub struct Subscription {
    pub(super) handle: Arc<SessionHandle>,
    pub(super) cursor: u64,
    pub(super) wake: watch::Receiver<u64>,
    pub(super) file: Option<LogReader>,
    pub(super) counted: Option<Counted>,
}

/// Keeps a subscription counted while it lives.
pub(super) struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Subscription {
    /// Counts this subscription in `live` for as long as it exists.
    pub(crate) fn counted_in(mut self, live: &Arc<AtomicUsize>) -> Self {
        live.fetch_add(1, Ordering::Relaxed);
        self.counted = Some(Counted(live.clone()));
        self
    }

    /// The sequence of the last event handed out.
    pub fn cursor(&self) -> u64 {
        self.cursor
    }

    pub fn session(&self) -> &Arc<SessionHandle> {
        &self.handle
    }

    /// The next events, waiting for new ones when caught up. `Ok(None)` when the session
    /// was deleted.
    pub async fn next_batch(&mut self) -> Result<Option<Vec<Arc<Event>>>> {
        loop {
            let last = *self.wake.borrow_and_update();
            if self.cursor < last {
                let batch = self.read_batch(last).await?;
                if !batch.is_empty() {
                    self.cursor = batch[batch.len() - 1].sequence;
                    return Ok(Some(batch));
                }
            }
            {
                let state = self.handle.lock();
                if state.lost.is_some() {
                    return Err(RuntimeError::SessionReloaded {
                        session_id: self.handle.id().to_string(),
                    });
                }
                if state.deleted {
                    return Ok(None);
                }
            }
            if self.wake.changed().await.is_err() {
                return Ok(None);
            }
        }
    }

    /// Up to [`BATCH`] events after the cursor, none past `last` (the published end).
    async fn read_batch(&mut self, last: u64) -> Result<Vec<Arc<Event>>> {
        {
            let state = self.handle.lock();
            if state.deleted {
                return Ok(Vec::new());
            }
            let in_ring = state
                .recent
                .front()
                .is_some_and(|first| first.sequence <= self.cursor + 1);
            if in_ring {
                self.file = None;
                let skip = (self.cursor + 1 - state.recent[0].sequence) as usize;
                return Ok(state
                    .recent
                    .iter()
                    .skip(skip)
                    .take_while(|e| e.sequence <= last)
                    .take(BATCH)
                    .cloned()
                    .collect());
            }
            if self.file.is_none() {
                self.file = Some(
                    state
                        .log
                        .reader_after(self.cursor)
                        .map_err(RuntimeError::from)?,
                );
            }
        }
        // Behind the ring: read the log file, off the async threads.
        let Some(mut reader) = self.file.take() else {
            return Ok(Vec::new());
        };
        let (reader, batch) = tokio::task::spawn_blocking(move || {
            let mut batch = Vec::with_capacity(BATCH);
            while batch.len() < BATCH {
                match reader.next_event() {
                    Ok(Some(event)) if event.sequence > last => return (None, Ok(batch)),
                    Ok(Some(event)) => batch.push(Arc::new(event)),
                    Ok(None) => return (None, Ok(batch)),
                    Err(e) => return (None, Err(e)),
                }
            }
            (Some(reader), Ok(batch))
        })
        .await
        .map_err(|e| RuntimeError::storage("read log", std::io::Error::other(e)))?;
        self.file = reader;
        batch.map_err(RuntimeError::from)
    }
}
