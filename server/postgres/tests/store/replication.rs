//! What the store suite cannot show: two replicas (two stores opened under two ids on one
//! schema) sharing sessions, logs, the queue and bundles.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use odyssey_runtime::events::{EventPayload, TurnCompleted, TurnOutcome};
use odyssey_runtime::store::suite::{Stores, bundle_archive, record, texts};
use odyssey_runtime::store::{Job, StoreError as SeamError};
use odyssey_runtime::{ExecutionRequest, InstallOptions};
use odyssey_store_postgres::{EventsAppended, Wake};
use uuid::Uuid;

use crate::PATIENCE;
use crate::database::TestDatabase;
use crate::suite::{open_replica, open_replica_with};

async fn new_session(stores: &Stores) -> Uuid {
    let record = record("main");
    let id = record.id;
    stores.records.create_session(record).await.unwrap();
    id
}

fn job(session_id: Uuid) -> Job {
    Job {
        execution_id: Uuid::now_v7(),
        request: ExecutionRequest {
            session_id,
            prompt: "go".into(),
            ..Default::default()
        },
    }
}

fn fenced_reason(answer: Result<u64, SeamError>) -> String {
    match answer {
        Err(SeamError::Fenced { reason, .. }) => reason,
        other => panic!("an append that should have been fenced off: {other:?}"),
    }
}

/// Workers of two replicas claim, run and finish the turns of three sessions, each
/// submitted alternately through both: no two turns of a session ever run at once, and
/// each session's turns run once each, in the order they were submitted.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_racing_for_a_sessions_turns_never_both_run_one() {
    let Some(db) = TestDatabase::unmigrated().await else {
        return;
    };
    let (a, _keep_a) = open_replica(&db, "replica-a").await;
    let (b, _keep_b) = open_replica(&db, "replica-b").await;
    let replicas = [Stores::from(&a), Stores::from(&b)];
    let mut sessions = Vec::new();
    for _ in 0..3 {
        sessions.push(new_session(&replicas[0]).await);
    }
    let mut submitted: HashMap<Uuid, Vec<Uuid>> = HashMap::new();
    for _ in 0..4 {
        for session in &sessions {
            for replica in &replicas {
                let turn = job(*session);
                submitted
                    .entry(*session)
                    .or_default()
                    .push(turn.execution_id);
                replica.queue.push(turn, false).await.unwrap();
            }
        }
    }
    let total: usize = submitted.values().map(Vec::len).sum();
    let running = Arc::new(Mutex::new(HashSet::new()));
    let ran: Arc<Mutex<HashMap<Uuid, Vec<Uuid>>>> = Arc::default();
    let mut workers = Vec::new();
    for replica in &replicas {
        for _ in 0..2 {
            let (queue, running, ran) = (replica.queue.clone(), running.clone(), ran.clone());
            workers.push(tokio::spawn(async move {
                loop {
                    if ran.lock().unwrap().values().map(Vec::len).sum::<usize>() == total {
                        return;
                    }
                    let Some(turn) = queue.claim_next().await.unwrap() else {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                        continue;
                    };
                    let session = turn.request.session_id;
                    assert!(
                        running.lock().unwrap().insert(session),
                        "two turns of session {session} ran at once"
                    );
                    ran.lock()
                        .unwrap()
                        .entry(session)
                        .or_default()
                        .push(turn.execution_id);
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    running.lock().unwrap().remove(&session);
                    queue.finish(session).await.unwrap();
                }
            }));
        }
    }
    for worker in workers {
        tokio::time::timeout(PATIENCE * 3, worker)
            .await
            .expect("the turns did not all run")
            .unwrap();
    }
    assert_eq!(*ran.lock().unwrap(), submitted);
    db.drop().await;
}

