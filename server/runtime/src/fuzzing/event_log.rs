//! `event_log`: opening a session whose `events.jsonl` is the input, as the store does on
//! first use after a crash, then replaying it.
//!
//! The session folder holds a valid record and the input as its log. Opening it must either
//! succeed or quarantine the session; nothing else. When it opens:
//! - the log on disk is the input minus at most its last line (a torn tail), plus the
//!   events that closed a turn the log left open;
//! - replay from sequence 0 (the live ring) yields sequences 1..=last with no gap, and the
//!   same events as reading the log file from any sequence;
//! - opening it again changes nothing: the repair happened once.
//!
//! When it is quarantined, the folder moved to the quarantine untouched, with its reason,
//! and the reason shows no server path.

use std::fs;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use uuid::Uuid;

use super::scratch;
use crate::RuntimeError;
use crate::events::Event;
use crate::model::ModelSpec;
use crate::policy::{ApprovalPolicy, SandboxMode};
use crate::session::{
    BundlePin, EventLog, LOG_FILE, RECORD_FILE, SessionHandle, SessionRecord, SessionStore,
};

/// The session every input is the log of.
const SESSION_ID: Uuid = Uuid::from_u128(0x0196_0000_0000_7000_8000_0000_0000_0001);

pub fn event_log(data: &[u8]) {
    let scratch = scratch::dir();
    let sessions = scratch.path().join("sessions");
    let quarantine = scratch.path().join("quarantine");
    let dir = sessions.join(SESSION_ID.to_string());
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    for (name, bytes) in [(RECORD_FILE, record_json()), (LOG_FILE, data)] {
        fs::write(dir.join(name), bytes).unwrap_or_else(|e| panic!("cannot write {name}: {e}"));
    }

    let store = open_store(&sessions, &quarantine);
    match runtime().block_on(store.get(SESSION_ID)) {
        Ok(handle) => {
            let log = dir.join(LOG_FILE);
            check_repair(data, &fs::read(&log).unwrap_or_default());
            let replayed = replay(&handle);
            drop((handle, store));
            check_file_reads(&log, &replayed);
            check_reopen(&sessions, &quarantine, &log);
        }
        Err(RuntimeError::Quarantined { reason, .. }) => {
            check_quarantined(&store, &quarantine, &dir, data, &reason, scratch.path());
        }
        Err(e) => panic!("opening a session with a bad log failed without quarantine: {e}"),
    }
}

fn record_json() -> &'static [u8] {
    static JSON: OnceLock<Vec<u8>> = OnceLock::new();
    JSON.get_or_init(|| {
        let record = SessionRecord {
            id: SESSION_ID,
            bundle_reference: "demo".into(),
            bundle: BundlePin {
                namespace: "local".into(),
                name: "demo".into(),
                version: "0.1.0".into(),
                digest: format!("sha256:{}", "0".repeat(64)),
            },
            agent_id: "guide".into(),
            model: ModelSpec::new("replay", "guide"),
            sandbox_mode: SandboxMode::WorkspaceWrite,
            approval_policy: ApprovalPolicy::OnRequest,
            created_at_ms: 1,
            metadata: Default::default(),
            token_budget: None,
            forked: None,
            parent: None,
        };
        serde_json::to_vec(&record).unwrap_or_else(|e| panic!("cannot encode a record: {e}"))
    })
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("cannot start a runtime: {e}"))
    })
}

fn open_store(sessions: &Path, quarantine: &Path) -> SessionStore {
    SessionStore::open(sessions.to_path_buf(), quarantine.to_path_buf())
        .unwrap_or_else(|e| panic!("cannot open the session store: {e}"))
}

/// Every line but the last is kept byte for byte; the repair only cuts the last line or
/// restores its newline, then appends.
fn check_repair(input: &[u8], repaired: &[u8]) {
    let lines: Vec<&[u8]> = input.split_inclusive(|b| *b == b'\n').collect();
    let kept: Vec<u8> = lines[..lines.len().saturating_sub(1)].concat();
    assert!(
        repaired.starts_with(&kept),
        "the repair changed a line before the last one"
    );
    assert!(
        repaired.is_empty() || repaired.ends_with(b"\n"),
        "the repaired log does not end with a newline"
    );
}

/// Replays the open session from sequence 0 through a subscription.
fn replay(handle: &Arc<SessionHandle>) -> Vec<Arc<Event>> {
    let last = handle.stats().last_sequence;
    let mut subscription = handle.subscribe(0);
    let mut events = Vec::new();
    while subscription.cursor() < last {
        let batch = runtime()
            .block_on(subscription.next_batch())
            .unwrap_or_else(|e| panic!("replay failed: {e}"))
            .unwrap_or_else(|| panic!("replay ended at {} of {last}", subscription.cursor()));
        events.extend(batch);
    }
    let sequences: Vec<u64> = events.iter().map(|e| e.sequence).collect();
    let expected: Vec<u64> = (1..=last).collect();
    assert_eq!(sequences, expected, "replay is not gap-free");
    events
}

/// Reading the repaired file (whole, and from every sequence) gives what replay gave.
fn check_file_reads(path: &Path, replayed: &[Arc<Event>]) {
    let mut visited = Vec::new();
    let recovered = EventLog::open(path, |e| visited.push(e))
        .unwrap_or_else(|e| panic!("the repaired log does not open: {e}"));
    assert_eq!(
        recovered.truncated_bytes, 0,
        "the repaired log was cut again"
    );
    let replayed: Vec<&Event> = replayed.iter().map(|e| &**e).collect();
    assert_eq!(
        visited.iter().collect::<Vec<_>>(),
        replayed,
        "file and replay differ"
    );
    for after in 0..=replayed.len() {
        let mut reader = recovered
            .log
            .reader_after(after as u64)
            .unwrap_or_else(|e| panic!("cannot read the log after {after}: {e}"));
        let mut read = Vec::new();
        while let Some(event) = reader
            .next_event()
            .unwrap_or_else(|e| panic!("reading after {after}: {e}"))
        {
            read.push(event);
        }
        assert_eq!(
            read.iter().collect::<Vec<_>>(),
            replayed[after..],
            "reading after {after} differs from replay"
        );
    }
}

/// A second open finds nothing to repair.
fn check_reopen(sessions: &Path, quarantine: &Path, log: &Path) {
    let before = fs::read(log).unwrap_or_default();
    let store = open_store(sessions, quarantine);
    if let Err(e) = runtime().block_on(store.get(SESSION_ID)) {
        panic!("a repaired session does not open again: {e}");
    }
    let after = fs::read(log).unwrap_or_default();
    assert!(
        before == after,
        "opening a repaired session changed its log"
    );
}

fn check_quarantined(
    store: &SessionStore,
    quarantine: &Path,
    dir: &Path,
    input: &[u8],
    reason: &str,
    scratch: &Path,
) {
    assert!(!dir.exists(), "the quarantined session is still in place");
    let moved = quarantine.join(SESSION_ID.to_string());
    let log = fs::read(moved.join(LOG_FILE)).unwrap_or_default();
    assert!(log == input, "the quarantined log was changed");
    assert!(moved.join("reason.txt").is_file(), "no reason.txt");
    assert!(
        store
            .quarantined()
            .iter()
            .any(|q| q.session_id == SESSION_ID.to_string()),
        "the store does not list the quarantined session"
    );
    let path = scratch.to_string_lossy();
    assert!(
        !reason.contains(path.as_ref()),
        "the reason shows a server path: {reason}"
    );
}
