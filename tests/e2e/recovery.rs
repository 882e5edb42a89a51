//! Durability: a restart keeps everything; a crash's leftovers are repaired; a corrupt
//! session is quarantined and never stops the server.

use std::io::Write;

use odyssey_api::v1 as pb;
use pb::session_event::Payload;
use tonic::Code;

use crate::support::{Project, TestServer, payload_kind};

#[tokio::test]
async fn a_restart_keeps_sessions_events_and_memory() {
    let server = TestServer::start().await;
    let session = server
        .session_on(&Project::replay(
            "durable",
            &[
                r#"{"text": "first answer"}"#,
                r#"{"text": "I remember", "request": {"last_message": {"role": "user", "content": "after restart"}}}"#,
            ],
        ))
        .await;
    let first = server.run(&session.id, "before restart").await;
    assert_eq!(first.state, pb::ExecutionState::Completed as i32);
    let before = server.events(&session.id, 0, first.last_sequence).await;

    let server = server.restart().await;
    let after = server.events(&session.id, 0, first.last_sequence).await;
    assert_eq!(before, after, "the log survives a restart unchanged");
    let reopened = server.get_session(&session.id).await;
    assert_eq!(reopened.turn_count, 1);
    assert_eq!(reopened.last_sequence, first.last_sequence);

    let second = server.run(&session.id, "after restart").await;
    assert_eq!(
        second.state,
        pb::ExecutionState::Completed as i32,
        "{second:?}"
    );
    assert_eq!(
        second.first_sequence,
        first.last_sequence + 1,
        "sequences continue without a gap"
    );
    let events = server
        .events(&session.id, first.last_sequence, second.last_sequence)
        .await;
    let Some(Payload::TurnCompleted(done)) = &events.last().and_then(|e| e.payload.clone()) else {
        panic!("turn_completed");
    };
    assert_eq!(
        done.messages.len(),
        2,
        "this turn's record: prompt and answer"
    );
}