/// While a replica runs a session's turn, it alone appends to the session. Once its lease
/// lapsed (a replica paused past it), another replica may write (recording the turn as
/// interrupted): the paused one's next append then finds the log moved and lands nothing;
/// once another replica took the lease over, the paused one is refused by name.
#[tokio::test]
async fn an_append_under_a_lease_that_lapsed_and_was_taken_over_is_refused() {
    let Some(db) = TestDatabase::unmigrated().await else {
        return;
    };
    let (a, _keep_a) = open_replica(&db, "replica-a").await;
    let (b, _keep_b) = open_replica(&db, "replica-b").await;
    let (a, b) = (Stores::from(&a), Stores::from(&b));
    let session = new_session(&a).await;
    assert_eq!(
        b.logs.append_events(session, 1, texts(1, 0)).await.unwrap(),
        1,
        "no one holds the session: any replica appends"
    );
    a.queue.push(job(session), false).await.unwrap();
    assert!(a.queue.claim_next().await.unwrap().is_some());
    assert_eq!(
        a.logs.append_events(session, 2, texts(1, 1)).await.unwrap(),
        2
    );
    let reason = fenced_reason(b.logs.append_events(session, 3, texts(1, 90)).await);
    assert!(reason.contains("replica-a"), "{reason}");

    db.sql(&format!(
        "UPDATE session_leases SET expires_at = clock_timestamp() - interval '1 second'
         WHERE session_id = '{session}'"
    ))
    .await;
    assert_eq!(
        b.logs.append_events(session, 3, texts(1, 2)).await.unwrap(),
        3,
        "a lapsed lease keeps no one out"
    );
    match a.logs.append_events(session, 3, texts(1, 91)).await {
        Err(SeamError::SequenceConflict { actual, .. }) => assert_eq!(actual, 4),
        other => panic!("the lapsed holder's append must find the log moved: {other:?}"),
    }
    db.store
        .acquire_lease(&session.to_string(), "replica-b", Duration::from_secs(30))
        .await
        .unwrap();
    let reason = fenced_reason(a.logs.append_events(session, 4, texts(1, 92)).await);
    assert!(reason.contains("replica-b"), "{reason}");
    assert_eq!(
        b.logs.append_events(session, 4, texts(1, 3)).await.unwrap(),
        4
    );

    let log = b.logs.read_events_after(session, 0, 10).await.unwrap();
    let texts: Vec<String> = log
        .iter()
        .map(|e| serde_json::to_value(&e.payload).unwrap()["data"]["delta"].to_string())
        .collect();
    assert_eq!(
        texts,
        ["\"text 0\"", "\"text 1\"", "\"text 2\"", "\"text 3\""],
        "nothing fenced landed"
    );
    db.drop().await;
}

/// A lease that lapsed while the database was away, and that nobody took over, is still
/// its holder's: its appends go on where the log is.
#[tokio::test]
async fn a_lease_that_lapsed_without_a_taker_stays_its_holders() {
    let Some(db) = TestDatabase::unmigrated().await else {
        return;
    };
    let (a, _keep_a) = open_replica(&db, "replica-a").await;
    let (b, _keep_b) = open_replica(&db, "replica-b").await;
    let (a, b) = (Stores::from(&a), Stores::from(&b));
    let session = new_session(&a).await;
    a.queue.push(job(session), false).await.unwrap();
    assert!(a.queue.claim_next().await.unwrap().is_some());
    db.sql(&format!(
        "UPDATE session_leases SET expires_at = clock_timestamp() - interval '1 second'
         WHERE session_id = '{session}'"
    ))
    .await;
    assert_eq!(
        a.logs.append_events(session, 1, texts(2, 0)).await.unwrap(),
        2
    );
    assert_eq!(b.logs.last_sequence(session).await.unwrap(), 2);
    db.drop().await;
}

