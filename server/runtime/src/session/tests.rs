//! The event log and subscriptions on real files: torn tails, corruption, replay from
//! any sequence, subscribers far behind the in-memory ring, the open-turn journal.

use std::io::Write;
use std::sync::Arc;

use uuid::Uuid;

use super::log::EventLog;
use super::{BundlePin, SessionRecord, SessionStore};
use crate::events::{
    ApprovalDecision, ApprovalResolution, Event, EventPayload, TurnCompleted, TurnContext,
    TurnOutcome, TurnStarted,
};
use crate::model::ModelSpec;
use crate::policy::{ApprovalPolicy, SandboxMode};

mod creation;

/// A turn's start as the runtime writes it.
fn turn_started() -> EventPayload {
    EventPayload::TurnStarted(TurnStarted {
        prompt: "hi".into(),
        context: TurnContext {
            cwd: ".".into(),
            model: ModelSpec::new("replay", "main"),
            sandbox_mode: SandboxMode::WorkspaceWrite,
            approval_policy: ApprovalPolicy::OnRequest,
            metadata: Default::default(),
        },
    })
}

fn record() -> SessionRecord {
    SessionRecord {
        id: Uuid::now_v7(),
        bundle_reference: "demo".into(),
        bundle: BundlePin {
            namespace: "local".into(),
            name: "demo".into(),
            version: "0.1.0".into(),
            digest: "sha256:00".into(),
        },
        agent_id: "main".into(),
        model: ModelSpec::new("replay", "main"),
        sandbox_mode: SandboxMode::WorkspaceWrite,
        approval_policy: ApprovalPolicy::OnRequest,
        created_at_ms: 1,
        metadata: Default::default(),
        token_budget: None,
        forked: None,
        parent: None,
    }
}

fn delta(text: &str) -> EventPayload {
    EventPayload::AgentMessageDelta { delta: text.into() }
}

fn store(dir: &tempfile::TempDir) -> SessionStore {
    SessionStore::open(dir.path().join("sessions"), dir.path().join("quarantine"))
        .unwrap_or_else(|e| panic!("open store: {e}"))
}

fn event(session: Uuid, sequence: u64) -> Event {
    Event {
        id: Uuid::new_v4(),
        session_id: session,
        sequence,
        created_at_ms: 1,
        turn_id: None,
        payload: delta("x"),
    }
}

#[test]
fn a_torn_tail_is_cut_and_a_lost_newline_restored() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("events.jsonl");
    let session = Uuid::new_v4();
    let mut log = EventLog::create(&path).unwrap_or_else(|e| panic!("{e}"));
    for seq in 1..=3 {
        log.append(&event(session, seq))
            .unwrap_or_else(|e| panic!("{e}"));
    }
    drop(log);
    let intact = std::fs::read(&path).unwrap_or_else(|e| panic!("{e}"));
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("{e}"));
    file.write_all(b"{\"id\":\"half")
        .unwrap_or_else(|e| panic!("{e}"));
    drop(file);

    let mut seen = Vec::new();
    let recovered =
        EventLog::open(&path, |e| seen.push(e.sequence)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(seen, [1, 2, 3]);
    assert_eq!(recovered.truncated_bytes, 11);
    assert_eq!(std::fs::read(&path).unwrap_or_default(), intact);

    // A whole last event without its newline is kept, and the newline comes back.
    std::fs::write(&path, &intact[..intact.len() - 1]).unwrap_or_else(|e| panic!("{e}"));
    let mut log = EventLog::open(&path, |_| {})
        .unwrap_or_else(|e| panic!("{e}"))
        .log;
    assert_eq!(log.last_sequence(), 3);
    log.append(&event(session, 4))
        .unwrap_or_else(|e| panic!("{e}"));
    let lines = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(lines.lines().count(), 4);
}

#[test]
fn corruption_before_the_tail_and_sequence_gaps_are_errors() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("events.jsonl");
    let session = Uuid::new_v4();
    let line = |seq| serde_json::to_string(&event(session, seq)).unwrap_or_default();
    std::fs::write(&path, format!("{}\nnot json\n{}\n", line(1), line(2)))
        .unwrap_or_else(|e| panic!("{e}"));
    let err = EventLog::open(&path, |_| {})
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("line 2"), "{err}");

    std::fs::write(&path, format!("{}\n{}\n", line(1), line(3))).unwrap_or_else(|e| panic!("{e}"));
    let err = EventLog::open(&path, |_| {})
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("gap"), "{err}");
}

