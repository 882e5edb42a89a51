use std::time::Duration;

use odyssey_store_postgres::StoreError;

use crate::database::TestDatabase;
use crate::{events, session_id};

// Long enough that a loaded machine still makes the calls meant to fall within it; the
// tests that must see it run out sleep past it.
const SHORT: Duration = Duration::from_secs(1);
const LONG: Duration = Duration::from_secs(30);

#[tokio::test]
async fn a_write_under_an_expired_lease_is_refused_and_nothing_lands() {
    let Some(db) = TestDatabase::new().await else {
        return;
    };
    let id = session_id();
    db.store.create_session(&id, b"{}").await.unwrap();
    let lease = db
        .store
        .acquire_lease(&id, "replica-a", SHORT)
        .await
        .unwrap();
    db.store
        .append_events(&lease, 0, &events("a", 1))
        .await
        .unwrap();
    tokio::time::sleep(SHORT + Duration::from_millis(200)).await;

    let error = db
        .store
        .append_events(&lease, 1, &events("late", 3))
        .await
        .unwrap_err();
    assert!(
        matches!(error, StoreError::LeaseLost { epoch: 1, .. }),
        "{error}"
    );
    // Expired even though no one took it over: a heartbeat cannot bring it back.
    let error = db.store.renew_lease(&lease, LONG).await.unwrap_err();
    assert!(matches!(error, StoreError::LeaseLost { .. }), "{error}");
    assert_eq!(
        db.store.session(&id).await.unwrap().unwrap().last_sequence,
        1
    );
    assert_eq!(db.store.events_after(&id, 0, 100).await.unwrap().len(), 1);
    db.drop().await;
}

#[tokio::test]
async fn a_live_lease_is_not_taken_over_and_an_expired_one_is_with_a_new_epoch() {
    let Some(db) = TestDatabase::new().await else {
        return;
    };
    let (a, b) = (db.store.clone(), db.replica());
    let id = session_id();
    a.create_session(&id, b"{}").await.unwrap();
    let old = a.acquire_lease(&id, "replica-a", SHORT).await.unwrap();
    assert_eq!(old.epoch, 1);

    let error = b.acquire_lease(&id, "replica-b", LONG).await.unwrap_err();
    assert!(
        matches!(error, StoreError::LeaseHeld { ref holder, .. } if holder == "replica-a"),
        "{error}"
    );
    tokio::time::sleep(SHORT + Duration::from_millis(200)).await;
    let new = b.acquire_lease(&id, "replica-b", LONG).await.unwrap();
    assert_eq!(new.epoch, 2);
    assert_eq!(b.lease_holder(&id).await.unwrap(), Some(new.clone()));

    // The old holder, back from a pause, is fenced off: it writes nothing.
    let error = a.append_events(&old, 0, &events("a", 1)).await.unwrap_err();
    assert!(matches!(error, StoreError::LeaseLost { .. }), "{error}");
    assert_eq!(b.append_events(&new, 0, &events("b", 2)).await.unwrap(), 2);
    let log = b.events_after(&id, 0, 100).await.unwrap();
    assert!(log.iter().all(|e| e.kind == "b"), "{log:?}");
    // Releasing a lost lease changes nothing.
    a.release_lease(&old).await.unwrap();
    assert_eq!(b.lease_holder(&id).await.unwrap(), Some(new));
    db.drop().await;
}

#[tokio::test]
async fn heartbeats_keep_a_lease_and_a_release_frees_it_at_once() {
    let Some(db) = TestDatabase::new().await else {
        return;
    };
    let (a, b) = (db.store.clone(), db.replica());
    let id = session_id();
    a.create_session(&id, b"{}").await.unwrap();
    let first = a.acquire_lease(&id, "replica-a", SHORT).await.unwrap();
    let lease = a.renew_lease(&first, LONG).await.unwrap();
    assert_eq!(lease.epoch, first.epoch);
    assert!(
        lease.expires_at_ms >= first.expires_at_ms + 20_000,
        "{lease:?}"
    );
    // Past the first expiry, the heartbeat holds it.
    tokio::time::sleep(SHORT + Duration::from_millis(200)).await;
    let error = b.acquire_lease(&id, "replica-b", LONG).await.unwrap_err();
    assert!(matches!(error, StoreError::LeaseHeld { .. }), "{error}");
    assert_eq!(
        a.append_events(&lease, 0, &events("a", 1)).await.unwrap(),
        1
    );

    a.release_lease(&lease).await.unwrap();
    let taken = b.acquire_lease(&id, "replica-b", LONG).await.unwrap();
    assert_eq!(taken.epoch, 2);
    let error = a
        .append_events(&lease, 1, &events("a", 1))
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::LeaseLost { .. }), "{error}");
    db.drop().await;
}

