//! What a replica shows of a turn another replica runs, as the replica running it shows
//! it: the watch of the pending requests, the session's state.

use odyssey_runtime::events::{
    ApprovalDecision, ApprovalResolution, EventPayload, INTERRUPTED_BY_INPUT, InputMode,
};
use odyssey_runtime::permissions::{ApprovalChange, ApprovalUpdate, ApprovalWatch};
use odyssey_runtime::session::SessionState;
use odyssey_runtime::{
    ExecutionRequest, ExecutionState, InputDisposition, InstallOptions, PageRequest, SessionFilter,
    SessionInput, SessionSpec,
};

use crate::PATIENCE;
use crate::database::TestDatabase;
use crate::signals::{ended, replica, waiting_turn, write_project};

async fn next(watch: &mut ApprovalWatch) -> ApprovalUpdate {
    tokio::time::timeout(PATIENCE, watch.next())
        .await
        .expect("the watch has an update")
        .expect("the watch goes on")
}

/// B watches the requests before A's turn asks: the request filed on A arrives as added,
/// its decision (made on B) as removed with how it ended; a watch opened on B after the
/// request was filed lists it first; a watch of another session sees none of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_watch_on_another_replica_follows_the_requests_of_a_turn() {
    let Some(db) = TestDatabase::new().await else {
        return;
    };
    let a = replica(&db, "replica-a").await;
    let b = replica(&db, "replica-b").await;
    let project = tempfile::tempdir().unwrap();
    write_project(project.path());
    let bundle = a
        .runtime
        .build_and_install(project.path(), InstallOptions::default())
        .await
        .unwrap();
    let session_id = a
        .runtime
        .create_session(SessionSpec::new(bundle.id.to_string()))
        .await
        .unwrap()
        .record
        .id;
    let other = a
        .runtime
        .create_session(SessionSpec::new(bundle.id.to_string()))
        .await
        .unwrap()
        .record
        .id;

    let mut early = b.runtime.watch_approvals_anywhere(None).await.unwrap();
    assert_eq!(next(&mut early).await, ApprovalUpdate::Snapshot(Vec::new()));
    let mut of_other = b
        .runtime
        .watch_approvals_anywhere(Some(other))
        .await
        .unwrap();
    assert_eq!(
        next(&mut of_other).await,
        ApprovalUpdate::Snapshot(Vec::new())
    );

    let execution_id = a
        .runtime
        .submit(ExecutionRequest {
            session_id,
            prompt: "echo hi".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .execution_id;
    let added = match next(&mut early).await {
        ApprovalUpdate::Change(ApprovalChange::Added(added)) => added,
        other => panic!("expected the request added, got {other:?}"),
    };
    assert_eq!(added.request.session_id, session_id);
    assert_eq!(added.request.execution_id, execution_id);
    assert_eq!(added.request.tool, "Echo");
    assert!(added.resolution.is_none());
    let on_a = a
        .runtime
        .list_approvals(Some(session_id), Default::default())
        .unwrap();
    assert_eq!(
        on_a.items[0].request_id, added.request_id,
        "the request A holds"
    );

    // Opened after the request was filed: it comes in the snapshot, first.
    let mut late = b
        .runtime
        .watch_approvals_anywhere(Some(session_id))
        .await
        .unwrap();
    match next(&mut late).await {
        ApprovalUpdate::Snapshot(listed) => {
            let ids: Vec<&str> = listed.iter().map(|a| a.request_id.as_str()).collect();
            assert_eq!(ids, [added.request_id.as_str()]);
        }
        other => panic!("expected a snapshot, got {other:?}"),
    }

    b.runtime
        .resolve_approval_anywhere(&added.request_id, ApprovalDecision::AllowOnce, "ok".into())
        .await
        .unwrap();
    for watch in [&mut early, &mut late] {
        match next(watch).await {
            ApprovalUpdate::Change(ApprovalChange::Removed(removed)) => {
                assert_eq!(removed.request_id, added.request_id);
                let resolution = removed.resolution.expect("how it ended");
                assert_eq!(resolution.resolution, ApprovalResolution::Decided);
                assert_eq!(resolution.decision, ApprovalDecision::AllowOnce);
                assert_eq!(resolution.reason, "ok");
            }
            other => panic!("expected the request removed, got {other:?}"),
        }
    }
    let status = ended(&a.runtime, execution_id).await;
    assert_eq!(status.state, ExecutionState::Completed, "{status:?}");
    // The other session's watch saw nothing of it.
    let quiet = tokio::time::timeout(std::time::Duration::from_millis(200), of_other.next()).await;
    assert!(quiet.is_err(), "{quiet:?}");
    db.drop().await;
}

/// While A's turn waits for a person, B (which runs nothing of it) reports the session
/// waiting for approval and the turn waiting, as A does, in GetSession and in the page of
/// ListSessions; an idle session is idle; once the turn ended, the session is idle on B.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_session_waiting_on_another_replica_is_reported_waiting() {
    let Some(db) = TestDatabase::new().await else {
        return;
    };
    let (a, b, session_id, execution_id, request_id) = waiting_turn(&db).await;
    let session = a.runtime.get_session(session_id).await.unwrap();
    let idle = a
        .runtime
        .create_session(SessionSpec::new(session.record.bundle_reference.clone()))
        .await
        .unwrap()
        .record
        .id;

    for replica in [&a, &b] {
        let info = replica.runtime.get_session(session_id).await.unwrap();
        assert_eq!(info.state, SessionState::WaitingForApproval);
        let page = replica
            .runtime
            .list_sessions(SessionFilter::default(), PageRequest::default())
            .await
            .unwrap();
        let state_of = |id| page.items.iter().find(|i| i.record.id == id).unwrap().state;
        assert_eq!(state_of(session_id), SessionState::WaitingForApproval);
        assert_eq!(state_of(idle), SessionState::Idle);
        let status = replica
            .runtime
            .find_execution_status(execution_id)
            .await
            .unwrap();
        assert_eq!(status.state, ExecutionState::WaitingApproval, "{status:?}");
        let status = replica
            .runtime
            .turn_status(session_id, execution_id)
            .await
            .unwrap();
        assert_eq!(status.state, ExecutionState::WaitingApproval, "{status:?}");
    }

    b.runtime
        .resolve_approval_anywhere(&request_id, ApprovalDecision::Deny, String::new())
        .await
        .unwrap();
    ended(&a.runtime, execution_id).await;
    // A closes the turn's row in the store right after its end.
    tokio::time::timeout(PATIENCE, async {
        while b.runtime.get_session(session_id).await.unwrap().state != SessionState::Idle {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the session is idle on B once the turn ended");
    db.drop().await;
}

/// Input sent to B in interrupt mode while A's turn waits: A stops its turn for it (ended
/// cancelled, with the reason a local interrupt gives), B's receipt says so, and the new
/// turn is the session's next.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn input_that_interrupts_a_turn_on_another_replica_stops_it_there() {
    let Some(db) = TestDatabase::new().await else {
        return;
    };
    let (a, b, session_id, execution_id, _request_id) = waiting_turn(&db).await;

    let receipt = tokio::time::timeout(
        PATIENCE,
        b.runtime.send_input(SessionInput {
            session_id,
            text: "stop, and do this instead".into(),
            mode: InputMode::Interrupt,
        }),
    )
    .await
    .expect("the interrupt is answered")
    .unwrap();
    assert_eq!(
        receipt.disposition,
        InputDisposition::Interrupted,
        "{receipt:?}"
    );
    assert_eq!(receipt.interrupted_execution_id, Some(execution_id));
    assert_ne!(receipt.execution_id, execution_id);

    let stopped = ended(&a.runtime, execution_id).await;
    assert_eq!(stopped.state, ExecutionState::Cancelled, "{stopped:?}");
    assert!(
        stopped.error.contains(&receipt.execution_id.to_string()),
        "{stopped:?}"
    );
    // Its end in the log, as B reads it, names why.
    let mut log = b.runtime.subscribe_session(session_id, 0).await.unwrap();
    let reason = 'found: loop {
        let batch = tokio::time::timeout(PATIENCE, log.next_batch())
            .await
            .expect("the turn's end is in the log")
            .unwrap()
            .unwrap();
        for event in batch {
            if let EventPayload::TurnCompleted(done) = &event.payload
                && event.turn_id == Some(execution_id)
            {
                break 'found done.reason.clone();
            }
        }
    };
    assert_eq!(reason, INTERRUPTED_BY_INPUT);

    // The new turn runs next (on whichever replica claims it), and is cancelled here.
    let next = tokio::time::timeout(PATIENCE, async {
        loop {
            let status = b
                .runtime
                .find_execution_status(receipt.execution_id)
                .await
                .unwrap();
            if status.state != ExecutionState::Queued {
                return status;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the new turn starts");
    assert_eq!(next.session_id, session_id);
    b.runtime.cancel(receipt.execution_id).await.unwrap();
    db.drop().await;
}

/// Input sent to B in steer mode while A's turn waits: A records it in that turn, as
/// input sent to A would be, and B's receipt names the turn it joined.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn input_steered_on_another_replica_joins_the_turn_where_it_runs() {
    let Some(db) = TestDatabase::new().await else {
        return;
    };
    let (a, b, session_id, execution_id, _request_id) = waiting_turn(&db).await;

    let receipt = tokio::time::timeout(
        PATIENCE,
        b.runtime.send_input(SessionInput {
            session_id,
            text: "and mind the tests".into(),
            mode: InputMode::Steer,
        }),
    )
    .await
    .expect("the input is answered")
    .unwrap();
    assert_eq!(
        receipt.disposition,
        InputDisposition::Steered,
        "{receipt:?}"
    );
    assert_eq!(receipt.execution_id, execution_id);
    assert_eq!(receipt.interrupted_execution_id, None);

    // In A's log, in A's turn, as input sent to A is recorded.
    let mut log = a.runtime.subscribe_session(session_id, 0).await.unwrap();
    'found: loop {
        let batch = tokio::time::timeout(PATIENCE, log.next_batch())
            .await
            .expect("the input is in A's log")
            .unwrap()
            .unwrap();
        for event in batch {
            if let EventPayload::UserInputAdded { text, mode } = &event.payload {
                assert_eq!(text, "and mind the tests");
                assert_eq!(*mode, InputMode::Steer);
                assert_eq!(event.turn_id, Some(execution_id));
                break 'found;
            }
        }
    }
    a.runtime.cancel(execution_id).await.unwrap();
    db.drop().await;
}