#[test]
fn readers_start_at_any_sequence_through_the_sparse_index() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("events.jsonl");
    let session = Uuid::new_v4();
    let mut log = EventLog::create(&path).unwrap_or_else(|e| panic!("{e}"));
    for seq in 1..=2_000 {
        log.append(&event(session, seq))
            .unwrap_or_else(|e| panic!("{e}"));
    }
    for after in [0, 1, 511, 512, 513, 1_024, 1_999, 2_000] {
        let mut reader = log.reader_after(after).unwrap_or_else(|e| panic!("{e}"));
        let mut expected = after + 1;
        while let Some(event) = reader.next_event().unwrap_or_else(|e| panic!("{e}")) {
            assert_eq!(event.sequence, expected);
            expected += 1;
        }
        assert_eq!(expected, 2_001, "read everything after {after}");
    }
    // Reopening rebuilds the same index.
    drop(log);
    let log = EventLog::open(&path, |_| {})
        .unwrap_or_else(|e| panic!("{e}"))
        .log;
    let mut reader = log.reader_after(1_500).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        reader.next_event().ok().flatten().map(|e| e.sequence),
        Some(1_501)
    );
}

#[tokio::test]
async fn a_subscriber_far_behind_the_ring_reads_the_log_then_follows_live() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = store(&dir);
    let handle = store.create(record()).unwrap_or_else(|e| panic!("{e}"));
    for i in 0..3_000 {
        handle
            .append_now(None, delta(&i.to_string()))
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let mut subscription = handle.subscribe(0);
    let mut next = 1u64;
    while next <= 3_000 {
        let batch = subscription
            .next_batch()
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("ended early"));
        assert!(batch.len() <= 256, "bounded batches");
        for event in batch {
            assert_eq!(event.sequence, next);
            next += 1;
        }
    }
    let writer = {
        let handle = handle.clone();
        tokio::spawn(async move {
            for i in 0..1_000 {
                handle
                    .append_now(None, delta(&format!("live {i}")))
                    .unwrap_or_else(|e| panic!("{e}"));
                if i % 100 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        })
    };
    while next <= 4_000 {
        let batch = subscription
            .next_batch()
            .await
            .ok()
            .flatten()
            .unwrap_or_default();
        for event in batch {
            assert_eq!(event.sequence, next, "no gap, no duplicate at the seam");
            next += 1;
        }
    }
    writer.await.unwrap_or_else(|e| panic!("{e}"));
    store.remove(&handle).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        subscription.next_batch().await.ok().flatten().is_none(),
        "ends on delete"
    );
}

#[tokio::test]
async fn a_journaled_open_turn_is_recorded_as_interrupted_once() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let id;
    {
        let store = store(&dir);
        let handle = store.create(record()).unwrap_or_else(|e| panic!("{e}"));
        id = handle.id();
        store
            .journal_turn_start(id)
            .unwrap_or_else(|e| panic!("{e}"));
        let turn = Some(Uuid::now_v7());
        let started = turn_started();
        handle
            .append(turn, started)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        handle
            .append_now(
                turn,
                EventPayload::PermissionRequested {
                    request_id: "req-1".into(),
                    call_id: "c".into(),
                    tool: "Bash".into(),
                    arguments: serde_json::json!({}),
                    summary: "ls".into(),
                    reason: String::new(),
                    display: "ls".into(),
                    control_characters: false,
                },
            )
            .unwrap_or_else(|e| panic!("{e}"));
        handle
            .append_now(
                turn,
                EventPayload::HumanInputRequested(crate::events::HumanInputRequested {
                    request_id: "req-2".into(),
                    call_id: "c2".into(),
                    tool: "mcp__trip__plan".into(),
                    server: "trip".into(),
                    message: "Where to?".into(),
                    schema: serde_json::json!({"type": "object"}),
                    display: "Where to?".into(),
                }),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        // The process dies here: no turn end.
    }
    let store = store(&dir);
    assert_eq!(store.journaled_open_sessions(), vec![id]);
    let handle = store.get(id).await.unwrap_or_else(|e| panic!("{e}"));
    let again = store.get(id).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(Arc::ptr_eq(&handle, &again));
    assert!(store.journaled_open_sessions().is_empty());
    let mut subscription = handle.subscribe(0);
    let events = subscription
        .next_batch()
        .await
        .ok()
        .flatten()
        .unwrap_or_default();
    let kinds: Vec<String> = events
        .iter()
        .map(|e| match &e.payload {
            EventPayload::TurnCompleted(TurnCompleted { outcome, .. }) => {
                format!("completed:{outcome:?}")
            }
            EventPayload::ApprovalResolved { resolution, .. } => format!("approval:{resolution:?}"),
            EventPayload::HumanInputAnswered(answered) => {
                format!("input:{:?}:{:?}", answered.resolution, answered.action)
            }
            other => serde_json::to_value(other)
                .ok()
                .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(String::from))
                .unwrap_or_default(),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "turn_started",
            "permission_requested",
            "human_input_requested",
            "approval:Interrupted",
            "input:Interrupted:Cancel",
            format!("completed:{:?}", TurnOutcome::Interrupted).as_str()
        ]
    );
    assert_eq!(handle.stats().turn_count, 1);
}

