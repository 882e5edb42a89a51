//! A running turn's worker slot. A turn that waits for a human gives its slot back, so
//! waiting turns never stop other sessions from running; when the wait ends it queues
//! for a slot as a semaphore waiter, which tokio serves before the dispatcher's
//! `try_acquire` — so it runs again ahead of newly queued turns.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

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

    /// Runs `work` holding the slot except while `waits` counts a wait for a person (a
    /// tool call's request for input): the slot is given back when one starts and taken
    /// again when the last ends, the work going on meanwhile.
    pub async fn release_while_waiting<T>(
        &mut self,
        work: impl Future<Output = T>,
        mut waits: watch::Receiver<usize>,
    ) -> T {
        tokio::pin!(work);
        loop {
            let waiting = *waits.borrow_and_update() > 0;
            if waiting && self.permit.is_some() {
                self.permit = None;
                (self.on_release)();
            }
            let slots = self.slots.clone();
            let reacquire = async move {
                if waiting {
                    std::future::pending().await
                } else {
                    slots.acquire_owned().await.ok()
                }
            };
            let holding = self.permit.is_some();
            tokio::select! {
                output = &mut work => {
                    if self.permit.is_none() {
                        self.permit = self.slots.clone().acquire_owned().await.ok();
                    }
                    return output;
                }
                changed = waits.changed() => {
                    if changed.is_err() {
                        // Nobody can start a wait any more: finish the work, then hold
                        // the slot again.
                        let output = work.await;
                        if self.permit.is_none() {
                            self.permit = self.slots.clone().acquire_owned().await.ok();
                        }
                        return output;
                    }
                }
                permit = reacquire, if !holding => self.permit = permit,
            }
        }
    }
}
