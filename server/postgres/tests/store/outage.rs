//! The database going away: every call answers `Unavailable` within the pool's patience
//! (never hangs), and the store recovers by itself once the database is back, its
//! listening connection included (then `Resync`).
//!
//! The database is cut off by a TCP relay between the store and the test cluster: while
//! it is down, it closes every relayed connection and every new one at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use odyssey_runtime::RuntimeConfig;
use odyssey_runtime::RuntimeError;
use odyssey_runtime::store::suite::{record, texts};
use odyssey_runtime::store::{LogWake, StoreError as SeamError};
use odyssey_store_postgres::{CONNECT_PATIENCE, DatabaseConfig, Store, StoreConfig, open_store};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::PATIENCE;
use crate::database::{TestDatabase, url};
use crate::wakes::{unique_replica, wait_for};

/// A relay from a loopback port to the test database that can be cut and restored.
struct Relay {
    port: u16,
    up: Arc<AtomicBool>,
    /// Bumped to close every relayed connection.
    cut: watch::Sender<u64>,
    accepting: tokio::task::JoinHandle<()>,
}

impl Relay {
    async fn to(target: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let up = Arc::new(AtomicBool::new(true));
        let (cut, cuts) = watch::channel(0u64);
        let accepting = tokio::spawn({
            let up = up.clone();
            async move {
                loop {
                    let Ok((mut client, _)) = listener.accept().await else {
                        return;
                    };
                    if !up.load(Ordering::SeqCst) {
                        drop(client);
                        continue;
                    }
                    let target = target.clone();
                    let mut cuts = cuts.clone();
                    cuts.mark_unchanged();
                    tokio::spawn(async move {
                        let Ok(mut server) = TcpStream::connect(&target).await else {
                            return;
                        };
                        tokio::select! {
                            _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                            _ = cuts.changed() => {}
                        }
                    });
                }
            }
        });
        Self {
            port,
            up,
            cut,
            accepting,
        }
    }

    fn down(&self) {
        self.up.store(false, Ordering::SeqCst);
        self.cut.send_modify(|n| *n += 1);
    }

    fn restore(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.accepting.abort();
        self.cut.send_modify(|n| *n += 1);
    }
}

/// Where the test database listens (`127.0.0.1:port`).
fn database_address() -> String {
    let url = url().unwrap();
    let config: tokio_postgres::Config = url.parse().unwrap();
    let address = format!("127.0.0.1:{}", config.get_ports()[0]);
    assert!(url.contains(&address), "the test URL names {address}");
    address
}

/// The test database's URL, its port replaced by `port`.
fn through(port: u16) -> String {
    url()
        .unwrap()
        .replace(&database_address(), &format!("127.0.0.1:{port}"))
}

fn unavailable<T: std::fmt::Debug>(answer: Result<T, SeamError>) -> String {
    match answer {
        Err(SeamError::Unavailable(message)) => {
            // And as the runtime answers it.
            let runtime = RuntimeError::from(SeamError::Unavailable(message.clone()));
            assert!(
                matches!(runtime, RuntimeError::StoreUnavailable(_)),
                "{runtime:?}"
            );
            message
        }
        other => panic!("not unavailable: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_answer_unavailable_while_the_database_is_gone_and_work_again_after() {
    let Some(db) = TestDatabase::unmigrated().await else {
        return;
    };
    let relay = Relay::to(database_address()).await;
    let config = DatabaseConfig::parse(&through(relay.port))
        .unwrap()
        .with_search_path(&db.schema)
        .unwrap()
        .with_max_connections(4);
    let home = tempfile::tempdir().unwrap();
    let store = open_store(
        StoreConfig::new(config, &RuntimeConfig::with_home(home.path())),
        &unique_replica(),
    )
    .await
    .unwrap();
    let mut wakes = store.event_logs().wake_ups().unwrap();
    let session = record("main");
    let id = session.id;
    store
        .session_records()
        .create_session(session)
        .await
        .unwrap();

    relay.down();
    for _ in 0..3 {
        let started = Instant::now();
        let message = unavailable(store.event_logs().last_sequence(id).await);
        assert!(
            started.elapsed() < CONNECT_PATIENCE + Duration::from_secs(1),
            "an outage answered after {:?}",
            started.elapsed()
        );
        assert!(!message.is_empty());
    }
    unavailable(store.session_records().session(id).await);
    unavailable(store.event_logs().append_events(id, 1, texts(1, 0)).await);
    unavailable(store.replicas().unwrap().replicas().await);
    unavailable(store.bundles().refresh_catalog().await);

    relay.restore();
    // The listening connection comes back by itself (it was cut too) and says so.
    wait_for(&mut wakes, PATIENCE, |wake| *wake == LogWake::Resync).await;
    assert_eq!(store.event_logs().last_sequence(id).await.unwrap(), 0);
    assert_eq!(
        store
            .event_logs()
            .append_events(id, 1, texts(2, 0))
            .await
            .unwrap(),
        2
    );
    wait_for(
        &mut wakes,
        PATIENCE,
        |wake| matches!(wake, LogWake::Grew { session_id, last_sequence: 2 } if *session_id == id),
    )
    .await;
    drop(store);
    drop(relay);
    db.drop().await;
}

#[tokio::test]
async fn a_database_on_a_closed_port_is_unavailable_at_once() {
    let Some(_) = url() else {
        return;
    };
    // A port nothing listens on (bound, then closed).
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let store = Store::new(DatabaseConfig::parse(&through(port)).unwrap()).unwrap();
    let started = Instant::now();
    let error = store.migrate().await.unwrap_err();
    assert!(error.is_unavailable(), "{error}");
    assert!(started.elapsed() < CONNECT_PATIENCE + Duration::from_secs(1));
    let error = store.schema_version().await.unwrap_err();
    assert!(error.is_unavailable(), "{error}");
}