#[tokio::test]
async fn a_turn_whose_end_cannot_be_written_is_closed_once_before_the_next() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = store(&dir);
    let handle = store.create(record()).unwrap_or_else(|e| panic!("{e}"));
    let turn = Uuid::now_v7();
    let started = turn_started();
    handle
        .append(Some(turn), started)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    for request_id in ["req-1", "req-2"] {
        handle
            .append_now(
                Some(turn),
                EventPayload::PermissionRequested {
                    request_id: request_id.into(),
                    call_id: "c".into(),
                    tool: "Bash".into(),
                    arguments: serde_json::json!({}),
                    summary: "ls".into(),
                    reason: String::new(),
                    display: "ls".into(),
                    control_characters: false,
                },
            )
            .unwrap_or_else(|e| panic!("{e}"));
    }
    handle
        .append_now(
            Some(turn),
            EventPayload::ApprovalResolved {
                request_id: "req-1".into(),
                decision: ApprovalDecision::AllowOnce,
                resolution: ApprovalResolution::Decided,
                reason: String::new(),
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));

    // Only the turn the log shows open can be left open.
    assert!(!handle.abandon_turn(
        Uuid::now_v7(),
        TurnOutcome::Failed,
        "x".into(),
        Default::default()
    ));
    assert!(!handle.has_open_turn());
    // The turn's end could not be written (say the disk was full).
    assert!(handle.abandon_turn(
        turn,
        TurnOutcome::Failed,
        "the disk is full".into(),
        Default::default()
    ));
    assert!(handle.has_open_turn());

    for _ in 0..2 {
        store
            .close_open_turn(&handle)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    assert!(!handle.has_open_turn());
    let mut subscription = handle.subscribe(4);
    let closing = subscription
        .next_batch()
        .await
        .ok()
        .flatten()
        .unwrap_or_default();
    let ends: Vec<String> = closing
        .iter()
        .map(|e| match &e.payload {
            EventPayload::ApprovalResolved {
                request_id,
                resolution,
                ..
            } => format!("{request_id}:{resolution:?}"),
            EventPayload::TurnCompleted(done) => format!("{:?}:{}", done.outcome, done.error),
            _ => "other".into(),
        })
        .collect();
    assert_eq!(ends, ["req-2:Cancelled", "Failed:the disk is full"]);
    assert!(closing.iter().all(|e| e.turn_id == Some(turn)));
    assert_eq!(handle.stats().turn_count, 1);
}

#[tokio::test]
async fn idle_sessions_beyond_the_cache_are_dropped_however_they_were_opened() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let ids: Vec<Uuid> = {
        let store = store(&dir);
        (0..5)
            .map(|_| {
                store
                    .create(record())
                    .unwrap_or_else(|e| panic!("{e}"))
                    .id()
            })
            .collect()
    };
    let store = store(&dir).with_open_cache(1);
    let held = store.get(ids[0]).await.unwrap_or_else(|e| panic!("{e}"));
    for id in &ids[1..] {
        // Opened for a read, then let go.
        drop(store.get(*id).await.unwrap_or_else(|e| panic!("{e}")));
        assert!(store.open_count() <= 2, "{} open", store.open_count());
    }
    // The session in use stays the same open session.
    let again = store.get(ids[0]).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(Arc::ptr_eq(&held, &again));
}

