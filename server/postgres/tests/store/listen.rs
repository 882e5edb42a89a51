use std::time::Duration;

use odyssey_store_postgres::{ApprovalAnswer, EventsAppended, StoredApproval, Wake};

use crate::database::TestDatabase;
use crate::{PATIENCE, events, session_id};

#[tokio::test]
async fn a_follower_is_woken_by_an_append_of_another_replica() {
    let Some(db) = TestDatabase::new().await else {
        return;
    };
    let writer = db.replica();
    let mut listener = db.store.listen_for_events().await.unwrap();
    let id = session_id();
    writer.create_session(&id, b"{}").await.unwrap();
    let lease = writer
        .acquire_lease(&id, "replica-a", Duration::from_secs(30))
        .await
        .unwrap();
    writer
        .append_events(&lease, 0, &events("a", 3))
        .await
        .unwrap();
    writer
        .append_events(&lease, 3, &events("b", 1))
        .await
        .unwrap();

    // Other tests share the database and its channel: only this session counts. One
    // wake-up per append, with the log's last sequence.
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let woken = tokio::time::timeout(PATIENCE, listener.next())
            .await
            .expect("no wake-up came")
            .unwrap();
        match woken {
            Wake::Events(appended) if appended.session_id == id => seen.push(appended),
            _ => {}
        }
    }
    let at = |last_sequence| EventsAppended {
        session_id: id.clone(),
        last_sequence,
    };
    assert_eq!(seen, [at(3), at(4)]);
    // What the wake-up points at is there to read.
    assert_eq!(
        db.store.events_after(&id, 3, 10).await.unwrap()[0].kind,
        "b"
    );
    db.drop().await;
}

#[tokio::test]
async fn the_replica_running_a_turn_is_woken_by_an_answer_given_on_another() {
    let Some(db) = TestDatabase::new().await else {
        return;
    };
    let answering = db.replica();
    let mut listener = db.store.listen_for_events().await.unwrap();
    let id = session_id();
    db.store.create_session(&id, b"{}").await.unwrap();
    let approval_id = format!("{id}/a1");
    db.store
        .add_approval(&StoredApproval {
            id: approval_id.clone(),
            session_id: id.clone(),
            turn_id: "t1".to_owned(),
            request: b"call".to_vec(),
        })
        .await
        .unwrap();
    answering
        .decide_approval(&approval_id, ApprovalAnswer::Denied, b"no")
        .await
        .unwrap();
    let expected = Wake::ApprovalAnswered {
        approval_id: approval_id.clone(),
    };
    loop {
        let woken = tokio::time::timeout(PATIENCE, listener.next())
            .await
            .expect("no wake-up came")
            .unwrap();
        if woken == expected {
            break;
        }
    }
    assert_eq!(
        db.store.approval_answer(&approval_id).await.unwrap(),
        Some((ApprovalAnswer::Denied, b"no".to_vec()))
    );
    db.drop().await;
}
