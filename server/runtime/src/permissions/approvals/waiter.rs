//! The future a turn awaits for its request, and the timeout that ends a request nobody
//! answers.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::{ApprovalStore, Resolution};
use crate::events::ApprovalResolution;

/// Resolves when the request does. Dropping it before then cancels the request (nobody is
/// waiting for the answer any more).
pub struct ApprovalWaiter {
    inner: BoxFuture<'static, Resolution>,
}

impl Future for ApprovalWaiter {
    type Output = Resolution;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Resolution> {
        self.inner.as_mut().poll(cx)
    }
}

impl std::fmt::Debug for ApprovalWaiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApprovalWaiter")
    }
}

/// When a request filed now times out. A timeout too large for the clock means "never"
/// in practice: a century from now.
pub(super) fn deadline_after(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout)
        .or_else(|| now.checked_add(Duration::from_secs(100 * 365 * 24 * 3600)))
        .unwrap_or(now)
}

/// The waiter of one request: the human's resolution, or the timeout's.
pub(super) fn wait(
    store: ApprovalStore,
    request_id: String,
    receiver: oneshot::Receiver<Resolution>,
    deadline: Instant,
) -> ApprovalWaiter {
    let guard = AbandonGuard {
        store: store.clone(),
        request_id,
        armed: true,
    };
    let timeout = store.timeout();
    let waiter = async move {
        let mut guard = guard;
        let mut receiver = receiver;
        let resolution = tokio::select! {
            resolved = &mut receiver => resolved.ok(),
            () = tokio::time::sleep_until(deadline) => None,
        };
        let resolution = match resolution {
            Some(resolution) => resolution,
            None => {
                // Timed out (or the store dropped the sender); a human may have raced
                // the timer, in which case theirs is the answer.
                let ended = Resolution::ended(
                    ApprovalResolution::TimedOut,
                    format!("no decision within {}; denied", describe_duration(timeout)),
                );
                guard
                    .store
                    .finish(&guard.request_id, ended.clone())
                    .or_else(|| receiver.try_recv().ok())
                    .unwrap_or(ended)
            }
        };
        guard.armed = false;
        resolution
    };
    ApprovalWaiter {
        inner: Box::pin(waiter),
    }
}

/// Cancels the request when its waiter is dropped before it resolved.
struct AbandonGuard {
    store: ApprovalStore,
    request_id: String,
    armed: bool,
}

impl Drop for AbandonGuard {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.store.lock().finish(
                &self.request_id,
                Resolution::ended(
                    ApprovalResolution::Cancelled,
                    "the turn stopped waiting for a decision",
                ),
            );
        }
    }
}

fn describe_duration(duration: Duration) -> String {
    let secs = duration.as_secs();
    if secs >= 60 && secs.is_multiple_of(60) {
        format!("{} min", secs / 60)
    } else if secs > 0 {
        format!("{secs} s")
    } else {
        format!("{} ms", duration.as_millis())
    }
}
