//! The behaviour every store shows, written once and run against each store:
//! [`crate::store_suite!`] turns each case into a test of the store a test opens.
//!
//! A case panics, naming what the store did wrong, when the store does not hold to it.

use std::sync::Arc;

use uuid::Uuid;

use super::{
    Bundles, EventLogs, Job, Placed, SessionFilter, SessionRecords, Store, StoreError, TurnQueue,
};
use crate::events::{Event, EventPayload};
use crate::execution::ExecutionRequest;
use crate::model::ModelSpec;
use crate::paging::PageRequest;
use crate::policy::{ApprovalPolicy, SandboxMode};
use crate::session::{BundlePin, SessionRecord};

/// The stores a case runs against.
#[derive(Clone)]
pub struct Stores {
    pub records: Arc<dyn SessionRecords>,
    pub logs: Arc<dyn EventLogs>,
    pub queue: Arc<dyn TurnQueue>,
    pub bundles: Arc<dyn Bundles>,
}

impl From<&Store> for Stores {
    fn from(store: &Store) -> Self {
        Self {
            records: store.session_records(),
            logs: store.event_logs(),
            queue: store.turn_queue(),
            bundles: store.bundles(),
        }
    }
}

/// What a suite's `open` returns: the stores and what to keep alive beside them, or
/// (`Option`) nothing when the store cannot be reached here and its cases are skipped
/// (a database store outside CI, for one).
pub trait Opened {
    type Keep;
    fn opened(self) -> Option<(Stores, Self::Keep)>;
}

impl<K> Opened for (Stores, K) {
    type Keep = K;
    fn opened(self) -> Option<(Stores, K)> {
        Some(self)
    }
}

impl<K> Opened for Option<(Stores, K)> {
    type Keep = K;
    fn opened(self) -> Option<(Stores, K)> {
        self
    }
}

/// Runs every case against stores `open` makes (one fresh store per case; what it
/// returns beside the stores is kept alive for the case, such as a temporary folder; an
/// `open` returning `None` skips the case, see [`Opened`]):
///
/// ```ignore
/// odyssey_runtime::store_suite!(open_store);
/// ```
#[macro_export]
macro_rules! store_suite {
    (@cases $open:path, $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $case() {
                let Some((stores, _keep)) =
                    $crate::store::suite::Opened::opened($open().await)
                else {
                    return;
                };
                $crate::store::suite::$case(&stores).await;
            }
        )*
    };
    ($open:path) => {
        $crate::store_suite!(@cases $open,
            appends_get_gap_free_sequences,
            an_append_at_a_wrong_expected_sequence_is_refused,
            racing_appends_let_one_writer_through,
            reads_after_a_sequence_stop_at_the_limit,
            sessions_list_newest_first_a_page_at_a_time,
            a_deleted_session_is_gone,
            a_quarantined_session_is_reported_and_not_served,
            a_sessions_turns_run_one_at_a_time_in_submission_order,
            removed_turns_never_run,
            bundles_are_found_by_digest_and_read_back_whole,
        );
    };
}

/// A session record for the cases: `agent` tells sessions apart in filters.
pub fn record(agent: &str) -> SessionRecord {
    SessionRecord {
        id: Uuid::now_v7(),
        bundle_reference: "suite".into(),
        bundle: BundlePin {
            namespace: "local".into(),
            name: "suite".into(),
            version: "0.1.0".into(),
            digest: format!("sha256:{}", "0".repeat(64)),
        },
        agent_id: agent.into(),
        model: ModelSpec::new("replay", "main"),
        sandbox_mode: SandboxMode::WorkspaceWrite,
        approval_policy: ApprovalPolicy::OnRequest,
        created_at_ms: crate::events::now_ms(),
        metadata: Default::default(),
        token_budget: None,
        forked: None,
        parent: None,
    }
}

