use odyssey_store_postgres::{ApprovalAnswer, StoreError, StoredApproval};

use crate::database::TestDatabase;
use crate::session_id;

fn approval(id: &str, session_id: &str) -> StoredApproval {
    StoredApproval {
        id: id.to_owned(),
        session_id: session_id.to_owned(),
        turn_id: "t1".to_owned(),
        request: format!("call {id}").into_bytes(),
    }
}

#[tokio::test]
async fn an_approval_is_answered_once_from_any_replica() {
    let Some(db) = TestDatabase::new().await else {
        return;
    };
    let (running, other) = (db.store.clone(), db.replica());
    let s = session_id();
    running.create_session(&s, b"{}").await.unwrap();
    running.add_approval(&approval("a1", &s)).await.unwrap();
    running.add_approval(&approval("a2", &s)).await.unwrap();
    let error = running.add_approval(&approval("a1", &s)).await.unwrap_err();
    assert!(matches!(error, StoreError::ApprovalExists(_)), "{error}");
    let error = running
        .add_approval(&approval("a3", "nowhere"))
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::SessionNotFound(_)), "{error}");

    let pending = other.pending_approvals(&s).await.unwrap();
    assert_eq!(pending, [approval("a1", &s), approval("a2", &s)]);
    assert_eq!(running.approval_answer("a1").await.unwrap(), None);

    other
        .decide_approval("a1", ApprovalAnswer::Allowed, b"by ops")
        .await
        .unwrap();
    // A second answer, from any replica, does not replace the first.
    let error = running
        .decide_approval("a1", ApprovalAnswer::Denied, b"late")
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::ApprovalDecided(_)), "{error}");
    assert_eq!(
        running.approval_answer("a1").await.unwrap(),
        Some((ApprovalAnswer::Allowed, b"by ops".to_vec()))
    );
    let error = other
        .decide_approval("nope", ApprovalAnswer::Denied, b"")
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::ApprovalNotFound(_)), "{error}");
    assert_eq!(
        other.pending_approvals(&s).await.unwrap(),
        [approval("a2", &s)]
    );
    db.drop().await;
}