/// An append through one replica wakes a listener of the other, which then reads the
/// events through its own store.
#[tokio::test]
async fn an_append_on_one_replica_wakes_the_other_which_reads_it() {
    let Some(db) = TestDatabase::unmigrated().await else {
        return;
    };
    let (a, _keep_a) = open_replica(&db, "replica-a").await;
    let (b, _keep_b) = open_replica(&db, "replica-b").await;
    let (a, b) = (Stores::from(&a), Stores::from(&b));
    let session = new_session(&a).await;
    let mut listener = db.replica().listen_for_events().await.unwrap();
    a.logs.append_events(session, 1, texts(2, 0)).await.unwrap();
    let woken = loop {
        let wake = tokio::time::timeout(PATIENCE, listener.next())
            .await
            .expect("no wake-up came")
            .unwrap();
        match wake {
            Wake::Events(appended) if appended.session_id == session.to_string() => {
                break appended;
            }
            _ => {}
        }
    };
    assert_eq!(
        woken,
        EventsAppended {
            session_id: session.to_string(),
            last_sequence: 2
        }
    );
    let read = b.logs.read_events_after(session, 0, 10).await.unwrap();
    assert_eq!(read.iter().map(|e| e.sequence).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(b.logs.last_sequence(session).await.unwrap(), 2);
    db.drop().await;
}

/// A replica's capacity counts the turns it submitted; the cluster's limit counts all;
/// and a replica claims only the turns it submitted (it alone holds their executions).
#[tokio::test]
async fn queue_limits_hold_per_replica_and_across_the_cluster() {
    let Some(db) = TestDatabase::unmigrated().await else {
        return;
    };
    let limits = |config: &mut odyssey_store_postgres::StoreConfig| {
        config.queue_capacity = 2;
        config.cluster_queue_limit = 3;
    };
    let (a, _keep_a) = open_replica_with(&db, "replica-a", limits).await;
    let (b, _keep_b) = open_replica_with(&db, "replica-b", limits).await;
    let (a, b) = (Stores::from(&a), Stores::from(&b));
    let (s1, s2) = (new_session(&a).await, new_session(&a).await);
    a.queue.push(job(s1), false).await.unwrap();
    a.queue.push(job(s1), false).await.unwrap();
    match a.queue.push(job(s2), false).await {
        Err(SeamError::QueueFull { capacity: 2 }) => {}
        other => panic!("a replica's third waiting turn: {other:?}"),
    }
    let mine = job(s2);
    let mine_id = mine.execution_id;
    b.queue.push(mine, false).await.unwrap();
    match b.queue.push(job(s2), false).await {
        Err(SeamError::QueueFull { capacity: 3 }) => {}
        other => panic!("the cluster's fourth waiting turn: {other:?}"),
    }
    assert_eq!((a.queue.queued(), b.queue.queued()), (2, 1));
    let claimed = b.queue.claim_next().await.unwrap().map(|j| j.execution_id);
    assert_eq!(
        claimed,
        Some(mine_id),
        "b runs its own turn, not a's older ones"
    );
    assert!(b.queue.claim_next().await.unwrap().is_none());
    db.drop().await;
}

/// A bundle installed through one replica is served by the other from the database,
/// unpacked into its own folder under the same namespace; deleted through the other, the
/// first no longer serves it.
#[tokio::test]
async fn a_bundle_installed_on_one_replica_is_served_by_the_other_until_deleted() {
    let Some(db) = TestDatabase::unmigrated().await else {
        return;
    };
    let (a, home_a) = open_replica(&db, "replica-a").await;
    let (b, home_b) = open_replica(&db, "replica-b").await;
    let (a, b) = (Stores::from(&a), Stores::from(&b));
    let (archive, digest) = bundle_archive("shared");
    let options = InstallOptions {
        namespace: "acme".into(),
        ..InstallOptions::default()
    };
    let installed = a.bundles.install_archive(archive, options).await.unwrap();
    assert!(installed.root.starts_with(home_a.path()));
    let served = b.bundles.bundle_by_digest(digest.clone()).await.unwrap();
    assert_eq!(served.id, installed.id, "same bundle, same namespace");
    assert!(served.root.starts_with(home_b.path()), "b's own copy");
    b.bundles.delete_bundle(digest.clone()).await.unwrap();
    match a.bundles.bundle_by_digest(digest).await {
        Err(e) if e.is_not_found() => {}
        other => panic!("a bundle deleted on another replica: {other:?}"),
    }
    db.drop().await;
}

/// The lease a claim takes outlives its time while the replica's heartbeat renews it, so
/// another replica stays fenced off for the whole turn; finishing the turn frees the
/// session at once.
#[tokio::test]
async fn the_heartbeat_keeps_a_running_turns_lease_and_finishing_frees_it() {
    let Some(db) = TestDatabase::unmigrated().await else {
        return;
    };
    let ttl = Duration::from_secs(1);
    let (a, _keep_a) = open_replica_with(&db, "replica-a", |c| c.lease_ttl = ttl).await;
    let (b, _keep_b) = open_replica(&db, "replica-b").await;
    let (a, b) = (Stores::from(&a), Stores::from(&b));
    let session = new_session(&a).await;
    a.queue.push(job(session), false).await.unwrap();
    assert!(a.queue.claim_next().await.unwrap().is_some());
    tokio::time::sleep(ttl * 3).await;
    assert_eq!(
        a.logs.append_events(session, 1, texts(1, 0)).await.unwrap(),
        1
    );
    let reason = fenced_reason(b.logs.append_events(session, 2, texts(1, 1)).await);
    assert!(reason.contains("replica-a"), "{reason}");
    a.queue.finish(session).await.unwrap();
    assert_eq!(
        b.logs.append_events(session, 2, texts(1, 1)).await.unwrap(),
        2
    );
    db.drop().await;
}

/// Each replica's journal of turns in flight is its own: a replica starting again under
/// its id repairs the sessions it was running, not another's.
#[tokio::test]
async fn each_replica_repairs_only_its_own_turns_in_flight() {
    let Some(db) = TestDatabase::unmigrated().await else {
        return;
    };
    let (a, _keep_a) = open_replica(&db, "replica-a").await;
    let (b, _keep_b) = open_replica(&db, "replica-b").await;
    let (ja, jb) = (a.turn_journal(), b.turn_journal());
    let (s1, s2) = (
        new_session(&Stores::from(&a)).await,
        new_session(&Stores::from(&a)).await,
    );
    ja.turn_started(s1).await.unwrap();
    jb.turn_started(s2).await.unwrap();
    assert_eq!(ja.open_turns().await.unwrap(), [s1]);
    assert_eq!(jb.open_turns().await.unwrap(), [s2]);
    ja.turn_ended(s1).await.unwrap();
    assert!(ja.open_turns().await.unwrap().is_empty());
    match ja.turn_started(Uuid::now_v7()).await {
        Err(e) if e.is_not_found() => {}
        other => panic!("a turn of a session that does not exist: {other:?}"),
    }
    // Restarted under its id, b still finds the turn it had in flight.
    drop((b, jb));
    let (b, _keep_b2) = open_replica(&db, "replica-b").await;
    assert_eq!(b.turn_journal().open_turns().await.unwrap(), [s2]);
    db.drop().await;
}

/// A session quarantined through one replica is not served by the other at once, and is
/// in the other's report after its next heartbeat.
#[tokio::test]
async fn a_session_quarantined_on_one_replica_is_reported_by_the_other() {
    let Some(db) = TestDatabase::unmigrated().await else {
        return;
    };
    let ttl = Duration::from_millis(300);
    let (a, _keep_a) = open_replica(&db, "replica-a").await;
    let (b, _keep_b) = open_replica_with(&db, "replica-b", |c| c.lease_ttl = ttl).await;
    let (a, b) = (Stores::from(&a), Stores::from(&b));
    let session = new_session(&a).await;
    assert!(b.records.session(session).await.unwrap().is_some());
    a.records
        .quarantine_session(session, "unreadable on a".into())
        .await
        .unwrap();
    assert!(b.records.session(session).await.unwrap().is_none());
    let reported = tokio::time::timeout(PATIENCE, async {
        loop {
            let found = b
                .records
                .quarantined()
                .into_iter()
                .find(|q| q.session_id == session.to_string());
            if let Some(found) = found {
                return found;
            }
            tokio::time::sleep(ttl / 3).await;
        }
    })
    .await
    .expect("the other replica never reported the quarantined session");
    assert_eq!(reported.reason, "unreadable on a");
    db.drop().await;
}

/// Pushes racing on two replicas: each replica's own limit holds exactly (its pushes are
/// counted one at a time), and the cluster's limit is passed by at most one turn per other
/// replica pushing at the same moment.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_pushes_keep_each_replicas_limit_and_pass_the_clusters_by_at_most_one() {
    let Some(db) = TestDatabase::unmigrated().await else {
        return;
    };
    let limits = |config: &mut odyssey_store_postgres::StoreConfig| {
        config.queue_capacity = 4;
        config.cluster_queue_limit = 6;
    };
    let (a, _keep_a) = open_replica_with(&db, "replica-a", limits).await;
    let (b, _keep_b) = open_replica_with(&db, "replica-b", limits).await;
    let (a, b) = (Stores::from(&a), Stores::from(&b));
    let session = new_session(&a).await;
    let pushes = (0..24).map(|i| {
        let queue = if i % 2 == 0 {
            a.queue.clone()
        } else {
            b.queue.clone()
        };
        tokio::spawn(async move { queue.push(job(session), false).await })
    });
    let mut accepted: i64 = 0;
    for push in futures::future::join_all(pushes).await {
        match push.unwrap() {
            Ok(_) => accepted += 1,
            Err(SeamError::QueueFull { capacity: 4 | 6 }) => {}
            Err(e) => panic!("a push refused for another reason: {e}"),
        }
    }
    let mine = "SELECT count(*) FROM turns WHERE state = 'queued' AND submitted_by = ";
    let of_a = db.count(&format!("{mine}'replica-a'")).await;
    let of_b = db.count(&format!("{mine}'replica-b'")).await;
    assert!(of_a <= 4 && of_b <= 4, "a replica's limit: {of_a}, {of_b}");
    assert_eq!(of_a + of_b, accepted);
    assert!(
        (6..=7).contains(&accepted),
        "the cluster's limit of 6 with two replicas: {accepted} waiting"
    );
    db.drop().await;
}