/// `n` events of text, for a log; the store numbers them.
pub fn texts(n: usize, from: usize) -> Vec<Event> {
    (from..from + n)
        .map(|i| Event {
            id: Uuid::new_v4(),
            session_id: Uuid::nil(),
            sequence: 0,
            created_at_ms: crate::events::now_ms(),
            turn_id: None,
            payload: EventPayload::AgentMessageDelta {
                delta: format!("text {i}"),
            },
        })
        .collect()
}

async fn new_session(stores: &Stores, agent: &str) -> Uuid {
    let record = record(agent);
    let id = record.id;
    if let Err(e) = stores.records.create_session(record).await {
        panic!("create a session: {e}");
    }
    id
}

async fn append(stores: &Stores, session: Uuid, expected_next: u64, events: Vec<Event>) -> u64 {
    match stores
        .logs
        .append_events(session, expected_next, events)
        .await
    {
        Ok(last) => last,
        Err(e) => panic!("append at {expected_next}: {e}"),
    }
}

async fn read(stores: &Stores, session: Uuid, after: u64, limit: usize) -> Vec<Event> {
    match stores.logs.read_events_after(session, after, limit).await {
        Ok(events) => events,
        Err(e) => panic!("read after {after}: {e}"),
    }
}

fn sequences(events: &[Event]) -> Vec<u64> {
    events.iter().map(|e| e.sequence).collect()
}

/// Batches get the next sequences, from 1, without gaps, and read back in order with
/// their content; a sync keeps them.
pub async fn appends_get_gap_free_sequences(stores: &Stores) {
    let session = new_session(stores, "main").await;
    assert_eq!(stores.logs.last_sequence(session).await.ok(), Some(0));
    assert_eq!(append(stores, session, 1, texts(3, 0)).await, 3);
    assert_eq!(append(stores, session, 4, texts(1, 3)).await, 4);
    assert_eq!(append(stores, session, 5, texts(2, 4)).await, 6);
    if let Err(e) = stores.logs.sync_events(session).await {
        panic!("sync: {e}");
    }
    let events = read(stores, session, 0, 100).await;
    assert_eq!(sequences(&events), vec![1, 2, 3, 4, 5, 6]);
    for (i, event) in events.iter().enumerate() {
        assert_eq!(event.session_id, session, "event {i} names its session");
        let EventPayload::AgentMessageDelta { delta } = &event.payload else {
            panic!("event {i} changed kind: {:?}", event.payload);
        };
        assert_eq!(delta, &format!("text {i}"));
    }
    assert_eq!(stores.logs.last_sequence(session).await.ok(), Some(6));
}

/// An append for a next sequence the log is not at writes nothing and says where it is.
pub async fn an_append_at_a_wrong_expected_sequence_is_refused(stores: &Stores) {
    let session = new_session(stores, "main").await;
    append(stores, session, 1, texts(2, 0)).await;
    for stale in [1, 2, 4, 10] {
        match stores.logs.append_events(session, stale, texts(1, 9)).await {
            Err(StoreError::SequenceConflict {
                session_id,
                expected,
                actual,
            }) => {
                assert_eq!((session_id, expected, actual), (session, stale, 3));
            }
            other => panic!("an append at {stale} when the log is at 3: {other:?}"),
        }
    }
    assert_eq!(sequences(&read(stores, session, 0, 100).await), vec![1, 2]);
    assert_eq!(append(stores, session, 3, texts(1, 2)).await, 3);
    let missing = Uuid::now_v7();
    match stores.logs.append_events(missing, 1, texts(1, 0)).await {
        Err(e) if e.is_not_found() => {}
        other => panic!("an append to a session that does not exist: {other:?}"),
    }
}

