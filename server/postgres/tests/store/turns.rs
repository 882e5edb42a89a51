use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use odyssey_store_postgres::{StoreError, TurnState};

use crate::database::TestDatabase;
use crate::session_id;

#[tokio::test]
async fn turns_run_one_at_a_time_per_session_in_submission_order() {
    let Some(db) = TestDatabase::new().await else {
        return;
    };
    let store = &db.store;
    let (s1, s2) = (session_id(), session_id());
    for s in [&s1, &s2] {
        store.create_session(s, b"{}").await.unwrap();
    }
    store.submit_turn("t1", &s1, b"first").await.unwrap();
    store.submit_turn("t2", &s1, b"second").await.unwrap();
    store.submit_turn("u1", &s2, b"other").await.unwrap();
    store.submit_turn("t3", &s1, b"third").await.unwrap();

    let first = store.claim_next_turn("replica-a").await.unwrap().unwrap();
    assert_eq!(
        (first.id.as_str(), first.request.as_slice()),
        ("t1", &b"first"[..])
    );
    // s1 has a running turn, so its next one waits; s2's may run.
    let second = store.claim_next_turn("replica-b").await.unwrap().unwrap();
    assert_eq!(second.id, "u1");
    assert_eq!(store.claim_next_turn("replica-b").await.unwrap(), None);
    assert_eq!(store.queued_turns(&s1).await.unwrap(), ["t2", "t3"]);

    // Only the replica running a turn finishes it.
    let error = store
        .finish_turn("t1", "replica-b", TurnState::Completed)
        .await
        .unwrap_err();
    assert!(
        matches!(error, StoreError::TurnNotRunning { .. }),
        "{error}"
    );
    store
        .finish_turn("t1", "replica-a", TurnState::Completed)
        .await
        .unwrap();
    assert_eq!(
        store
            .claim_next_turn("replica-b")
            .await
            .unwrap()
            .unwrap()
            .id,
        "t2"
    );
    store
        .finish_turn("t2", "replica-b", TurnState::Failed)
        .await
        .unwrap();
    assert_eq!(
        store
            .claim_next_turn("replica-a")
            .await
            .unwrap()
            .unwrap()
            .id,
        "t3"
    );
    db.drop().await;
}

#[tokio::test]
async fn a_turn_is_refused_for_a_missing_session_or_a_taken_id() {
    let Some(db) = TestDatabase::new().await else {
        return;
    };
    let error = db
        .store
        .submit_turn("t1", "nowhere", b"{}")
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::SessionNotFound(_)), "{error}");
    let s = session_id();
    db.store.create_session(&s, b"{}").await.unwrap();
    db.store.submit_turn("t1", &s, b"{}").await.unwrap();
    let error = db.store.submit_turn("t1", &s, b"{}").await.unwrap_err();
    assert!(matches!(error, StoreError::TurnExists(_)), "{error}");
    db.drop().await;
}

/// Eight claimers on two replicas race over three sessions' turns: never two running
/// turns of one session, each session's turns in submission order, each turn run once.
#[tokio::test]
async fn claimers_racing_never_run_two_turns_of_a_session() {
    let Some(db) = TestDatabase::new().await else {
        return;
    };
    let sessions: Vec<String> = (0..3).map(|_| session_id()).collect();
    let mut submitted: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for s in &sessions {
        db.store.create_session(s, b"{}").await.unwrap();
    }
    for i in 0..8 {
        for s in &sessions {
            let id = format!("{s}/{i}");
            db.store.submit_turn(&id, s, b"{}").await.unwrap();
            submitted.entry(s.clone()).or_default().push(id);
        }
    }
    let total: usize = submitted.values().map(Vec::len).sum();
    let running: Arc<Mutex<HashSet<String>>> = Arc::default();
    let ran: Arc<Mutex<BTreeMap<String, Vec<String>>>> = Arc::default();
    let replicas = [db.store.clone(), db.replica()];
    let claimers = (0..8).map(|c| {
        let store = replicas[c % 2].clone();
        let (running, ran) = (running.clone(), ran.clone());
        let replica = format!("replica-{}", c % 2);
        async move {
            let deadline = tokio::time::Instant::now() + crate::PATIENCE;
            loop {
                let done: usize = ran.lock().unwrap().values().map(Vec::len).sum();
                if done == total {
                    return;
                }
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "the turns did not all run"
                );
                let Some(turn) = store.claim_next_turn(&replica).await.unwrap() else {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    continue;
                };
                assert!(
                    running.lock().unwrap().insert(turn.session_id.clone()),
                    "two turns of {} ran at once",
                    turn.session_id
                );
                ran.lock()
                    .unwrap()
                    .entry(turn.session_id.clone())
                    .or_default()
                    .push(turn.id.clone());
                tokio::time::sleep(Duration::from_millis(3)).await;
                running.lock().unwrap().remove(&turn.session_id);
                store
                    .finish_turn(&turn.id, &replica, TurnState::Completed)
                    .await
                    .unwrap();
            }
        }
    });
    futures::future::join_all(claimers).await;
    assert_eq!(*ran.lock().unwrap(), submitted);
    assert_eq!(
        db.count("SELECT count(*) FROM turns WHERE state <> 'completed'")
            .await,
        0
    );
    db.drop().await;
}