/// Records what a store's sessions tell their observer.
#[derive(Default)]
struct Recorder {
    appended: std::sync::atomic::AtomicU64,
    published: std::sync::Mutex<Vec<u64>>,
}

impl super::EventObserver for Recorder {
    fn appended(&self, _event: &Event) {
        self.appended
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    fn follows_published(&self) -> bool {
        true
    }

    fn published(&self, event: &Arc<Event>) {
        crate::sync::lock(&self.published).push(event.sequence);
    }

    fn missed(&self, count: u64) {
        panic!("{count} events missed");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_observer_sees_every_event_once_in_order_even_when_appends_race() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let recorder = Arc::new(Recorder::default());
    let store = store(&dir).with_observer(recorder.clone());
    let handle = store.create(record()).unwrap_or_else(|e| panic!("{e}"));
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let handle = handle.clone();
            tokio::spawn(async move {
                for i in 0..200 {
                    let payload = delta(&format!("{w}-{i}"));
                    let appended = if i % 50 == 0 {
                        // Durability points publish after a sync, racing the others.
                        handle.append(None, payload).await.map(|_| ())
                    } else {
                        handle.append_now(None, payload).map(|_| ())
                    };
                    appended.unwrap_or_else(|e| panic!("{e}"));
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap_or_else(|e| panic!("{e}"));
    }
    let published = crate::sync::lock(&recorder.published).clone();
    assert_eq!(published, (1..=400).collect::<Vec<u64>>());
    assert_eq!(
        recorder.appended.load(std::sync::atomic::Ordering::Relaxed),
        400
    );

    // Reopened by another store, the old events are not handed over again.
    let id = handle.id();
    drop(handle);
    drop(store);
    let again = Arc::new(Recorder::default());
    let store =
        super::SessionStore::open(dir.path().join("sessions"), dir.path().join("quarantine"))
            .unwrap_or_else(|e| panic!("{e}"))
            .with_observer(again.clone());
    let handle = store.get(id).await.unwrap_or_else(|e| panic!("{e}"));
    handle
        .append_now(None, delta("after"))
        .unwrap_or_else(|e| panic!("{e}"));
    let published = crate::sync::lock(&again.published).clone();
    assert_eq!(published, [401]);
}

#[tokio::test]
async fn listing_folds_in_what_the_summary_does_not_cover() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let completed = |tokens: u64| {
        EventPayload::TurnCompleted(TurnCompleted {
            outcome: TurnOutcome::Completed,
            response: "ok".into(),
            error: String::new(),
            usage: crate::chat::TokenUsage {
                input_tokens: tokens,
                ..Default::default()
            },
            messages: Vec::new(),
            model_calls: 1,
            reason: String::new(),
        })
    };
    let id;
    {
        let store = store(&dir);
        let handle = store.create(record()).unwrap_or_else(|e| panic!("{e}"));
        id = handle.id();
        handle
            .append(None, completed(10))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        handle.write_summary();
        store.flush_summaries().await;
        // Turns after the last summary, then the process dies.
        handle
            .append_now(None, delta("more"))
            .unwrap_or_else(|e| panic!("{e}"));
        handle
            .append(None, completed(5))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let store = store(&dir);
    let listed = store.peek(id).unwrap_or_else(|| panic!("listed"));
    assert_eq!(listed.stats.turn_count, 2);
    assert_eq!(listed.stats.last_sequence, 3);
    assert_eq!(listed.stats.usage.input_tokens, 15);
    let opened = store.get(id).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        listed.stats,
        opened.stats(),
        "the same totals as the log rebuilt"
    );
}

#[tokio::test]
async fn nothing_from_an_unsynced_turn_start_on_is_visible_until_it_is_durable() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = store(&dir);
    let handle = store.create(record()).unwrap_or_else(|e| panic!("{e}"));
    let started = turn_started;
    let sequences = |batch: Option<Vec<Arc<Event>>>| -> Vec<u64> {
        batch
            .unwrap_or_default()
            .iter()
            .map(|e| e.sequence)
            .collect()
    };
    let mut subscription = handle.subscribe(0);
    let turn = Some(Uuid::now_v7());
    for payload in [delta("before"), started(), delta("during")] {
        handle
            .append_now(turn, payload)
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let first = subscription
        .next_batch()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        sequences(first),
        [1],
        "the turn start and what follows wait"
    );
    let completed = EventPayload::TurnCompleted(TurnCompleted {
        outcome: TurnOutcome::Completed,
        response: "ok".into(),
        error: String::new(),
        usage: Default::default(),
        messages: Vec::new(),
        model_calls: 1,
        reason: String::new(),
    });
    handle
        .append(turn, completed)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let rest = subscription
        .next_batch()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        sequences(rest),
        [2, 3, 4],
        "one sync made the whole turn durable"
    );

    // A turn that runs on: its start is synced and shown after a short delay.
    handle
        .append_now(Some(Uuid::now_v7()), started())
        .unwrap_or_else(|e| panic!("{e}"));
    let late = tokio::time::timeout(std::time::Duration::from_secs(5), subscription.next_batch())
        .await
        .unwrap_or_else(|_| panic!("the turn start was never shown"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sequences(late), [5]);
}

#[test]
fn outside_a_runtime_a_turn_start_is_synced_at_once() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = store(&dir);
    let handle = store.create(record()).unwrap_or_else(|e| panic!("{e}"));
    let started = turn_started();
    handle
        .append_now(Some(Uuid::now_v7()), started)
        .unwrap_or_else(|e| panic!("{e}"));
    handle.write_summary();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut subscription = handle.subscribe(0);
    let batch = runtime
        .block_on(subscription.next_batch())
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_default();
    assert_eq!(batch.len(), 1, "visible without waiting for a later sync");
    let summary = dir
        .path()
        .join("sessions")
        .join(handle.id().to_string())
        .join("summary.json");
    assert!(summary.is_file(), "written at once");
}

/// Issue 21, defence in depth: a model config holding a credential that reached the store
/// anyway (a path that forgot the refusal) is masked before the session record, an event,
/// or a subscriber's copy is written.
#[tokio::test]
async fn credentials_in_model_configs_are_masked_before_anything_is_written() {
    const CANARY: &str = "sk-canary-store-4d2f";
    let leaky = || {
        let mut model = ModelSpec::new("openai", "gpt-test");
        model.config = serde_json::json!({
            "temperature": 0.1,
            "api_key": CANARY,
            "headers": {"Authorization": format!("Bearer {CANARY}")},
            "base_url": format!("https://user:{CANARY}@llm.example.com/v1"),
        })
        .as_object()
        .cloned();
        model
    };
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = store(&dir);
    let handle = store
        .create(SessionRecord {
            model: leaky(),
            ..record()
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let EventPayload::TurnStarted(mut started) = turn_started() else {
        unreachable!("a turn start")
    };
    started.context.model = leaky();
    let written = handle
        .append(Some(Uuid::now_v7()), EventPayload::TurnStarted(started))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut subscription = handle.subscribe(0);
    let streamed = subscription
        .next_batch()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_default();
    let shown = [
        serde_json::to_string(&handle.info().record).unwrap_or_default(),
        serde_json::to_string(written.as_ref()).unwrap_or_default(),
        streamed
            .iter()
            .map(|event| serde_json::to_string(event.as_ref()).unwrap_or_default())
            .collect::<String>(),
    ];
    for text in &shown {
        assert!(!text.contains(CANARY), "{text}");
        assert!(text.contains("0.1"), "the rest of the config stays: {text}");
    }
    let session_dir = dir.path().join("sessions").join(handle.id().to_string());
    for file in ["session.json", "events.jsonl"] {
        let text = std::fs::read_to_string(session_dir.join(file)).unwrap_or_default();
        assert!(!text.is_empty() && !text.contains(CANARY), "{file}: {text}");
    }
}

/// Records every turn end the store records for a turn left open.
#[derive(Default)]
struct Closings(std::sync::Mutex<Vec<super::ClosedTurn>>);

impl super::EventObserver for Closings {
    fn appended(&self, _event: &Event) {}
    fn follows_published(&self) -> bool {
        false
    }
    fn published(&self, _event: &Arc<Event>) {}
    fn missed(&self, _count: u64) {}
    fn turn_closed(&self, _session_id: Uuid, turn: &super::ClosedTurn) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(turn.clone());
    }
}

/// Issue 12 items 7 and 8: a turn a crash left open is closed with what its log shows:
/// the tokens its calls reported (in the session's totals too), its completed steps (in
/// the next turn's history, with a note), and an end the runtime can answer
/// GetExecutionStatus from.
#[tokio::test]
async fn a_crashed_turn_is_closed_with_its_usage_and_completed_steps() {
    use crate::chat::{Role, TokenUsage};
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let turn = Uuid::now_v7();
    let id;
    {
        let store = store(&dir);
        let handle = store.create(record()).unwrap_or_else(|e| panic!("{e}"));
        id = handle.id();
        store
            .journal_turn_start(id)
            .unwrap_or_else(|e| panic!("{e}"));
        let call = TokenUsage {
            input_tokens: 40,
            output_tokens: 12,
            total_tokens: 52,
            ..TokenUsage::default()
        };
        let usage = EventPayload::TokenUsageReported {
            call,
            turn_total: call,
        };
        let bash = |id: &str| EventPayload::ToolCallStarted {
            call_id: id.into(),
            tool: "Bash".into(),
            arguments: serde_json::json!({ "command": "ls" }),
        };
        let events = [
            turn_started(),
            delta("Let me look."),
            usage.clone(),
            bash("a"),
            EventPayload::ToolCallFinished {
                call_id: "a".into(),
                tool: "Bash".into(),
                success: true,
                result: "README.md".into(),
            },
            usage,
            bash("b"),
        ];
        for payload in events {
            handle
                .append(Some(turn), payload)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        }
        // The process dies here, with `b` running.
    }
    let closings = Arc::new(Closings::default());
    let store = store(&dir).with_observer(closings.clone());
    let handle = store.get(id).await.unwrap_or_else(|e| panic!("{e}"));

    let closed = closings.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert_eq!(closed.len(), 1);
    assert_eq!(closed[0].turn_id, turn);
    assert_eq!(closed[0].outcome, TurnOutcome::Interrupted);
    assert_eq!((closed[0].first_sequence, closed[0].last_sequence), (1, 8));
    assert_eq!(closed[0].usage.input_tokens, 80);
    assert_eq!(closed[0].usage.output_tokens, 24);

    let stats = handle.stats();
    assert_eq!(
        stats.usage.input_tokens, 80,
        "the totals count the crashed turn"
    );
    assert_eq!(stats.model_calls, 2);

    let history = handle.history();
    assert_eq!(history.turns.len(), 1, "the interrupted turn is remembered");
    let messages = &history.turns[0].messages;
    let roles: Vec<Role> = messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant],
        "{messages:?}"
    );
    assert_eq!(messages[0].content, "hi");
    assert_eq!(messages[1].content, "Let me look.");
    assert_eq!(messages[1].tool_calls[0].id, "a");
    assert_eq!(messages[2].content, "README.md");
    assert!(
        messages[3]
            .content
            .starts_with("[This turn was interrupted")
            && messages[3]
                .content
                .contains("the server stopped while this turn was running"),
        "{}",
        messages[3].content
    );

