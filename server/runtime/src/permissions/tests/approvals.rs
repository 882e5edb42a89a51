//! The approval store: decisions, errors, timeouts, cancellation, forgetting, remembering.

use std::time::Duration;

use serde_json::json;
use uuid::Uuid;

use crate::error::ErrorKind;
use crate::events::{ApprovalDecision, ApprovalResolution};
use crate::paging::PageRequest;
use crate::permissions::{
    ApprovalError, ApprovalStore, ApprovalWaiter, PendingApproval, Resolution,
};

fn pending(
    session: Uuid,
    execution: Uuid,
    tool: &str,
    arguments: serde_json::Value,
) -> PendingApproval {
    PendingApproval {
        session_id: session,
        execution_id: execution,
        call_id: "call-1".to_owned(),
        tool: tool.to_owned(),
        summary: arguments.to_string(),
        display: crate::permissions::display_call(None, &arguments),
        arguments,
        reason: "no rule allows it".to_owned(),
        parent_session_ids: Vec::new(),
        input: None,
    }
}

fn bash(session: Uuid, execution: Uuid, command: &str) -> PendingApproval {
    pending(
        session,
        execution,
        "Bash",
        json!({ "command": command, "timeout_ms": 1000 }),
    )
}

/// Awaits a waiter, failing the test instead of hanging if it never resolves.
async fn outcome(waiter: ApprovalWaiter) -> Resolution {
    tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .unwrap_or_else(|_| panic!("the waiter never resolved"))
}

fn pending_ids(store: &ApprovalStore, session: Option<Uuid>) -> Vec<String> {
    store
        .list(session, &PageRequest::default())
        .unwrap_or_else(|e| panic!("{e}"))
        .items
        .into_iter()
        .map(|a| a.request_id)
        .collect()
}

#[test]
fn the_store_is_shared_across_tasks() {
    fn shared<T: Send + Sync + Clone + 'static>() {}
    fn sendable<T: Send + 'static>() {}
    shared::<ApprovalStore>();
    sendable::<ApprovalWaiter>();
}

#[tokio::test]
async fn each_decision_reaches_the_waiter() {
    let store = ApprovalStore::default();
    let (session, execution) = (Uuid::new_v4(), Uuid::new_v4());
    let cases = [
        (ApprovalDecision::AllowOnce, "", true),
        (ApprovalDecision::AllowAlways, "", true),
        (ApprovalDecision::Deny, "not on main", false),
    ];
    for (decision, reason, allows) in cases {
        let (id, waiter) = store.request(bash(session, execution, "rm x"));
        assert_eq!(pending_ids(&store, None), std::slice::from_ref(&id));
        let approval = store
            .resolve(&id, decision, reason)
            .unwrap_or_else(|e| panic!("{e}"));
        let expected = Resolution {
            decision,
            resolution: ApprovalResolution::Decided,
            reason: reason.to_owned(),
            input: None,
        };
        assert_eq!(approval.resolution.as_ref(), Some(&expected));
        assert_eq!(approval.request.tool, "Bash");
        let resolved = outcome(waiter).await;
        assert_eq!(resolved, expected);
        assert_eq!(resolved.allows(), allows);
        assert!(pending_ids(&store, None).is_empty());
    }
}

#[tokio::test]
async fn unknown_and_repeated_resolves_change_nothing() {
    let store = ApprovalStore::default();
    let (session, execution) = (Uuid::new_v4(), Uuid::new_v4());

    let err = store
        .resolve("no-such-request", ApprovalDecision::AllowOnce, "")
        .err()
        .unwrap_or_else(|| panic!("resolved an unknown id"));
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert_eq!(err.reason(), "APPROVAL_NOT_FOUND");

    let (id, waiter) = store.request(bash(session, execution, "rm x"));
    store
        .resolve(&id, ApprovalDecision::Deny, "no")
        .unwrap_or_else(|e| panic!("{e}"));
    let again = store.resolve(&id, ApprovalDecision::AllowAlways, "");
    let Err(err @ ApprovalError::AlreadyResolved { .. }) = again else {
        panic!("second resolve: {again:?}");
    };
    assert_eq!(err.kind(), ErrorKind::FailedPrecondition);
    assert_eq!(err.reason(), "APPROVAL_ALREADY_RESOLVED");
    // The first decision stands and the second was not remembered.
    assert_eq!(outcome(waiter).await.decision, ApprovalDecision::Deny);
    let args = json!({ "command": "rm x" });
    assert!(!store.is_remembered(session, "Bash", &args));
    assert_eq!(
        store.get(&id).err().map(|e| e.kind()),
        Some(ErrorKind::FailedPrecondition)
    );
}