/// Reads start after the sequence asked and stop at the limit or the end.
pub async fn reads_after_a_sequence_stop_at_the_limit(stores: &Stores) {
    let session = new_session(stores, "main").await;
    append(stores, session, 1, texts(10, 0)).await;
    assert_eq!(
        sequences(&read(stores, session, 3, 4).await),
        vec![4, 5, 6, 7]
    );
    assert_eq!(sequences(&read(stores, session, 8, 100).await), vec![9, 10]);
    assert!(read(stores, session, 10, 5).await.is_empty());
    assert!(read(stores, session, 0, 0).await.is_empty());
    let other = new_session(stores, "main").await;
    assert!(
        read(stores, other, 0, 10).await.is_empty(),
        "logs are per session"
    );
}

/// Sessions list newest first, a page at a time with no repeat and no gap, filtered.
pub async fn sessions_list_newest_first_a_page_at_a_time(stores: &Stores) {
    let mut created = Vec::new();
    for i in 0..5 {
        created.push(new_session(stores, if i % 2 == 0 { "even" } else { "odd" }).await);
    }
    let mut listed = Vec::new();
    let mut page = PageRequest::first(2);
    let mut pages = 0;
    loop {
        let answer = match stores
            .records
            .list_sessions(SessionFilter::default(), page.clone())
            .await
        {
            Ok(answer) => answer,
            Err(e) => panic!("list page {pages}: {e}"),
        };
        pages += 1;
        assert!(answer.items.len() <= 2, "a page holds at most its size");
        listed.extend(answer.items.iter().map(|info| info.record.id));
        match answer.next_token {
            Some(token) => page.token = Some(token),
            None => break,
        }
        assert!(pages < 10, "the pages never end");
    }
    created.reverse();
    assert_eq!(listed, created, "newest first, each once");
    let odd = stores
        .records
        .list_sessions(
            SessionFilter {
                agent_id: Some("odd".into()),
                ..SessionFilter::default()
            },
            PageRequest::first(10),
        )
        .await
        .map(|page| page.items.iter().map(|i| i.record.id).collect::<Vec<_>>());
    assert_eq!(odd.ok(), Some(vec![created[1], created[3]]));
    let got = stores.records.session(created[0]).await;
    assert_eq!(
        got.ok().flatten().map(|info| info.record.agent_id),
        Some("even".to_owned())
    );
}

/// A deleted session is not served, listed or appended to, and deleting it again says
/// there was none.
pub async fn a_deleted_session_is_gone(stores: &Stores) {
    let kept = new_session(stores, "main").await;
    let session = new_session(stores, "main").await;
    append(stores, session, 1, texts(2, 0)).await;
    assert_eq!(
        stores.records.delete_session(session).await.ok(),
        Some(true)
    );
    assert!(matches!(stores.records.session(session).await, Ok(None)));
    assert_eq!(
        stores.records.delete_session(session).await.ok(),
        Some(false)
    );
    match stores.logs.append_events(session, 3, texts(1, 0)).await {
        Err(e) if e.is_not_found() => {}
        other => panic!("an append to a deleted session: {other:?}"),
    }
    let listed = stores
        .records
        .list_sessions(SessionFilter::default(), PageRequest::first(10))
        .await
        .map(|page| page.items.iter().map(|i| i.record.id).collect::<Vec<_>>());
    assert_eq!(listed.ok(), Some(vec![kept]));
}

/// A quarantined session is reported with its reason and no longer served.
pub async fn a_quarantined_session_is_reported_and_not_served(stores: &Stores) {
    let session = new_session(stores, "main").await;
    append(stores, session, 1, texts(1, 0)).await;
    if let Err(e) = stores
        .records
        .quarantine_session(session, "unreadable in the suite".into())
        .await
    {
        panic!("quarantine: {e}");
    }
    assert!(matches!(stores.records.session(session).await, Ok(None)));
    let reported = stores.records.quarantined();
    let found = reported
        .iter()
        .find(|q| q.session_id == session.to_string());
    assert_eq!(
        found.map(|q| q.reason.as_str()),
        Some("unreadable in the suite")
    );
    match stores
        .records
        .quarantine_session(Uuid::now_v7(), "none".into())
        .await
    {
        Err(e) if e.is_not_found() => {}
        other => panic!("quarantining a session that does not exist: {other:?}"),
    }
}

