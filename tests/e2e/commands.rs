//! Operator commands: one process in the session's cell, outside any turn, with its
//! output streamed in order and recorded as exec-command events.

use futures::StreamExt;
use odyssey_api::v1 as pb;
use pb::stream_session_command_response::Item;
use tonic::Code;

use crate::support::{Project, TestServer, payload_kind};

#[tokio::test]
async fn run_and_stream_session_commands_in_the_sandbox() {
    let server = TestServer::start().await;
    let session = server
        .session_on(&Project::replay("ops", &[r#"{"text": "hi"}"#]))
        .await;

    let ran = server
        .executions()
        .run_session_command(pb::RunSessionCommandRequest {
            session_id: session.id.clone(),
            command_line: "printf 'one two'".into(),
            ..Default::default()
        })
        .await
        .expect("run command")
        .into_inner();
    assert_eq!((ran.exit_code, ran.stdout.as_str()), (0, "one two"));

    let script = "for i in 1 2 3 4 5; do echo out$i; echo err$i >&2; sleep 0.02; done; echo kept > made.txt; exit 3";
    let mut stream = server
        .executions()
        .stream_session_command(pb::StreamSessionCommandRequest {
            session_id: session.id.clone(),
            argv: vec!["bash".into(), "-c".into(), script.into()],
            ..Default::default()
        })
        .await
        .expect("stream command")
        .into_inner();
    let (mut stdout, mut stderr, mut kinds, mut end) =
        (String::new(), String::new(), Vec::new(), None);
    while let Some(message) = stream.next().await {
        match message.expect("item").item.expect("item set") {
            Item::Begin(begin) => {
                kinds.push("begin");
                assert_eq!(begin.argv[0], "bash");
            }
            Item::Output(output) => {
                kinds.push("output");
                if output.stream == pb::OutputStream::Stdout as i32 {
                    stdout.push_str(&output.text);
                } else {
                    stderr.push_str(&output.text);
                }
            }
            Item::End(e) => {
                kinds.push("end");
                end = Some(e);
            }
        }
    }
    assert_eq!(kinds.first(), Some(&"begin"));
    assert_eq!(kinds.last(), Some(&"end"));
    assert_eq!(stdout, "out1\nout2\nout3\nout4\nout5\n", "stdout in order");
    assert_eq!(stderr, "err1\nerr2\nerr3\nerr4\nerr5\n", "stderr in order");
    assert_eq!(end.map(|e| e.exit_code), Some(3));
    let made = server
        .home()
        .join("sandbox")
        .join(&session.id)
        .join("data")
        .join("made.txt");
    assert_eq!(
        std::fs::read_to_string(made).expect("ran in the workspace"),
        "kept\n"
    );

    // Recorded in the session's log, outside any turn.
    let info = server.get_session(&session.id).await;
    let events = server.events(&session.id, 0, info.last_sequence).await;
    let kinds: Vec<&str> = events.iter().map(payload_kind).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "exec_command_begin").count(),
        2
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "exec_command_end").count(),
        2
    );
    assert!(events.iter().all(|e| e.turn_id.is_empty()));
    assert_eq!(info.turn_count, 0, "not a turn");
}

#[tokio::test]
async fn bad_operator_commands_are_refused_naming_the_field() {
    let server = TestServer::start().await;
    let session = server
        .session_on(&Project::replay("badops", &[r#"{"text": "hi"}"#]))
        .await;
    let mut executions = server.executions();
    for (request, field) in [
        (
            pb::RunSessionCommandRequest {
                session_id: session.id.clone(),
                command_line: "ls; rm -rf data".into(),
                ..Default::default()
            },
            "command_line",
        ),
        (
            pb::RunSessionCommandRequest {
                session_id: session.id.clone(),
                ..Default::default()
            },
            "argv",
        ),
        (
            pb::RunSessionCommandRequest {
                session_id: session.id.clone(),
                argv: vec!["ls".into()],
                cwd: "../..".into(),
                ..Default::default()
            },
            "cwd",
        ),
    ] {
        let status = executions
            .run_session_command(request)
            .await
            .expect_err("refused");
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        assert_eq!(crate::support::bad_fields(&status), vec![field]);
    }
    let missing = executions
        .run_session_command(pb::RunSessionCommandRequest {
            session_id: uuid::Uuid::new_v4().to_string(),
            argv: vec!["true".into()],
            ..Default::default()
        })
        .await
        .expect_err("unknown session");
    assert_eq!(missing.code(), Code::NotFound);
}

/// A caller that goes away takes its command along: the process group is killed, and the
/// log still closes the command.
#[tokio::test]
async fn a_dropped_command_stream_stops_the_command() {
    let server = TestServer::start().await;
    let session = server
        .session_on(&Project::replay("ops", &[r#"{"text": "hi"}"#]))
        .await;
    let script = "echo started; sleep 30; echo late > late.txt";
    let mut stream = server
        .executions()
        .stream_session_command(pb::StreamSessionCommandRequest {
            session_id: session.id.clone(),
            argv: vec!["bash".into(), "-c".into(), script.into()],
            ..Default::default()
        })
        .await
        .expect("stream command")
        .into_inner();
    // Running for sure: its first output arrived.
    loop {
        match stream.next().await.expect("more").expect("item").item {
            Some(Item::Output(_)) => break,
            Some(Item::End(end)) => panic!("ended early: {end:?}"),
            _ => {}
        }
    }
    drop(stream);
    let started = std::time::Instant::now();
    loop {
        let info = server.get_session(&session.id).await;
        let events = server.events(&session.id, 0, info.last_sequence).await;
        if events.iter().any(|e| payload_kind(e) == "exec_command_end") {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "the command still runs 20 s after its caller left"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let late = server
        .home()
        .join("sandbox")
        .join(&session.id)
        .join("data")
        .join("late.txt");
    assert!(!late.exists(), "the command ran to its end");
}
