//! [`EventLogs::wake_ups`]: one listening connection per store, read by a task the store
//! owns, which turns the schema's notifications into [`LogWake`]s for every receiver.
//!
//! The task ends when the store is dropped. When the listening connection is lost (or
//! stops answering), it connects again, waiting 100 ms before the first attempt and
//! twice as long after each failure, up to 5 s, and once listening again sends
//! [`LogWake::Resync`]: whatever was notified in between is lost, so every followed log
//! must be read again, and the signals sent to this replica meanwhile are read.
//!
//! It also receives the signals sent to this replica ([`odyssey_runtime::store::TurnSignals`],
//! see `signals.rs`): a notification names the row and its target; only the target reads
//! the row, beside the wake-ups.

use std::sync::{Arc, Weak};
use std::time::Duration;

use odyssey_runtime::store::LogWake;
use tokio::sync::oneshot;
use uuid::Uuid;

use super::ReplicaStore;
use crate::{EventListener, StoreError, Wake};

/// Wake-ups a receiver may fall behind by before it is told it lagged.
pub(super) const CAPACITY: usize = 4096;

/// The wait before the first attempt to listen again, doubled after each failure.
const FIRST_RETRY: Duration = Duration::from_millis(100);
/// The longest wait between two attempts.
const LAST_RETRY: Duration = Duration::from_secs(5);
/// How often the listening connection is asked to answer, and how long it may take.
const PING_EVERY: Duration = Duration::from_secs(5);
const PING_PATIENCE: Duration = Duration::from_secs(5);

/// The listening connection's name in `pg_stat_activity`.
pub(super) fn application_name(replica: &str) -> String {
    format!("odyssey-listen-{replica}")
}

/// Starts the task following `listener` (already listening) for `store`; it stops when
/// `stop`'s sender (held by the store) is dropped.
pub(super) fn spawn_follower(
    store: &Arc<ReplicaStore>,
    listener: EventListener,
    mut stop: oneshot::Receiver<()>,
) {
    let weak = Arc::downgrade(store);
    let db = store.db.clone();
    let replica = store.replica.clone();
    let name = application_name(&replica);
    tokio::spawn(async move {
        let mut listener = listener;
        loop {
            let lost = tokio::select! {
                _ = &mut stop => return,
                lost = follow(&mut listener, &weak) => lost,
            };
            let Some(lost) = lost else {
                return;
            };
            tracing::warn!(%replica, error = %lost, "the connection listening for wake-ups was lost; connecting again");
            let mut retry = FIRST_RETRY;
            listener = loop {
                tokio::select! {
                    _ = &mut stop => return,
                    () = tokio::time::sleep(retry) => {}
                }
                let attempt = tokio::select! {
                    _ = &mut stop => return,
                    attempt = db.listen_for_events_as(&name) => attempt,
                };
                match attempt {
                    Ok(listener) => break listener,
                    Err(e) => {
                        tracing::debug!(%replica, error = %e, "listening for wake-ups again failed");
                        retry = (retry * 2).min(LAST_RETRY);
                    }
                }
            };
            tracing::info!(%replica, "listening for wake-ups again");
            if !send(&weak, LogWake::Resync) {
                return;
            }
            // Signals sent to this replica meanwhile were notified to no one.
            if let Some(store) = weak.upgrade() {
                tokio::spawn(store.deliver_missed_signals());
            }
        }
    });
}

/// Reads `listener` until its connection is lost (the error) or the store is gone
/// (`None`).
async fn follow(listener: &mut EventListener, weak: &Weak<ReplicaStore>) -> Option<StoreError> {
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ping.tick().await;
    loop {
        tokio::select! {
            woken = listener.next() => {
                let wake = match woken {
                    Ok(Wake::Events(appended)) => {
                        let (Ok(session_id), Ok(last_sequence)) = (
                            Uuid::parse_str(&appended.session_id),
                            u64::try_from(appended.last_sequence),
                        ) else {
                            continue;
                        };
                        LogWake::Grew { session_id, last_sequence }
                    }
                    Ok(Wake::SessionDeleted { session_id }) => {
                        let Ok(session_id) = Uuid::parse_str(&session_id) else {
                            continue;
                        };
                        LogWake::Deleted { session_id }
                    }
                    Ok(Wake::ApprovalAnswered { .. }) => continue,
                    Ok(Wake::TurnSignal { id, target }) => {
                        let store = weak.upgrade()?;
                        if target == store.replica {
                            // Read beside the wake-ups, which wait for no row.
                            tokio::spawn(store.deliver_signal(id));
                        }
                        continue;
                    }
                    Err(e) => return Some(e),
                };
                if !send(weak, wake) {
                    return None;
                }
            }
            _ = ping.tick() => {
                match tokio::time::timeout(PING_PATIENCE, listener.ping()).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => return Some(e),
                    Err(_) => {
                        return Some(StoreError::ListenerClosed(format!(
                            "it did not answer within {} s",
                            PING_PATIENCE.as_secs()
                        )));
                    }
                }
            }
        }
    }
}

/// Sends `wake` to the store's receivers; `false` when the store is gone.
fn send(weak: &Weak<ReplicaStore>, wake: LogWake) -> bool {
    let Some(store) = weak.upgrade() else {
        return false;
    };
    // No receiver is not a failure: nobody follows a log right now.
    let _ = store.wakes.send(wake);
    true
}
