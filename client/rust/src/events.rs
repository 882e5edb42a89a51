//! A session's event stream that outlives the connection under it.
//!
//! SubscribeSession replays from any sequence, so a dropped stream loses nothing as long as
//! the client remembers the last sequence it handed out and resubscribes after it. That is
//! all this type does: the caller sees every event once, in order, across disconnects and
//! server restarts, and never sees heartbeats (they only prove the stream is alive).

use std::error::Error as _;
use std::time::Duration;

use odyssey_api::v1 as pb;
use odyssey_api::v1::session_service_client::SessionServiceClient;
use pb::subscribe_session_response::Item;
use tonic::{Code, Status, Streaming};

use crate::client::AuthChannel;
use crate::error::ClientError;

/// How an [`EventStream`] retries after the transport fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReconnectPolicy {
    /// Wait before the first retry; doubled after each failed one.
    pub initial_delay: Duration,
    /// The longest wait between retries.
    pub max_delay: Duration,
    /// Consecutive failed attempts before the error is handed to the caller. Any message
    /// received (event or heartbeat) resets the count.
    pub max_attempts: u32,
}

impl Default for ReconnectPolicy {
    /// About half a minute of retries: enough for a server restart, short enough that a
    /// server that is gone for good is reported.
    fn default() -> Self {
        Self {
            initial_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(5),
            max_attempts: 10,
        }
    }
}

impl ReconnectPolicy {
    /// Never reconnect: the first transport error ends the stream.
    pub fn never() -> Self {
        Self {
            max_attempts: 0,
            ..Self::default()
        }
    }

    /// The wait before retry number `attempt` (1-based).
    pub fn delay(&self, attempt: u32) -> Duration {
        let factor = 1u32
            .checked_shl(attempt.saturating_sub(1))
            .unwrap_or(u32::MAX);
        self.initial_delay
            .saturating_mul(factor)
            .min(self.max_delay)
    }
}

/// Events of one session, in sequence order, each exactly once.
pub struct EventStream {
    client: SessionServiceClient<AuthChannel>,
    session_id: String,
    policy: ReconnectPolicy,
    /// The open server stream; `None` between a failure and the next resubscribe.
    inner: Option<Streaming<pb::SubscribeSessionResponse>>,
    last_sequence: u64,
    heartbeats: u64,
    last_heartbeat: Option<pb::Heartbeat>,
    reconnects: u64,
    finished: bool,
}

impl std::fmt::Debug for EventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream")
            .field("session_id", &self.session_id)
            .field("last_sequence", &self.last_sequence)
            .field("heartbeats", &self.heartbeats)
            .field("reconnects", &self.reconnects)
            .field("finished", &self.finished)
            .finish_non_exhaustive()
    }
}

impl EventStream {
    /// Subscribes once, without retrying: a session that does not exist or a server that
    /// is not there is reported at once rather than after the whole backoff.
    pub(crate) async fn open(
        client: SessionServiceClient<AuthChannel>,
        session_id: &str,
        after_sequence: u64,
        policy: ReconnectPolicy,
    ) -> Result<Self, ClientError> {
        let mut stream = Self {
            client,
            session_id: session_id.to_owned(),
            policy,
            inner: None,
            last_sequence: after_sequence,
            heartbeats: 0,
            last_heartbeat: None,
            reconnects: 0,
            finished: false,
        };
        stream.inner = Some(stream.subscribe().await?);
        Ok(stream)
    }

