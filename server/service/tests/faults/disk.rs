//! A server whose home fills up, or turns read-only, under it: requests that write fail
//! with a clear error (RESOURCE_EXHAUSTED `DISK_FULL`, UNAVAILABLE `STORAGE_READ_ONLY`),
//! reads keep working, nothing is left corrupt, and once the disk is writable again every
//! session opens with a valid log and takes new turns.
//!
//! The home is a small tmpfs in a mount namespace of its own (see `support::tmpfs`): a
//! full disk is a file filling it, a read-only one a remount.

use std::time::Duration;

use odyssey_api::v1 as pb;
use odyssey_testing::openai_wire::{OpenAiWireServer, Reply, Script};
use tonic::Code;
use tonic_types::StatusExt;

use crate::support::odysseyd::MODEL_KEY;
use crate::support::tmpfs::Tmpfs;
use crate::support::{
    Launch, Odysseyd, bundle_archive, check_log_shape, create_session, install, last_message,
    replay, slow_text, turn,
};

const FILLER: &str = "filler";

/// A prompt containing `slowly` streams for about two seconds; any other is answered at
/// once.
fn model(request: &serde_json::Value) -> Reply {
    let (_, prompt) = last_message(request);
    if prompt.contains("slowly") {
        slow_text(&"word ".repeat(40), 40, Duration::from_millis(50))
    } else {
        Reply::text("A short answer.")
    }
}

async fn tmpfs_or_skip() -> Option<Tmpfs> {
    match Tmpfs::mount(16).await {
        Ok(tmpfs) => Some(tmpfs),
        Err(why) => {
            eprintln!(
                "SKIPPED: a full or read-only home needs a tmpfs in a mount namespace (root and \
                 `unshare --mount`): {why}"
            );
            None
        }
    }
}

fn reason(status: &tonic::Status) -> String {
    status
        .get_details_error_info()
        .map(|i| i.reason)
        .unwrap_or_default()
}

/// Asserts a refusal for a storage condition: its code, its ErrorInfo reason, and a
/// message saying what is wrong.
fn assert_storage_error(what: &str, status: &tonic::Status, code: Code, why: &str) {
    let expected_reason = match code {
        Code::ResourceExhausted => "DISK_FULL",
        _ => "STORAGE_READ_ONLY",
    };
    assert_eq!(
        (status.code(), reason(status).as_str()),
        (code, expected_reason),
        "{what}: {status:?}"
    );
    assert!(
        status.message().contains(why),
        "{what}: the message says `{why}`: {}",
        status.message()
    );
}

struct Fixture {
    tmpfs: Tmpfs,
    launch: Launch,
    _model: OpenAiWireServer,
}

impl Fixture {
    async fn new() -> Option<Self> {
        let tmpfs = tmpfs_or_skip().await?;
        let model = OpenAiWireServer::start(Script::respond(MODEL_KEY, model))
            .await
            .expect("loopback model");
        let mut launch = Launch::new(tmpfs.mountpoint());
        launch.wrapper = tmpfs.wrapper();
        launch.model_url = Some(model.base_url());
        Some(Self {
            tmpfs,
            launch,
            _model: model,
        })
    }

    async fn start(&self) -> Odysseyd {
        Odysseyd::start(&self.launch).await
    }
}

async fn run(
    server: &Odysseyd,
    session: &str,
    prompt: &str,
) -> Result<pb::ExecutionStatus, tonic::Status> {
    let response = server
        .executions()
        .run(pb::RunRequest {
            input: turn(session, prompt),
        })
        .await?;
    Ok(response.into_inner().status.unwrap_or_default())
}

async fn build(server: &Odysseyd, name: &str) -> Result<pb::Bundle, tonic::Status> {
    install(server, bundle_archive(name)).await
}

/// Every session on the server: listed, opened, replayed from 0 and checked. While the
/// disk refuses writes, a turn may be left open (its end is written once it can be).
async fn check_every_session(server: &Odysseyd, writable: bool) -> Vec<pb::Session> {
    let sessions = server
        .sessions()
        .list_sessions(pb::ListSessionsRequest {
            page_size: 100,
            ..Default::default()
        })
        .await
        .expect("ListSessions")
        .into_inner()
        .sessions;
    for session in &sessions {
        let opened = server
            .sessions()
            .get_session(pb::GetSessionRequest {
                session_id: session.id.clone(),
            })
            .await
            .unwrap_or_else(|e| panic!("{} opens: {e}", session.id))
            .into_inner()
            .session
            .expect("session");
        let events = replay(
            server,
            &session.id,
            opened.last_sequence,
            Duration::from_secs(10),
        )
        .await
        .unwrap_or_else(|e| panic!("replay: {e}"));
        let turns = check_log_shape(&session.id, &events, !writable)
            .unwrap_or_else(|e| panic!("{e}\nserver log:\n{}", server.log_lines().join("\n")));
        assert_eq!(turns.len() as u64, opened.turn_count, "{}", session.id);
    }
    sessions
}

/// Reads that must keep working while the disk refuses writes.
async fn assert_reads_work(server: &Odysseyd) {
    let sessions = check_every_session(server, false).await;
    assert!(!sessions.is_empty(), "sessions listed");
    let bundles = server
        .bundles()
        .list_bundles(pb::ListBundlesRequest::default())
        .await
        .expect("ListBundles")
        .into_inner()
        .bundles;
    assert!(!bundles.is_empty(), "bundles listed");
    server
        .bundles()
        .inspect_bundle(pb::InspectBundleRequest {
            reference: "disky".into(),
        })
        .await
        .expect("InspectBundle");
    server
        .server()
        .get_server_info(pb::GetServerInfoRequest {})
        .await
        .expect("GetServerInfo");
}