#[tokio::test]
async fn the_running_turn_of_a_silent_replica_is_interrupted_and_the_next_one_runs_elsewhere() {
    let Some(db) = TestDatabase::new().await else {
        return;
    };
    let (a, b) = (db.store.clone(), db.replica());
    let (s1, s2) = (session_id(), session_id());
    for s in [&s1, &s2] {
        a.create_session(s, b"{}").await.unwrap();
    }
    a.submit_turn("t1", &s1, b"{}").await.unwrap();
    a.submit_turn("t2", &s1, b"{}").await.unwrap();
    b.submit_turn("u1", &s2, b"{}").await.unwrap();
    a.replica_alive("replica-a").await.unwrap();
    b.replica_alive("replica-b").await.unwrap();
    assert_eq!(
        a.claim_next_turn("replica-a").await.unwrap().unwrap().id,
        "t1"
    );
    assert_eq!(
        b.claim_next_turn("replica-b").await.unwrap().unwrap().id,
        "u1"
    );

    // replica-a dies; replica-b keeps saying it is alive.
    let silence = Duration::from_secs(1);
    assert!(
        b.interrupt_abandoned_turns(silence)
            .await
            .unwrap()
            .is_empty()
    );
    tokio::time::sleep(silence + Duration::from_millis(200)).await;
    b.replica_alive("replica-b").await.unwrap();
    let interrupted = b.interrupt_abandoned_turns(silence).await.unwrap();
    let ids: Vec<&str> = interrupted.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["t1"]);
    assert_eq!(interrupted[0].session_id, s1);
    assert_eq!(
        db.count("SELECT count(*) FROM turns WHERE id = 't1' AND state = 'interrupted'")
            .await,
        1
    );
    assert_eq!(
        b.claim_next_turn("replica-b").await.unwrap().unwrap().id,
        "t2"
    );
    // What the dead replica would still say about its turn is refused.
    let error = a
        .finish_turn("t1", "replica-a", TurnState::Completed)
        .await
        .unwrap_err();
    assert!(
        matches!(error, StoreError::TurnNotRunning { .. }),
        "{error}"
    );
    db.drop().await;
}

/// A claimer in the middle of claiming a session's first turn holds its row: another
/// claimer skips that session (not jumping to its second turn) and takes another's.
#[tokio::test]
async fn a_claimer_never_jumps_over_a_turn_another_is_claiming() {
    let Some(db) = TestDatabase::new().await else {
        return;
    };
    let (s1, s2) = (session_id(), session_id());
    for s in [&s1, &s2] {
        db.store.create_session(s, b"{}").await.unwrap();
    }
    db.store.submit_turn("t1", &s1, b"{}").await.unwrap();
    db.store.submit_turn("t2", &s1, b"{}").await.unwrap();
    db.store.submit_turn("u1", &s2, b"{}").await.unwrap();

    let mut other = db.client().await;
    let claiming = other.transaction().await.unwrap();
    claiming
        .execute("SELECT 1 FROM turns WHERE id = 't1' FOR UPDATE", &[])
        .await
        .unwrap();
    let claimed = tokio::time::timeout(crate::PATIENCE, db.store.claim_next_turn("replica-b"))
        .await
        .expect("a claim waited on a locked turn")
        .unwrap();
    assert_eq!(claimed.unwrap().id, "u1");
    assert_eq!(db.store.claim_next_turn("replica-b").await.unwrap(), None);
    claiming.rollback().await.unwrap();
    assert_eq!(
        db.store
            .claim_next_turn("replica-b")
            .await
            .unwrap()
            .unwrap()
            .id,
        "t1"
    );
    db.drop().await;
}