/// The old holder keeps appending as fast as it can while its lease runs out and another
/// replica takes the session over: not one of its events may land after the takeover.
#[tokio::test]
async fn no_write_of_the_old_holder_lands_after_a_takeover_racing_it() {
    let Some(db) = TestDatabase::new().await else {
        return;
    };
    let (a, b) = (db.store.clone(), db.replica());
    let id = session_id();
    a.create_session(&id, b"{}").await.unwrap();
    let old = a.acquire_lease(&id, "replica-a", SHORT).await.unwrap();

    let writer = {
        let (a, id) = (a.clone(), id.clone());
        tokio::spawn(async move {
            let deadline = tokio::time::Instant::now() + crate::PATIENCE;
            let mut written = 0;
            loop {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "the old lease never ran out"
                );
                let last = a.session(&id).await.unwrap().unwrap().last_sequence;
                match a.append_events(&old, last, &events("a", 1)).await {
                    Ok(_) => written += 1,
                    Err(StoreError::SequenceConflict { .. }) => {}
                    Err(StoreError::LeaseLost { .. }) => return written,
                    Err(e) => panic!("{e}"),
                }
            }
        })
    };
    let taker = {
        let (b, id) = (b.clone(), id.clone());
        tokio::spawn(async move {
            loop {
                match b.acquire_lease(&id, "replica-b", LONG).await {
                    Ok(lease) => break lease,
                    Err(StoreError::LeaseHeld { .. }) => {
                        tokio::time::sleep(Duration::from_millis(5)).await
                    }
                    Err(e) => panic!("{e}"),
                }
            }
        })
    };
    let new = tokio::time::timeout(crate::PATIENCE, taker)
        .await
        .unwrap()
        .unwrap();
    let last = b.session(&id).await.unwrap().unwrap().last_sequence;
    b.append_events(&new, last, &events("b", 3)).await.unwrap();
    let written = tokio::time::timeout(crate::PATIENCE, writer)
        .await
        .unwrap()
        .unwrap();
    assert!(
        written > 0,
        "the old holder wrote nothing before its lease ran out"
    );

    let log = b.events_after(&id, 0, 100_000).await.unwrap();
    let first_b = log.iter().position(|e| e.kind == "b").unwrap();
    assert!(log[..first_b].iter().all(|e| e.kind == "a"));
    assert!(
        log[first_b..].iter().all(|e| e.kind == "b"),
        "an old write landed after the takeover"
    );
    assert_eq!(log.len(), written + 3);
    let sequences: Vec<i64> = log.iter().map(|e| e.sequence).collect();
    assert_eq!(sequences, (1..=log.len() as i64).collect::<Vec<_>>());
    db.drop().await;
}

/// A takeover in flight holds the lease row: an append of the old holder waits for it and,
/// once it commits, is refused (it never writes on the strength of the lease it read
/// before the takeover).
#[tokio::test]
async fn an_append_waits_for_a_takeover_in_flight_and_is_then_refused() {
    let Some(db) = TestDatabase::new().await else {
        return;
    };
    let id = session_id();
    db.store.create_session(&id, b"{}").await.unwrap();
    let old = db
        .store
        .acquire_lease(&id, "replica-a", LONG)
        .await
        .unwrap();

    let mut other = db.client().await;
    let takeover = other.transaction().await.unwrap();
    takeover
        .execute(
            "UPDATE session_leases SET holder = 'replica-b', epoch = epoch + 1 WHERE session_id = $1",
            &[&id],
        )
        .await
        .unwrap();
    let append = {
        let (store, old) = (db.replica(), old.clone());
        tokio::spawn(async move { store.append_events(&old, 0, &events("a", 1)).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !append.is_finished(),
        "the append did not wait for the takeover"
    );
    takeover.commit().await.unwrap();

    let error = tokio::time::timeout(crate::PATIENCE, append)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert!(matches!(error, StoreError::LeaseLost { .. }), "{error}");
    assert!(db.store.events_after(&id, 0, 10).await.unwrap().is_empty());
    db.drop().await;
}