#[tokio::test]
async fn an_unanswered_request_times_out_as_denied() {
    let store = ApprovalStore::new(Duration::from_millis(50));
    let (session, execution) = (Uuid::new_v4(), Uuid::new_v4());
    let (id, waiter) = store.request(bash(session, execution, "rm x"));
    let resolved = outcome(waiter).await;
    assert_eq!(resolved.decision, ApprovalDecision::Deny);
    assert_eq!(resolved.resolution, ApprovalResolution::TimedOut);
    assert!(
        resolved.reason.contains("no decision within 50 ms"),
        "{}",
        resolved.reason
    );
    let late = store.resolve(&id, ApprovalDecision::AllowOnce, "");
    assert!(
        matches!(
            late,
            Err(ApprovalError::AlreadyResolved {
                resolution: ApprovalResolution::TimedOut,
                ..
            })
        ),
        "{late:?}"
    );
}

#[tokio::test]
async fn an_overdue_request_is_not_listed_even_if_nobody_waits() {
    let store = ApprovalStore::new(Duration::from_millis(30));
    let (id, waiter) = store.request(bash(Uuid::new_v4(), Uuid::new_v4(), "rm x"));
    tokio::time::sleep(Duration::from_millis(60)).await;
    assert!(pending_ids(&store, None).is_empty());
    assert!(matches!(
        store.resolve(&id, ApprovalDecision::AllowOnce, ""),
        Err(ApprovalError::AlreadyResolved {
            resolution: ApprovalResolution::TimedOut,
            ..
        })
    ));
    // The waiter, polled late, reports the same ending.
    assert_eq!(
        outcome(waiter).await.resolution,
        ApprovalResolution::TimedOut
    );
}

#[tokio::test]
async fn cancelling_an_execution_ends_only_its_requests() {
    let store = ApprovalStore::default();
    let session = Uuid::new_v4();
    let (cancelled, other) = (Uuid::new_v4(), Uuid::new_v4());
    let (_, first) = store.request(bash(session, cancelled, "rm a"));
    let (_, second) = store.request(bash(session, cancelled, "rm b"));
    let (kept, third) = store.request(bash(session, other, "rm c"));

    let ended = store.cancel_execution(cancelled);
    assert_eq!(ended.len(), 2);
    for waiter in [first, second] {
        let resolved = outcome(waiter).await;
        assert_eq!(resolved.resolution, ApprovalResolution::Cancelled);
        assert_eq!(resolved.decision, ApprovalDecision::Deny);
    }
    assert_eq!(pending_ids(&store, None), std::slice::from_ref(&kept));
    store
        .resolve(&kept, ApprovalDecision::AllowOnce, "")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(outcome(third).await.decision, ApprovalDecision::AllowOnce);
}

