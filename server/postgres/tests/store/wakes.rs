//! The store's wake-ups ([`EventLogs::wake_ups`]): what one replica appends or deletes
//! wakes the others, and a lost listening connection is replaced, then said (`Resync`).

use std::time::{Duration, Instant};

use odyssey_runtime::store::suite::{record, texts};
use odyssey_runtime::store::{LogWake, Store};
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use uuid::Uuid;

use crate::PATIENCE;
use crate::database::TestDatabase;
use crate::suite::open_replica;

/// A replica id no other test uses: the listening connection's name is cluster-wide.
pub fn unique_replica() -> String {
    format!("r-{}", &Uuid::new_v4().simple().to_string()[..12])
}

/// Waits (at most `within`) for a wake-up `wanted` accepts; other tests' sessions share
/// the database's channels, so the rest is skipped.
pub async fn wait_for(
    wakes: &mut broadcast::Receiver<LogWake>,
    within: Duration,
    wanted: impl Fn(&LogWake) -> bool,
) -> LogWake {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, wakes.recv()).await {
            Ok(Ok(wake)) if wanted(&wake) => return wake,
            Ok(Ok(_)) | Ok(Err(RecvError::Lagged(_))) => {}
            Ok(Err(RecvError::Closed)) => panic!("the wake-ups ended"),
            Err(_) => panic!("no wake-up came within {within:?}"),
        }
    }
}

async fn new_session(store: &Store) -> Uuid {
    let record = record("main");
    let id = record.id;
    store
        .session_records()
        .create_session(record)
        .await
        .unwrap();
    id
}

fn grew(session: Uuid, last: u64) -> impl Fn(&LogWake) -> bool {
    move |wake| {
        matches!(wake, LogWake::Grew { session_id, last_sequence }
            if *session_id == session && *last_sequence >= last)
    }
}

#[tokio::test]
async fn an_append_on_one_replica_wakes_the_other_within_a_second() {
    let Some(db) = TestDatabase::unmigrated().await else {
        return;
    };
    let (a, _keep_a) = open_replica(&db, "replica-a").await;
    let (b, _keep_b) = open_replica(&db, "replica-b").await;
    let mut wakes = b.event_logs().wake_ups().expect("the store has wake-ups");
    let session = new_session(&a).await;
    a.event_logs()
        .append_events(session, 1, texts(3, 0))
        .await
        .unwrap();
    let woken = wait_for(&mut wakes, Duration::from_secs(1), grew(session, 1)).await;
    assert_eq!(
        woken,
        LogWake::Grew {
            session_id: session,
            last_sequence: 3
        }
    );
    // What the wake-up points at is there to read on the woken replica.
    let read = b
        .event_logs()
        .read_events_after(session, 0, 10)
        .await
        .unwrap();
    assert_eq!(read.len(), 3);
    a.event_logs()
        .append_events(session, 4, texts(1, 3))
        .await
        .unwrap();
    wait_for(&mut wakes, Duration::from_secs(1), grew(session, 4)).await;
    db.drop().await;
}

#[tokio::test]
async fn a_session_deleted_on_one_replica_wakes_the_other() {
    let Some(db) = TestDatabase::unmigrated().await else {
        return;
    };
    let (a, _keep_a) = open_replica(&db, "replica-a").await;
    let (b, _keep_b) = open_replica(&db, "replica-b").await;
    let mut wakes = b.event_logs().wake_ups().unwrap();
    let session = new_session(&a).await;
    assert!(a.session_records().delete_session(session).await.unwrap());
    wait_for(&mut wakes, PATIENCE, |wake| {
        *wake
            == LogWake::Deleted {
                session_id: session,
            }
    })
    .await;
    db.drop().await;
}