#[tokio::test]
async fn a_crash_mid_turn_is_repaired_at_startup_and_a_torn_line_is_cut() {
    let server = TestServer::start().await;
    let session = server
        .session_on(&Project::replay("crashy", &[r#"{"text": "ok"}"#]))
        .await;
    let done = server.run(&session.id, "complete").await;
    let sessions_dir = server.sessions_dir();
    let stopped = server.stop().await;

    // What a kill -9 mid-turn leaves: a started turn, part of its answer, a torn line,
    // and the open-turn journal entry.
    let log_path = sessions_dir.join(&session.id).join("events.jsonl");
    let turn_id = uuid::Uuid::now_v7();
    let mut log = std::fs::OpenOptions::new()
        .append(true)
        .open(&log_path)
        .expect("log");
    let seq = done.last_sequence;
    let at = 1_700_000_000_000u64;
    writeln!(
        log,
        r#"{{"id":"{}","session_id":"{}","seq":{},"at":{at},"turn_id":"{turn_id}","type":"turn_started","data":{{"prompt":"crash","context":{{"cwd":".","model":{{"provider":"replay","name":"main"}},"sandbox_mode":"workspace_write","approval_policy":"on_request"}}}}}}"#,
        uuid::Uuid::new_v4(),
        session.id,
        seq + 1
    )
    .expect("write");
    writeln!(
        log,
        r#"{{"id":"{}","session_id":"{}","seq":{},"at":{at},"turn_id":"{turn_id}","type":"agent_message_delta","data":{{"delta":"par"}}}}"#,
        uuid::Uuid::new_v4(),
        session.id,
        seq + 2
    )
    .expect("write");
    write!(log, r#"{{"id":"torn","session_id":"#).expect("torn tail");
    drop(log);
    let mut journal = std::fs::OpenOptions::new()
        .append(true)
        .open(sessions_dir.join(".open-turns"))
        .expect("journal");
    writeln!(journal, "+{}", session.id).expect("journal entry");
    drop(journal);

    let server = stopped.start_again().await;
    let events = server.events(&session.id, seq, seq + 3).await;
    let kinds: Vec<&str> = events.iter().map(payload_kind).collect();
    assert_eq!(
        kinds,
        ["turn_started", "agent_message_delta", "turn_completed"]
    );
    let Some(Payload::TurnCompleted(interrupted)) = &events[2].payload else {
        panic!("turn_completed");
    };
    assert_eq!(interrupted.outcome, pb::TurnOutcome::Interrupted as i32);
    assert_eq!(events[2].turn_id, turn_id.to_string());
    let journal = std::fs::read_to_string(sessions_dir.join(".open-turns")).expect("journal");
    let last = journal.lines().rfind(|l| l.ends_with(session.id.as_str()));
    assert!(
        last.is_none_or(|l| l.starts_with('-')),
        "journal entry cleared: {journal}"
    );
    let raw = std::fs::read_to_string(&log_path).expect("log");
    assert!(
        raw.ends_with('\n') && !raw.contains("torn"),
        "torn tail cut off"
    );
    // And the session works on.
    let status = server.run(&session.id, "after the crash").await;
    assert_eq!(status.first_sequence, seq + 4);
}

#[tokio::test]
async fn a_corrupt_session_is_quarantined_and_the_rest_keep_working() {
    let server = TestServer::start().await;
    let project = Project::replay("mixed", &[r#"{"text": "fine"}"#]);
    let bundle = server.install(&project).await;
    let reference = format!("mixed@{}", crate::support::bundle_version(&bundle));
    let good = server.create_session(&reference).await;
    let bad = server.create_session(&reference).await;
    server.run(&bad.id, "hello").await;
    let sessions_dir = server.sessions_dir();
    let stopped = server.stop().await;

    // Garbage in the middle of the log: not a torn tail, so not repairable.
    let log_path = sessions_dir.join(&bad.id).join("events.jsonl");
    let raw = std::fs::read_to_string(&log_path).expect("log");
    let mut lines: Vec<&str> = raw.lines().collect();
    lines[1] = "{ this is not an event }";
    std::fs::write(&log_path, format!("{}\n", lines.join("\n"))).expect("corrupt");

    let server = stopped.start_again().await;
    let status = server
        .sessions()
        .get_session(pb::GetSessionRequest {
            session_id: bad.id.clone(),
        })
        .await
        .expect_err("corrupt session");
    assert_eq!(status.code(), Code::FailedPrecondition);
    assert!(
        status.message().contains("quarantine"),
        "{}",
        status.message()
    );
    assert!(
        server
            .home()
            .join("quarantine")
            .join(&bad.id)
            .join("events.jsonl")
            .exists()
    );

    let info = server
        .server()
        .get_server_info(pb::GetServerInfoRequest {})
        .await
        .expect("server info")
        .into_inner();
    let quarantined = info
        .quarantined_sessions
        .iter()
        .find(|q| q.session_id == bad.id)
        .expect("reported in GetServerInfo");
    assert!(
        quarantined.reason.contains("line 2"),
        "reason names the line: {}",
        quarantined.reason
    );

    let ok = server.run(&good.id, "still here?").await;
    assert_eq!(ok.state, pb::ExecutionState::Completed as i32);

    // After another restart the quarantine is still reported (read from disk).
    let server = server.restart().await;
    let info = server
        .server()
        .get_server_info(pb::GetServerInfoRequest {})
        .await
        .expect("server info")
        .into_inner();
    assert!(
        info.quarantined_sessions
            .iter()
            .any(|q| q.session_id == bad.id)
    );
}

#[tokio::test]
async fn shutdown_interrupts_turns_that_outlive_the_grace_period_and_records_them() {
    let server = TestServer::start_with(|args| args.shutdown_grace_seconds = Some(0)).await;
    let session = server
        .session_on(&Project::replay(
            "longrun",
            &[r#"{"text": ["a","b","c","d","e","f","g","h"], "chunk_delay_ms": 500}"#],
        ))
        .await;
    let execution_id = server
        .submit(&session.id, "go slowly")
        .await
        .expect("submit");
    server
        .wait_for_state(&execution_id, pb::ExecutionState::Running)
        .await;
    let stopped = server.stop().await;
    let server = stopped.start_again().await;
    let reopened = server.get_session(&session.id).await;
    let events = server.events(&session.id, 0, reopened.last_sequence).await;
    let Some(Payload::TurnCompleted(done)) = &events.last().and_then(|e| e.payload.clone()) else {
        panic!("the turn ended in the log");
    };
    assert_eq!(done.outcome, pb::TurnOutcome::Interrupted as i32);
    assert_eq!(events.last().map(|e| e.turn_id.clone()), Some(execution_id));
    assert_eq!(reopened.turn_count, 1);
}