#[tokio::test]
async fn allow_always_is_remembered_for_the_exact_call_in_its_session() {
    let store = ApprovalStore::default();
    let (session, other_session, execution) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());

    let (id, _waiter) = store.request(bash(session, execution, "rm -rf build"));
    store
        .resolve(&id, ApprovalDecision::AllowAlways, "")
        .unwrap_or_else(|e| panic!("{e}"));
    let write = json!({ "path": "data/a.txt", "content_sha256": "ab12", "content_bytes": 4 });
    let (id, _waiter) = store.request(pending(session, execution, "Write", write.clone()));
    store
        .resolve(&id, ApprovalDecision::AllowAlways, "")
        .unwrap_or_else(|e| panic!("{e}"));
    let (id, _waiter) = store.request(bash(session, execution, "rm once"));
    store
        .resolve(&id, ApprovalDecision::AllowOnce, "")
        .unwrap_or_else(|e| panic!("{e}"));

    #[rustfmt::skip]
    let table: &[(Uuid, &str, serde_json::Value, bool)] = &[
        // Bash: the exact command, whatever the timeout.
        (session, "Bash", json!({ "command": "rm -rf build" }), true),
        (session, "Bash", json!({ "command": "rm -rf build", "timeout_ms": 5 }), true),
        (session, "Bash", json!({ "command": "rm -rf build " }), false),
        (session, "Bash", json!({ "command": "rm -rf build; rm -rf /" }), false),
        (session, "Bash", json!({ "command": "rm -rf" }), false),
        (session, "Bash", json!({ "command": "rm once" }), false),
        (other_session, "Bash", json!({ "command": "rm -rf build" }), false),
        // Other tools: the exact arguments, in any key order.
        (session, "Write", json!({ "content_bytes": 4, "content_sha256": "ab12", "path": "data/a.txt" }), true),
        (session, "Write", json!({ "path": "data/a.txt", "content_sha256": "ffff", "content_bytes": 4 }), false),
        (session, "Edit", write.clone(), false),
    ];
    for (session_id, tool, arguments, remembered) in table {
        assert_eq!(
            store.is_remembered(*session_id, tool, arguments),
            *remembered,
            "{tool} {arguments}"
        );
    }
}

#[tokio::test]
async fn forgetting_a_session_drops_its_requests_and_memory() {
    let store = ApprovalStore::default();
    let (deleted, kept, execution) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    let (id, _waiter) = store.request(bash(deleted, execution, "ls"));
    store
        .resolve(&id, ApprovalDecision::AllowAlways, "")
        .unwrap_or_else(|e| panic!("{e}"));
    let (_, waiting) = store.request(bash(deleted, execution, "rm x"));
    let (kept_id, _kept_waiter) = store.request(bash(kept, Uuid::new_v4(), "rm y"));

    let ended = store.forget_session(deleted);
    assert_eq!(ended.len(), 1);
    assert_eq!(
        outcome(waiting).await.resolution,
        ApprovalResolution::Cancelled
    );
    assert!(!store.is_remembered(deleted, "Bash", &json!({ "command": "ls" })));
    assert_eq!(pending_ids(&store, None), [kept_id]);
}

#[tokio::test]
async fn dropping_the_waiter_cancels_the_request() {
    let store = ApprovalStore::default();
    let (id, waiter) = store.request(bash(Uuid::new_v4(), Uuid::new_v4(), "rm x"));
    drop(waiter);
    assert!(pending_ids(&store, None).is_empty());
    assert!(matches!(
        store.resolve(&id, ApprovalDecision::AllowOnce, ""),
        Err(ApprovalError::AlreadyResolved {
            resolution: ApprovalResolution::Cancelled,
            ..
        })
    ));
}

#[tokio::test]
async fn shutdown_interrupts_every_pending_request() {
    let store = ApprovalStore::default();
    let (_, a) = store.request(bash(Uuid::new_v4(), Uuid::new_v4(), "rm a"));
    let (_, b) = store.request(bash(Uuid::new_v4(), Uuid::new_v4(), "rm b"));
    assert_eq!(store.interrupt_all().len(), 2);
    for waiter in [a, b] {
        assert_eq!(
            outcome(waiter).await.resolution,
            ApprovalResolution::Interrupted
        );
    }
}

#[tokio::test]
async fn listing_is_oldest_first_filtered_and_paged() {
    let store = ApprovalStore::default();
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    let mut waiters = Vec::new();
    let mut of_a = Vec::new();
    for i in 0..5 {
        let session = if i % 2 == 0 { a } else { b };
        let (id, waiter) = store.request(bash(session, Uuid::new_v4(), &format!("rm {i}")));
        if session == a {
            of_a.push(id);
        }
        waiters.push(waiter);
    }
    assert_eq!(pending_ids(&store, None).len(), 5);
    assert_eq!(pending_ids(&store, Some(a)), of_a);

    let mut paged = Vec::new();
    let mut token = None;
    loop {
        let page = store
            .list(
                Some(a),
                &PageRequest {
                    size: 2,
                    token: token.clone(),
                },
            )
            .unwrap_or_else(|e| panic!("{e}"));
        paged.extend(page.items.into_iter().map(|x| x.request_id));
        token = page.next_token;
        if token.is_none() {
            break;
        }
    }
    assert_eq!(paged, of_a);

    let bad = store.list(
        None,
        &PageRequest {
            size: 1,
            token: Some("!!".to_owned()),
        },
    );
    assert_eq!(
        bad.err().map(|e| e.kind()),
        Some(ErrorKind::InvalidArgument)
    );
}

