//! A running turn's worker slot. A turn that waits for a human gives its slot back, so
//! waiting turns never stop other sessions from running; when the wait ends it queues
//! for a slot as a semaphore waiter, which tokio serves before the dispatcher's
//! `try_acquire` — so it runs again ahead of newly queued turns.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub(crate) struct WorkerSlot {
    permit: Option<OwnedSemaphorePermit>,
    slots: Arc<Semaphore>,
    /// Starts queued turns in the freed slot.
    on_release: Box<dyn Fn() + Send + Sync>,
}

impl WorkerSlot {
    pub fn new(
        permit: OwnedSemaphorePermit,
        slots: Arc<Semaphore>,
        on_release: impl Fn() + Send + Sync + 'static,
    ) -> Self {
        Self {
            permit: Some(permit),
            slots,
            on_release: Box::new(on_release),
        }
    }

    /// Runs `wait` without holding the slot, then takes a slot again.
    pub async fn release_while<T>(&mut self, wait: impl Future<Output = T>) -> T {
        self.permit = None;
        (self.on_release)();
        let output = wait.await;
        // The semaphore is never closed, so acquiring only fails if it were; then the
        // turn goes on without a slot rather than stalling.
        self.permit = self.slots.clone().acquire_owned().await.ok();
        output
    }
}