    // Reopened again, the recorded end gives the same totals and history.
    drop(handle);
    drop(store);
    let store = self::store(&dir);
    let handle = store.get(id).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(handle.stats().usage.input_tokens, 80);
    assert_eq!(handle.history().turns[0].messages.len(), 4);
}

/// The storage format version: written into every new `session.json`; a record without one
/// is version 1; a session a newer server wrote is refused, naming it, and left as it is
/// (not quarantined: it is not damaged).
#[tokio::test]
async fn the_storage_format_version_is_written_and_a_newer_one_refused() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (old, newer) = (record(), record());
    {
        let store = store(&dir);
        for r in [&old, &newer] {
            store.create(r.clone()).unwrap_or_else(|e| panic!("{e}"));
        }
    }
    let file = |id: Uuid| {
        dir.path()
            .join("sessions")
            .join(id.to_string())
            .join("session.json")
    };
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(file(old.id)).unwrap_or_default())
            .unwrap_or_default();
    assert_eq!(written["format_version"], super::record::FORMAT_VERSION);

    let mut fields = written.as_object().cloned().unwrap_or_default();
    fields.remove("format_version");
    std::fs::write(
        file(old.id),
        serde_json::to_vec(&fields).unwrap_or_default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut future: serde_json::Value =
        serde_json::from_slice(&std::fs::read(file(newer.id)).unwrap_or_default())
            .unwrap_or_default();
    future["format_version"] = serde_json::json!(super::record::FORMAT_VERSION + 1);
    future["a_field_of_the_future"] = serde_json::json!(true);
    std::fs::write(file(newer.id), future.to_string()).unwrap_or_else(|e| panic!("{e}"));

    let store = store(&dir);
    let opened = store.get(old.id).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(opened.record().id, old.id, "no version is version 1");
    let Err(refused) = store.get(newer.id).await else {
        panic!("a newer format opened")
    };
    assert_eq!(refused.kind(), crate::ErrorKind::FailedPrecondition);
    let message = refused.to_string();
    assert!(
        message.contains(&newer.id.to_string()) && message.contains("newer server"),
        "{message}"
    );
    assert!(file(newer.id).is_file(), "left where it is");
    assert!(store.quarantined().is_empty());
    assert!(store.peek(newer.id).is_none());
}