#[tokio::test]
async fn a_lost_listening_connection_is_replaced_and_a_resync_is_sent() {
    let Some(db) = TestDatabase::unmigrated().await else {
        return;
    };
    let (a, _keep_a) = open_replica(&db, &unique_replica()).await;
    let replica = unique_replica();
    let (b, _keep_b) = open_replica(&db, &replica).await;
    let mut wakes = b.event_logs().wake_ups().unwrap();
    let listener = format!("odyssey-listen-{replica}");
    let listening = "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1";
    let admin = db.client().await;
    let open: i64 = admin
        .query_one(listening, &[&listener])
        .await
        .unwrap()
        .get(0);
    assert_eq!(open, 1);
    let terminated: i64 = admin
        .query_one(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
             FROM pg_stat_activity WHERE application_name = $1",
            &[&listener],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(terminated, 1);
    wait_for(&mut wakes, PATIENCE, |wake| *wake == LogWake::Resync).await;
    let open: i64 = admin
        .query_one(listening, &[&listener])
        .await
        .unwrap()
        .get(0);
    assert_eq!(open, 1, "listening again, once");
    // And what is appended now wakes it again.
    let session = new_session(&a).await;
    a.event_logs()
        .append_events(session, 1, texts(1, 0))
        .await
        .unwrap();
    wait_for(&mut wakes, PATIENCE, grew(session, 1)).await;
    db.drop().await;
}

/// No wake-up outlives its store: dropping the store ends the receivers' stream and
/// closes its listening connection.
#[tokio::test]
async fn a_dropped_store_stops_listening() {
    let Some(db) = TestDatabase::unmigrated().await else {
        return;
    };
    let replica = unique_replica();
    let (b, keep_b) = open_replica(&db, &replica).await;
    let mut wakes = b.event_logs().wake_ups().unwrap();
    drop(b);
    match tokio::time::timeout(PATIENCE, async {
        loop {
            match wakes.recv().await {
                Err(RecvError::Closed) => break,
                _ => continue,
            }
        }
    })
    .await
    {
        Ok(()) => {}
        Err(_) => panic!("the wake-ups outlived the store"),
    }
    let admin = db.client().await;
    let name = format!("odyssey-listen-{replica}");
    let deadline = Instant::now() + PATIENCE;
    loop {
        let open: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
                &[&name],
            )
            .await
            .unwrap()
            .get(0);
        if open == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the listening connection stayed open"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(keep_b);
    db.drop().await;
}

/// The wake-up latency: an append on replica A until replica B is woken for it, over
/// 1,000 appends one after another (`--ignored`; prints p50 and p99).
#[tokio::test]
#[ignore = "a measurement: run with --ignored --nocapture"]
async fn wake_up_latency_across_replicas() {
    let Some(db) = TestDatabase::unmigrated().await else {
        return;
    };
    let (a, _keep_a) = open_replica(&db, "replica-a").await;
    let (b, _keep_b) = open_replica(&db, "replica-b").await;
    let mut wakes = b.event_logs().wake_ups().unwrap();
    let session = new_session(&a).await;
    let logs = a.event_logs();
    // From the call to append to B's wake-up, and from the append's answer to it.
    let (mut whole, mut after_commit) = (Vec::new(), Vec::new());
    for i in 0..1000u64 {
        let started = Instant::now();
        logs.append_events(session, i + 1, texts(1, i as usize))
            .await
            .unwrap();
        let committed = Instant::now();
        wait_for(&mut wakes, PATIENCE, grew(session, i + 1)).await;
        whole.push(started.elapsed());
        after_commit.push(committed.elapsed());
    }
    let ms = |mut all: Vec<Duration>| {
        all.sort();
        let at = |q: f64| all[((all.len() as f64 * q) as usize).min(all.len() - 1)];
        format!(
            "p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
            at(0.50).as_secs_f64() * 1e3,
            at(0.99).as_secs_f64() * 1e3,
            all[all.len() - 1].as_secs_f64() * 1e3
        )
    };
    println!(
        "wake-up latency over 1000 appends, append on A -> Grew on B: {}",
        ms(whole)
    );
    println!("  of which after A's append answered: {}", ms(after_commit));
    db.drop().await;
}