/// The next update of a watch, failing the test instead of hanging.
async fn next_update(
    watch: &mut crate::permissions::ApprovalWatch,
) -> crate::permissions::ApprovalUpdate {
    tokio::time::timeout(Duration::from_secs(10), watch.next())
        .await
        .unwrap_or_else(|_| panic!("no update came"))
        .unwrap_or_else(|| panic!("the watch ended"))
}

#[tokio::test]
async fn a_watch_starts_with_the_pending_requests_then_follows_filed_and_ended_ones() {
    use crate::permissions::{ApprovalChange, ApprovalUpdate};
    let store = ApprovalStore::default();
    let (session, other) = (Uuid::new_v4(), Uuid::new_v4());
    let (first, _w1) = store.request(bash(session, Uuid::new_v4(), "rm a"));
    let (_, _w2) = store.request(bash(other, Uuid::new_v4(), "rm b"));
    let mut all = store.watch(None);
    let mut mine = store.watch(Some(session));
    match next_update(&mut all).await {
        ApprovalUpdate::Snapshot(s) => assert_eq!(s.len(), 2),
        u => panic!("expected a snapshot, got {u:?}"),
    }
    match next_update(&mut mine).await {
        ApprovalUpdate::Snapshot(s) => {
            assert_eq!(
                s.iter().map(|a| &a.request_id).collect::<Vec<_>>(),
                [&first]
            );
        }
        u => panic!("expected a snapshot, got {u:?}"),
    }
    // Filed in the other session: only the unfiltered watch sees it.
    let (third, w3) = store.request(bash(other, Uuid::new_v4(), "rm c"));
    match next_update(&mut all).await {
        ApprovalUpdate::Change(ApprovalChange::Added(a)) => assert_eq!(a.request_id, third),
        u => panic!("expected the added request, got {u:?}"),
    }
    // Decided elsewhere: removed, with how it ended.
    store
        .resolve(&first, ApprovalDecision::Deny, "not today")
        .unwrap_or_else(|e| panic!("{e}"));
    for watch in [&mut all, &mut mine] {
        match next_update(watch).await {
            ApprovalUpdate::Change(ApprovalChange::Removed(a)) => {
                assert_eq!(a.request_id, first);
                let resolution = a.resolution.unwrap_or_else(|| panic!("no resolution"));
                assert_eq!(resolution.decision, ApprovalDecision::Deny);
                assert_eq!(resolution.reason, "not today");
            }
            u => panic!("expected the removed request, got {u:?}"),
        }
    }
    // A waiter dropped (its turn stopped) ends its request too.
    drop(w3);
    match next_update(&mut all).await {
        ApprovalUpdate::Change(ApprovalChange::Removed(a)) => {
            assert_eq!(a.request_id, third);
            assert_eq!(
                a.resolution.map(|r| r.resolution),
                Some(ApprovalResolution::Cancelled)
            );
        }
        u => panic!("expected the cancelled request, got {u:?}"),
    }
    assert!(!store.has_pending(session));
    assert!(store.has_pending(other));
}