fn job(session: Uuid) -> Job {
    Job {
        execution_id: Uuid::now_v7(),
        request: ExecutionRequest {
            session_id: session,
            ..Default::default()
        },
    }
}

async fn push(queue: &dyn TurnQueue, job: Job, first: bool) -> Placed {
    match queue.push(job, first).await {
        Ok(placed) => placed,
        Err(e) => panic!("push: {e}"),
    }
}

async fn claim(queue: &dyn TurnQueue) -> Option<Uuid> {
    match queue.claim_next().await {
        Ok(job) => job.map(|j| j.execution_id),
        Err(e) => panic!("claim: {e}"),
    }
}

async fn finish(queue: &dyn TurnQueue, session: Uuid) {
    if let Err(e) = queue.finish(session).await {
        panic!("finish: {e}");
    }
}

/// A session's turns run in submission order, never two at once; other sessions run
/// meanwhile; a turn placed first runs next.
pub async fn a_sessions_turns_run_one_at_a_time_in_submission_order(stores: &Stores) {
    let queue = stores.queue.as_ref();
    // Turns of sessions the store holds: a store may tie its queue to its sessions.
    let (a, b) = (
        new_session(stores, "main").await,
        new_session(stores, "main").await,
    );
    let (a1, a2, a3, b1) = (job(a), job(a), job(a), job(b));
    let ids = [
        a1.execution_id,
        a2.execution_id,
        a3.execution_id,
        b1.execution_id,
    ];
    assert_eq!(
        push(queue, a1, false).await,
        Placed {
            running: None,
            ahead: 0
        }
    );
    push(queue, a2, false).await;
    push(queue, b1, false).await;
    assert_eq!(queue.queued(), 3);
    assert_eq!(claim(queue).await, Some(ids[0]));
    assert_eq!(claim(queue).await, Some(ids[3]), "b runs while a runs");
    assert_eq!(
        claim(queue).await,
        None,
        "a's next turn waits for its first"
    );
    assert_eq!(
        push(queue, a3, true).await,
        Placed {
            running: Some(ids[0]),
            ahead: 0
        },
        "placed first, it is told what runs"
    );
    assert_eq!(claim(queue).await, None);
    finish(queue, b).await;
    assert_eq!(claim(queue).await, None, "b's end frees nothing of a's");
    finish(queue, a).await;
    assert_eq!(claim(queue).await, Some(ids[2]), "the turn placed first");
    assert_eq!(claim(queue).await, None);
    finish(queue, a).await;
    assert_eq!(claim(queue).await, Some(ids[1]));
    finish(queue, a).await;
    assert_eq!(claim(queue).await, None);
    assert_eq!(queue.queued(), 0);
}

/// Turns taken out of the queue (one, or a session's) never run, and free their room.
pub async fn removed_turns_never_run(stores: &Stores) {
    let queue = stores.queue.as_ref();
    // Turns of sessions the store holds: a store may tie its queue to its sessions.
    let (a, b) = (
        new_session(stores, "main").await,
        new_session(stores, "main").await,
    );
    let (a1, a2, b1, b2) = (job(a), job(a), job(b), job(b));
    let ids = [
        a1.execution_id,
        a2.execution_id,
        b1.execution_id,
        b2.execution_id,
    ];
    for j in [a1, a2, b1, b2] {
        push(queue, j, false).await;
    }
    let removed = queue.remove(ids[0]).await.ok().flatten();
    assert_eq!(removed.map(|j| j.execution_id), Some(ids[0]));
    assert!(matches!(queue.remove(ids[0]).await, Ok(None)), "taken once");
    let session_jobs = queue.remove_session(b).await.ok().unwrap_or_default();
    let mut taken: Vec<Uuid> = session_jobs.iter().map(|j| j.execution_id).collect();
    taken.sort();
    assert_eq!(taken, vec![ids[2], ids[3]]);
    assert_eq!(queue.queued(), 1);
    assert_eq!(claim(queue).await, Some(ids[1]));
    assert_eq!(claim(queue).await, None);
}

