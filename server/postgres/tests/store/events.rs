use std::time::Duration;

use odyssey_store_postgres::StoreError;

use crate::database::TestDatabase;
use crate::{events, session_id};

const TTL: Duration = Duration::from_secs(30);

#[tokio::test]
async fn events_append_gap_free_and_read_back_after_a_sequence() {
    let Some(db) = TestDatabase::new().await else {
        return;
    };
    let id = session_id();
    db.store.create_session(&id, b"record").await.unwrap();
    let lease = db.store.acquire_lease(&id, "replica-a", TTL).await.unwrap();

    assert_eq!(
        db.store
            .append_events(&lease, 0, &events("a", 3))
            .await
            .unwrap(),
        3
    );
    assert_eq!(
        db.store
            .append_events(&lease, 3, &events("b", 2))
            .await
            .unwrap(),
        5
    );

    let after_two = db.store.events_after(&id, 2, 100).await.unwrap();
    let sequences: Vec<i64> = after_two.iter().map(|e| e.sequence).collect();
    assert_eq!(sequences, [3, 4, 5]);
    assert_eq!(after_two[0].body, b"a-3");
    assert_eq!(after_two[1].kind, "b");
    assert_eq!(db.store.events_after(&id, 0, 2).await.unwrap().len(), 2);
    assert!(db.store.events_after(&id, 5, 100).await.unwrap().is_empty());
    let session = db.store.session(&id).await.unwrap().unwrap();
    assert_eq!(session.last_sequence, 5);
    assert_eq!(session.record, b"record");
    db.drop().await;
}

#[tokio::test]
async fn an_append_after_a_stale_sequence_writes_nothing() {
    let Some(db) = TestDatabase::new().await else {
        return;
    };
    let id = session_id();
    db.store.create_session(&id, b"{}").await.unwrap();
    let lease = db.store.acquire_lease(&id, "replica-a", TTL).await.unwrap();
    db.store
        .append_events(&lease, 0, &events("a", 2))
        .await
        .unwrap();

    let error = db
        .store
        .append_events(&lease, 1, &events("late", 1))
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            StoreError::SequenceConflict {
                expected: 1,
                actual: 2,
                ..
            }
        ),
        "{error}"
    );
    assert_eq!(db.store.events_after(&id, 0, 100).await.unwrap().len(), 2);
    db.drop().await;
}

#[tokio::test]
async fn concurrent_appenders_under_one_lease_never_leave_a_gap_or_a_double() {
    let Some(db) = TestDatabase::new().await else {
        return;
    };
    let id = session_id();
    db.store.create_session(&id, b"{}").await.unwrap();
    let lease = db.store.acquire_lease(&id, "replica-a", TTL).await.unwrap();
    // Each writer appends after the last sequence it read; a conflict makes it read again.
    let writers = (0..4).map(|w| {
        let store = db.replica();
        let lease = lease.clone();
        let id = id.clone();
        async move {
            let mut written = 0;
            while written < 10 {
                let last = store.session(&id).await.unwrap().unwrap().last_sequence;
                match store
                    .append_events(&lease, last, &events(&format!("w{w}"), 1))
                    .await
                {
                    Ok(_) => written += 1,
                    Err(StoreError::SequenceConflict { .. }) => {}
                    Err(e) => panic!("{e}"),
                }
            }
        }
    });
    futures::future::join_all(writers).await;
    let log = db.store.events_after(&id, 0, 1000).await.unwrap();
    let sequences: Vec<i64> = log.iter().map(|e| e.sequence).collect();
    assert_eq!(sequences, (1..=40).collect::<Vec<i64>>());
    db.drop().await;
}

#[tokio::test]
async fn events_of_a_missing_session_are_refused_by_name() {
    let Some(db) = TestDatabase::new().await else {
        return;
    };
    let error = db
        .store
        .acquire_lease("nowhere", "replica-a", TTL)
        .await
        .unwrap_err();
    assert!(
        matches!(error, StoreError::SessionNotFound(ref id) if id == "nowhere"),
        "{error}"
    );
    let id = session_id();
    db.store.create_session(&id, b"{}").await.unwrap();
    let error = db.store.create_session(&id, b"{}").await.unwrap_err();
    assert!(matches!(error, StoreError::SessionExists(_)), "{error}");
    db.drop().await;
}