/// A turn on a disk that refuses writes: refused at once (the session's previous turn
/// cannot be closed), or accepted and failed, saying why.
async fn assert_turn_refused(server: &Odysseyd, session: &str, code: Code, why: &str) {
    match run(server, session, "hello again").await {
        Err(status) => assert_storage_error("Run", &status, code, why),
        Ok(done) => {
            assert_eq!(done.state, pb::ExecutionState::Failed as i32, "{done:?}");
            assert!(
                done.error.contains(why),
                "the turn's error says `{why}`: {done:?}"
            );
        }
    }
}

/// Installs a bundle, opens two sessions with a turn each, and restarts the server so that
/// the sessions are read from disk afterwards rather than from memory.
async fn prepare(fixture: &Fixture) -> (Odysseyd, [String; 2]) {
    let server = fixture.start().await;
    build(&server, "disky").await.expect("bundle");
    let sessions = [
        create_session(&server, "disky").await.expect("session"),
        create_session(&server, "disky").await.expect("session"),
    ];
    for session in &sessions {
        let done = run(&server, session, "hello").await.expect("turn");
        assert_eq!(done.state, pb::ExecutionState::Completed as i32, "{done:?}");
    }
    server.terminate(Duration::from_secs(20)).await;
    (fixture.start().await, sessions)
}

/// Once the disk takes writes again: turns run, sessions are created, and every session
/// is valid, before and after a restart.
async fn assert_recovered(fixture: &Fixture, server: Odysseyd, sessions: &[String; 2]) {
    for session in sessions {
        let done = run(&server, session, "once the disk is back")
            .await
            .expect("turn");
        assert_eq!(done.state, pb::ExecutionState::Completed as i32, "{done:?}");
    }
    create_session(&server, "disky")
        .await
        .expect("a session once the disk is back");
    check_every_session(&server, true).await;
    server.terminate(Duration::from_secs(20)).await;
    let server = fixture.start().await;
    assert_eq!(check_every_session(&server, true).await.len(), 3);
    server.terminate(Duration::from_secs(20)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_refuses_writes_keeps_reads_and_corrupts_nothing() {
    let Some(fixture) = Fixture::new().await else {
        return;
    };
    let (server, [first, second]) = prepare(&fixture).await;

    // A turn is streaming when the disk fills up.
    let streaming = server
        .executions()
        .submit(pb::SubmitRequest {
            input: turn(&first, "answer slowly"),
        })
        .await
        .expect("submit")
        .into_inner()
        .execution_id;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        fixture.tmpfs.fill(FILLER) > 0,
        "the filler took the free space"
    );

    let full = "disk is full";
    let refused = create_session(&server, "disky")
        .await
        .expect_err("create on a full disk");
    assert_storage_error("CreateSession", &refused, Code::ResourceExhausted, full);
    let refused = build(&server, "other")
        .await
        .expect_err("install on a full disk");
    assert_storage_error("BuildBundle", &refused, Code::ResourceExhausted, full);
    for _ in 0..2 {
        assert_turn_refused(&server, &second, Code::ResourceExhausted, full).await;
    }
    let streamed = wait_for_end(&server, &streaming).await;
    assert_eq!(
        streamed.state,
        pb::ExecutionState::Failed as i32,
        "{streamed:?}"
    );
    assert!(streamed.error.contains(full), "{streamed:?}");
    assert_reads_work(&server).await;

    fixture.tmpfs.free(FILLER);
    assert_recovered(&fixture, server, &[first, second]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_home_refuses_writes_keeps_reads_and_corrupts_nothing() {
    let Some(fixture) = Fixture::new().await else {
        return;
    };
    let (server, [first, second]) = prepare(&fixture).await;

    // The server dies mid-turn, and comes back on a home that went read-only meanwhile
    // (a file system remounts read-only only once nothing has a file open to write).
    server
        .executions()
        .submit(pb::SubmitRequest {
            input: turn(&first, "answer slowly"),
        })
        .await
        .expect("submit");
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.kill().await;
    fixture.tmpfs.remount(true).await;
    let server = fixture.start().await;

    assert_reads_work(&server).await;
    let read_only = "read-only";
    let refused = create_session(&server, "disky")
        .await
        .expect_err("create on a read-only home");
    assert_storage_error("CreateSession", &refused, Code::Unavailable, read_only);
    let refused = build(&server, "other")
        .await
        .expect_err("install on a read-only home");
    assert_storage_error("BuildBundle", &refused, Code::Unavailable, read_only);
    for session in [&first, &second] {
        assert_turn_refused(&server, session, Code::Unavailable, read_only).await;
    }
    assert_reads_work(&server).await;

    server.terminate(Duration::from_secs(20)).await;
    fixture.tmpfs.remount(false).await;
    let server = fixture.start().await;
    assert_recovered(&fixture, server, &[first, second]).await;
}

async fn wait_for_end(server: &Odysseyd, execution_id: &str) -> pb::ExecutionStatus {
    for _ in 0..200 {
        let status = server
            .executions()
            .get_execution_status(pb::GetExecutionStatusRequest {
                execution_id: execution_id.into(),
            })
            .await
            .expect("status")
            .into_inner()
            .status
            .unwrap_or_default();
        if status.state >= pb::ExecutionState::Completed as i32 {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("execution {execution_id} never ended");
}