/// Writers racing for the same next sequence: exactly one batch lands, the others are
/// refused, and the log has no gap and no duplicate.
pub async fn racing_appends_let_one_writer_through(stores: &Stores) {
    let session = new_session(stores, "main").await;
    append(stores, session, 1, texts(1, 0)).await;
    let racers = (0..8).map(|i| {
        let logs = stores.logs.clone();
        tokio::spawn(async move { logs.append_events(session, 2, texts(2, i * 2)).await })
    });
    let mut won = 0;
    for racer in racers.collect::<Vec<_>>() {
        match racer.await {
            Ok(Ok(last)) => {
                assert_eq!(last, 3);
                won += 1;
            }
            Ok(Err(StoreError::SequenceConflict { actual, .. })) => assert_eq!(actual, 4),
            Ok(Err(e)) => panic!("a racing append failed: {e}"),
            Err(e) => panic!("a racing append panicked: {e}"),
        }
    }
    assert_eq!(won, 1, "one writer wins the sequence");
    assert_eq!(
        sequences(&read(stores, session, 0, 100).await),
        vec![1, 2, 3]
    );
}

/// A built bundle archive of the project `name` (the scaffold), and its digest.
pub fn bundle_archive(name: &str) -> (Vec<u8>, String) {
    let built = (|| -> std::result::Result<(Vec<u8>, String), String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let project = dir.path().join("project");
        crate::bundle::write_scaffold(&project, name).map_err(|e| e.to_string())?;
        let output = dir.path().join("bundle.tar.gz");
        let id = crate::bundle::build_to(&project, &output).map_err(|e| e.to_string())?;
        let bytes = std::fs::read(&output).map_err(|e| e.to_string())?;
        Ok((bytes, id.digest))
    })();
    match built {
        Ok(built) => built,
        Err(e) => panic!("build the bundle {name}: {e}"),
    }
}

/// An installed bundle is found by its digest, its archive reads back with the same
/// digest, an unknown digest is not found, and a deleted bundle is gone.
pub async fn bundles_are_found_by_digest_and_read_back_whole(stores: &Stores) {
    let (archive, digest) = bundle_archive("suite");
    let installed = match stores
        .bundles
        .install_archive(archive, crate::InstallOptions::default())
        .await
    {
        Ok(installed) => installed,
        Err(e) => panic!("install: {e}"),
    };
    assert_eq!(installed.id.digest, digest);
    let found = stores.bundles.bundle_by_digest(digest.clone()).await;
    assert_eq!(found.ok().map(|b| b.id.clone()), Some(installed.id.clone()));
    let read = match stores.bundles.bundle_archive(digest.clone()).await {
        Ok(read) => read,
        Err(e) => panic!("read the archive back: {e}"),
    };
    let again = stores
        .bundles
        .install_archive(read, crate::InstallOptions::default())
        .await;
    assert_eq!(
        again.ok().map(|b| b.id.digest.clone()),
        Some(digest.clone()),
        "the archive read back is the bundle installed"
    );
    let unknown = format!("sha256:{}", "1".repeat(64));
    match stores.bundles.bundle_by_digest(unknown).await {
        Err(e) if e.is_not_found() => {}
        other => panic!("a digest nothing has: {other:?}"),
    }
    if let Err(e) = stores.bundles.delete_bundle(digest.clone()).await {
        panic!("delete: {e}");
    }
    match stores.bundles.bundle_by_digest(digest).await {
        Err(e) if e.is_not_found() => {}
        other => panic!("a deleted bundle: {other:?}"),
    }
}