#[tokio::test]
async fn a_watch_that_falls_behind_is_sent_a_fresh_snapshot() {
    use crate::permissions::ApprovalUpdate;
    let store = ApprovalStore::default();
    let session = Uuid::new_v4();
    let mut watch = store.watch(None);
    assert_eq!(
        next_update(&mut watch).await,
        ApprovalUpdate::Snapshot(Vec::new())
    );
    // More changes than the channel holds, without the watcher reading.
    let mut waiters = Vec::new();
    for i in 0..1500 {
        let (id, waiter) = store.request(bash(session, Uuid::new_v4(), &format!("rm {i}")));
        if i % 2 == 0 {
            store
                .resolve(&id, ApprovalDecision::AllowOnce, "")
                .unwrap_or_else(|e| panic!("{e}"));
        }
        waiters.push(waiter);
    }
    match next_update(&mut watch).await {
        ApprovalUpdate::Snapshot(s) => {
            assert_eq!(
                s,
                store
                    .list(None, &PageRequest::first(1000))
                    .map(|p| p.items)
                    .unwrap_or_default()
            );
            assert_eq!(s.len(), 750);
        }
        u => panic!("expected a fresh snapshot, got {u:?}"),
    }
}

fn input_request(session: Uuid, execution: Uuid) -> PendingApproval {
    PendingApproval {
        input: Some(crate::permissions::InputRequest {
            server: "trip".into(),
            message: "Where to?".into(),
            schema: json!({
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            }),
        }),
        ..pending(session, execution, "mcp__trip__plan", json!({}))
    }
}

#[tokio::test]
async fn a_request_for_input_takes_an_answer_matching_its_schema() {
    use crate::events::InputAction;
    let store = ApprovalStore::default();
    let (session, execution) = (Uuid::now_v7(), Uuid::now_v7());
    let (id, waiter) = store.request(input_request(session, execution));

    let bad = store
        .resolve_input(&id, InputAction::Accept, Some(json!({"city": 3})))
        .expect_err("not a string");
    assert_eq!(bad.kind(), ErrorKind::InvalidArgument);
    assert_eq!(bad.field(), Some("answer.city"));
    let with_decline = store
        .resolve_input(&id, InputAction::Decline, Some(json!({"city": "Oslo"})))
        .expect_err("an answer only goes with accept");
    assert_eq!(with_decline.field(), Some("answer"));
    // An allow without an answer is an empty answer: the required field is missing.
    let empty = store
        .resolve(&id, ApprovalDecision::AllowAlways, "")
        .expect_err("city is required");
    assert_eq!(empty.field(), Some("answer.city"));
    assert_eq!(
        pending_ids(&store, Some(session)),
        std::slice::from_ref(&id)
    );

    store
        .resolve_input(&id, InputAction::Accept, Some(json!({"city": "Oslo"})))
        .unwrap_or_else(|e| panic!("{e}"));
    let resolved = outcome(waiter).await;
    assert_eq!(resolved.input_action(), InputAction::Accept);
    assert_eq!(
        resolved.input.and_then(|i| i.answer),
        Some(json!({"city": "Oslo"}))
    );
    assert!(!store.is_remembered(session, "mcp__trip__plan", &json!({})));
}

#[tokio::test]
async fn a_deny_declines_a_request_for_input_and_a_tool_call_takes_no_answer() {
    use crate::events::InputAction;
    let store = ApprovalStore::default();
    let (session, execution) = (Uuid::now_v7(), Uuid::now_v7());
    let (id, waiter) = store.request(input_request(session, execution));
    store
        .resolve(&id, ApprovalDecision::Deny, "no")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(outcome(waiter).await.input_action(), InputAction::Decline);

    let (call, _waiter) = store.request(bash(session, execution, "ls"));
    let refused = store
        .resolve_input(&call, InputAction::Accept, None)
        .expect_err("a tool call takes a decision");
    assert!(
        matches!(refused, ApprovalError::NotInput { .. }),
        "{refused}"
    );
    assert_eq!(refused.field(), Some("action"));
}

#[tokio::test]
async fn a_request_for_input_nobody_answers_ends_with_cancel() {
    use crate::events::InputAction;
    let store = ApprovalStore::new(Duration::from_millis(30));
    let (_, waiter) = store.request(input_request(Uuid::now_v7(), Uuid::now_v7()));
    let resolved = outcome(waiter).await;
    assert_eq!(resolved.resolution, ApprovalResolution::TimedOut);
    assert_eq!(resolved.input_action(), InputAction::Cancel);
}