/// The end of a turn a replica claimed, stored with its last events, ends the turn in the
/// queue and gives the session's lease back in the same statement: another replica claims
/// the session's next turn at once, and the first replica finishing the turn afterwards
/// ends nothing of that next one. The first replica's heartbeat, beating before it
/// finishes the turn, does not renew the lease given back.
#[tokio::test]
async fn the_append_of_a_turns_end_finishes_it_and_a_late_finish_spares_the_next_turn() {
    let Some(db) = TestDatabase::unmigrated().await else {
        return;
    };
    let ttl = Duration::from_secs(1);
    let (a, _keep_a) = open_replica_with(&db, "replica-a", |c| c.lease_ttl = ttl).await;
    let (b, _keep_b) = open_replica(&db, "replica-b").await;
    let (a, b) = (Stores::from(&a), Stores::from(&b));
    let session = new_session(&a).await;
    let first = job(session);
    let first_id = first.execution_id;
    a.queue.push(first, false).await.unwrap();
    assert_eq!(
        a.queue.claim_next().await.unwrap().map(|j| j.execution_id),
        Some(first_id)
    );
    // b's turn of the session waits behind a's running one (b's own queue; b is alive).
    let second = job(session);
    let second_id = second.execution_id;
    b.queue.push(second, false).await.unwrap();
    assert!(b.queue.claim_next().await.unwrap().is_none());
    let mut end = texts(2, 0);
    end[1].turn_id = Some(first_id);
    end[1].payload = EventPayload::TurnCompleted(TurnCompleted {
        outcome: TurnOutcome::Completed,
        response: "done".into(),
        error: String::new(),
        usage: Default::default(),
        messages: Vec::new(),
        model_calls: 1,
        reason: String::new(),
    });
    assert_eq!(a.logs.append_events(session, 1, end).await.unwrap(), 2);
    assert_eq!(
        db.count(&format!(
            "SELECT count(*) FROM turns WHERE id = '{first_id}' AND state = 'completed'"
        ))
        .await,
        1,
        "the append ended the turn"
    );
    // a's heartbeat beats a few times before a finishes the turn.
    tokio::time::sleep(ttl + ttl / 2).await;
    assert_eq!(
        b.queue.claim_next().await.unwrap().map(|j| j.execution_id),
        Some(second_id),
        "the lease came back with the end"
    );
    a.queue.finish(session).await.unwrap();
    assert_eq!(
        db.count(&format!(
            "SELECT count(*) FROM turns WHERE id = '{second_id}' AND state = 'running'"
        ))
        .await,
        1,
        "a's late finish leaves b's turn running"
    );
    assert_eq!(
        b.logs.append_events(session, 3, texts(1, 2)).await.unwrap(),
        3,
        "b's lease holds"
    );
    let reason = fenced_reason(a.logs.append_events(session, 4, texts(1, 3)).await);
    assert!(reason.contains("replica-b"), "{reason}");
    db.drop().await;
}