    /// The next event. `Ok(None)` when the server ended the stream cleanly; an error when
    /// the server refused (e.g. NOT_FOUND after the session was deleted) or the transport
    /// stayed down past the [`ReconnectPolicy`]. After either, the stream is over.
    ///
    /// Cancel-safe: dropping the future loses no event; the next call resumes.
    pub async fn next(&mut self) -> Result<Option<pb::SessionEvent>, ClientError> {
        let mut attempts = 0u32;
        loop {
            if self.finished {
                return Ok(None);
            }
            let result = match self.inner.as_mut() {
                Some(inner) => inner.message().await,
                None => match self.subscribe().await {
                    Ok(inner) => {
                        self.inner = Some(inner);
                        self.reconnects += 1;
                        tracing::debug!(session = %self.session_id, after = self.last_sequence, "event stream resubscribed");
                        continue;
                    }
                    Err(status) => Err(status),
                },
            };
            match result {
                Ok(Some(message)) => {
                    attempts = 0;
                    match message.item {
                        Some(Item::Event(event)) if event.sequence > self.last_sequence => {
                            self.last_sequence = event.sequence;
                            return Ok(Some(event));
                        }
                        // Already handed out before a reconnect: skipped, never repeated.
                        Some(Item::Event(_)) | None => {}
                        Some(Item::Heartbeat(heartbeat)) => {
                            self.heartbeats += 1;
                            self.last_heartbeat = Some(heartbeat);
                        }
                    }
                }
                Ok(None) => {
                    self.finished = true;
                    self.inner = None;
                    return Ok(None);
                }
                Err(status) => {
                    self.inner = None;
                    if !is_transient(&status) || attempts >= self.policy.max_attempts {
                        self.finished = true;
                        return Err(status.into());
                    }
                    attempts += 1;
                    let delay = self.policy.delay(attempts);
                    tracing::debug!(
                        session = %self.session_id,
                        code = ?status.code(),
                        message = status.message(),
                        attempt = attempts,
                        ?delay,
                        "event stream interrupted; resubscribing"
                    );
                    tokio::time::sleep(delay).await;
                }
            }
        }
    }

    /// Turns this into a `futures::Stream`; it ends after the first error.
    pub fn into_stream(
        self,
    ) -> impl futures::Stream<Item = Result<pb::SessionEvent, ClientError>> + Send {
        futures::stream::unfold(self, |mut stream| async move {
            match stream.next().await {
                Ok(Some(event)) => Some((Ok(event), stream)),
                Ok(None) => None,
                Err(error) => Some((Err(error), stream)),
            }
        })
    }

    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The sequence of the last event handed out (or the starting point, before any).
    pub fn last_sequence(&self) -> u64 {
        self.last_sequence
    }

    /// Heartbeats received so far.
    pub fn heartbeats(&self) -> u64 {
        self.heartbeats
    }

    /// The most recent heartbeat: when the server sent it and its last sequence then.
    pub fn last_heartbeat(&self) -> Option<&pb::Heartbeat> {
        self.last_heartbeat.as_ref()
    }

    /// How many times the stream resubscribed after a transport failure.
    pub fn reconnects(&self) -> u64 {
        self.reconnects
    }

    async fn subscribe(&mut self) -> Result<Streaming<pb::SubscribeSessionResponse>, Status> {
        let request = pb::SubscribeSessionRequest {
            session_id: self.session_id.clone(),
            after_sequence: self.last_sequence,
        };
        Ok(self.client.subscribe_session(request).await?.into_inner())
    }
}

/// Whether a failure is the connection's rather than the server's answer. UNAVAILABLE is
/// what tonic reports for refused connections and what the server sends while shutting
/// down; a reset or broken connection mid-stream surfaces as UNKNOWN, or as INTERNAL or
/// CANCELLED from an HTTP/2 error. Those two are retried only when they came from the
/// local transport, never when the server chose them.
pub(crate) fn is_transient(status: &Status) -> bool {
    match status.code() {
        Code::Unavailable | Code::Unknown => true,
        Code::Internal | Code::Cancelled => {
            status.source().is_some() || status.message().starts_with("h2 protocol error")
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let policy = ReconnectPolicy::default();
        assert_eq!(policy.delay(1), Duration::from_millis(100));
        assert_eq!(policy.delay(2), Duration::from_millis(200));
        assert_eq!(policy.delay(4), Duration::from_millis(800));
        assert_eq!(policy.delay(10), Duration::from_secs(5));
        assert_eq!(policy.delay(200), Duration::from_secs(5));
    }

    #[test]
    fn only_transport_failures_are_retried() {
        assert!(is_transient(&Status::unavailable("connection refused")));
        assert!(is_transient(&Status::unknown(
            "error reading a body from connection"
        )));
        assert!(is_transient(&Status::internal(
            "h2 protocol error: connection reset"
        )));
        assert!(!is_transient(&Status::internal("storage failure")));
        assert!(!is_transient(&Status::not_found("the session was deleted")));
        assert!(!is_transient(&Status::unauthenticated("missing token")));
        assert!(!is_transient(&Status::invalid_argument("bad id")));
    }
}