/// One completed turn whose record holds `prompt` and an answer.
async fn completed_turn(handle: &Arc<super::SessionHandle>, prompt: &str) -> Uuid {
    use crate::chat::ChatMessage;
    let turn = Uuid::now_v7();
    handle
        .append(Some(turn), turn_started())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    handle
        .append(
            Some(turn),
            EventPayload::TurnCompleted(TurnCompleted {
                outcome: TurnOutcome::Completed,
                response: "ok".into(),
                error: String::new(),
                usage: Default::default(),
                messages: vec![
                    ChatMessage::user(prompt),
                    ChatMessage::assistant("ok", vec![]),
                ],
                model_calls: 1,
                reason: String::new(),
            }),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    turn
}

fn prompts(handle: &super::SessionHandle) -> Vec<String> {
    handle
        .history()
        .turns
        .iter()
        .map(|t| t.messages[0].content.clone())
        .collect()
}

async fn rewind(handle: &Arc<super::SessionHandle>, to_turn: u64) {
    let end = handle
        .turn_end(to_turn)
        .unwrap_or_else(|| panic!("turn {to_turn}"));
    let history = handle
        .history_until(end.sequence)
        .unwrap_or_else(|e| panic!("{e}"));
    handle
        .append_rewind(
            EventPayload::SessionRewound(crate::events::SessionRewound {
                to_turn,
                to_turn_id: end.turn_id,
                to_sequence: end.sequence,
                turns_left: 0,
                entries: 0,
            }),
            history,
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test]
async fn a_rewind_puts_back_the_history_of_its_turn_live_and_when_the_log_is_read_again() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let record = record();
    let id = record.id;
    let handle = store(&dir).create(record).unwrap_or_else(|e| panic!("{e}"));
    for prompt in ["one", "two", "three"] {
        completed_turn(&handle, prompt).await;
    }
    rewind(&handle, 1).await;
    assert_eq!(prompts(&handle), ["one"]);
    completed_turn(&handle, "four").await;
    assert_eq!(prompts(&handle), ["one", "four"]);
    // Back to a turn the first rewind left: its own history, before any rewind.
    rewind(&handle, 3).await;
    assert_eq!(prompts(&handle), ["one", "two", "three"]);
    // Back to turn 4, which followed a rewind.
    rewind(&handle, 4).await;
    assert_eq!(prompts(&handle), ["one", "four"]);
    let turn_four = handle.turn_end(4).unwrap_or_else(|| panic!("turn 4"));
    drop(handle);

    // Read again from the log, as after a restart.
    let reopened = store(&dir).get(id).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(prompts(&reopened), ["one", "four"]);
    assert_eq!(reopened.turn_end(4), Some(turn_four));
    assert_eq!(reopened.turn_ending_at(turn_four.sequence), Some(turn_four));
    assert_eq!(reopened.turn_ending_at(turn_four.sequence - 1), None);
}
