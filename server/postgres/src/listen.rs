//! The wake-ups of replicas: every statement appending events notifies channel
//! [`EVENTS_CHANNEL`] with `session_id:last_sequence` when it commits, and every answer to
//! an approval notifies [`APPROVALS_CHANNEL`] with the approval's id, and every deletion of
//! sessions notifies [`SESSIONS_DELETED_CHANNEL`] with each deleted session's id (triggers
//! of the schema do it, whoever writes). A notification only says "read the rows again": the
//! rows are the truth, so a follower reads from its last sequence, and a missed
//! notification costs a delay, never an event.

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use tokio_postgres::{AsyncMessage, Socket};

use crate::connect::Tls;
use crate::{Store, StoreError};

/// The channel appends are announced on.
pub const EVENTS_CHANNEL: &str = "odyssey_events";
/// The channel answers to approvals are announced on.
pub const APPROVALS_CHANNEL: &str = "odyssey_approvals";

/// The channel deletions of sessions are announced on (schema v3).
pub const SESSIONS_DELETED_CHANNEL: &str = "odyssey_sessions_deleted";

/// The channel signals for the replica running a turn are announced on (schema v5), with
/// `id:target`.
pub const TURN_SIGNALS_CHANNEL: &str = "odyssey_turn_signals";

/// Notifications waiting to be read before the connection stops reading more.
const BUFFER: usize = 1024;

/// A session's log grew: its last sequence is now at least `last_sequence`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventsAppended {
    pub session_id: String,
    pub last_sequence: i64,
}

/// What a replica is woken for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Wake {
    Events(EventsAppended),
    /// An approval was answered (on any replica).
    ApprovalAnswered {
        approval_id: String,
    },
    /// A session was deleted (on any replica).
    SessionDeleted {
        session_id: String,
    },
    /// A signal (row `id` of `turn_signals`) was sent to replica `target`.
    TurnSignal {
        id: i64,
        target: String,
    },
}

/// One connection listening for appended events and answered approvals (outside the
/// pool: it stays open).
pub struct EventListener {
    // Kept so the connection stays open; the task reading it ends when this is dropped.
    client: tokio_postgres::Client,
    notifications: mpsc::Receiver<Result<Wake, String>>,
}

impl EventListener {
    /// The next wake-up. Fails when the connection was lost: the follower then reads its
    /// sessions' rows again and listens anew.
    pub async fn next(&mut self) -> Result<Wake, StoreError> {
        match self.notifications.recv().await {
            Some(Ok(appended)) => Ok(appended),
            Some(Err(message)) => Err(StoreError::ListenerClosed(message)),
            None => Err(StoreError::ListenerClosed(
                "the connection ended".to_owned(),
            )),
        }
    }

    /// One round trip on the listening connection: fails when it was lost, which a
    /// connection that only receives would notice late.
    pub async fn ping(&self) -> Result<(), StoreError> {
        self.client
            .simple_query("")
            .await
            .map(|_| ())
            .map_err(StoreError::query("ping the listening connection"))
    }
}

impl Store {
    /// Opens a connection that listens for appended events and answered approvals.
    /// Notifications sent before it
    /// returns are not seen: read the rows after listening, not before.
    pub async fn listen_for_events(&self) -> Result<EventListener, StoreError> {
        self.listen_as(None).await
    }

    /// [`Store::listen_for_events`], the connection named `application_name` (as
    /// `pg_stat_activity` shows it; PostgreSQL keeps its first 63 bytes).
    pub async fn listen_for_events_as(
        &self,
        application_name: &str,
    ) -> Result<EventListener, StoreError> {
        self.listen_as(Some(application_name)).await
    }

    async fn listen_as(&self, application_name: Option<&str>) -> Result<EventListener, StoreError> {
        let mut config = self.config.pg().clone();
        if let Some(name) = application_name {
            config.application_name(name);
        }
        match &self.tls {
            Tls::Plain => listen(&config, tokio_postgres::NoTls).await,
            Tls::Rustls(connector) => listen(&config, connector.clone()).await,
        }
    }
}

async fn listen<T>(config: &tokio_postgres::Config, tls: T) -> Result<EventListener, StoreError>
where
    T: MakeTlsConnect<Socket> + Send + 'static,
    T::Stream: Send + 'static,
    T::TlsConnect: Send,
    <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
{
    let (client, mut connection) = config
        .connect(tls)
        .await
        .map_err(StoreError::query("open the listening connection"))?;
    let (sender, notifications) = mpsc::channel(BUFFER);
    tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            let item = match message {
                Ok(AsyncMessage::Notification(n)) if n.channel() == EVENTS_CHANNEL => {
                    match parse(n.payload()) {
                        Some(appended) => Ok(Wake::Events(appended)),
                        None => {
                            tracing::warn!(
                                payload = n.payload(),
                                "an unreadable event notification was ignored"
                            );
                            continue;
                        }
                    }
                }
                Ok(AsyncMessage::Notification(n)) if n.channel() == APPROVALS_CHANNEL => {
                    Ok(Wake::ApprovalAnswered {
                        approval_id: n.payload().to_owned(),
                    })
                }
                Ok(AsyncMessage::Notification(n)) if n.channel() == SESSIONS_DELETED_CHANNEL => {
                    Ok(Wake::SessionDeleted {
                        session_id: n.payload().to_owned(),
                    })
                }
                Ok(AsyncMessage::Notification(n)) if n.channel() == TURN_SIGNALS_CHANNEL => {
                    match parse_signal(n.payload()) {
                        Some(wake) => Ok(wake),
                        None => {
                            tracing::warn!(
                                payload = n.payload(),
                                "an unreadable signal notification was ignored"
                            );
                            continue;
                        }
                    }
                }
                Ok(_) => continue,
                Err(e) => Err(crate::error::describe(&e)),
            };
            let failed = item.is_err();
            if sender.send(item).await.is_err() || failed {
                break;
            }
        }
    });
    client
        .batch_execute(&format!(
            "LISTEN {EVENTS_CHANNEL}; LISTEN {APPROVALS_CHANNEL}; LISTEN {SESSIONS_DELETED_CHANNEL}; LISTEN {TURN_SIGNALS_CHANNEL}"
        ))
        .await
        .map_err(StoreError::query("listen for appended events"))?;
    Ok(EventListener {
        client,
        notifications,
    })
}

/// `session_id:last_sequence` (the session id may itself hold colons).
fn parse(payload: &str) -> Option<EventsAppended> {
    let (session_id, sequence) = payload.rsplit_once(':')?;
    Some(EventsAppended {
        session_id: session_id.to_owned(),
        last_sequence: sequence.parse().ok()?,
    })
}

/// `id:target` (the target, a replica id, holds no colon).
fn parse_signal(payload: &str) -> Option<Wake> {
    let (id, target) = payload.split_once(':')?;
    Some(Wake::TurnSignal {
        id: id.parse().ok()?,
        target: target.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_payload_names_its_row_and_target() {
        assert_eq!(
            parse_signal("42:replica-a"),
            Some(Wake::TurnSignal {
                id: 42,
                target: "replica-a".to_owned()
            })
        );
        assert_eq!(parse_signal("x:replica-a"), None);
        assert_eq!(parse_signal("42"), None);
    }

    #[test]
    fn a_payload_names_the_session_and_its_last_sequence() {
        assert_eq!(
            parse("a:b:17"),
            Some(EventsAppended {
                session_id: "a:b".to_owned(),
                last_sequence: 17
            })
        );
        assert_eq!(parse("no-sequence"), None);
        assert_eq!(parse("s:x"), None);
    }
}
