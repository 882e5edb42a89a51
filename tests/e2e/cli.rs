//! The `odyssey` CLI, run in-process against a real server: the demo, bundles, sessions,
//! a streamed turn, the event log, errors as one line with a non-zero exit, operator
//! commands (`exec`) in the real sandbox, and approvals (`approvals`, `approvals --watch`,
//! `approve`, `deny`, and `run`'s answers to the requests of its own turn).

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use odyssey_api::v1 as pb;
use odyssey_api::v1::approval_service_client::ApprovalServiceClient;
use odyssey_client::{OdysseyClient, OperatorCommand};

use crate::support::{Project, TestServer};

/// Writes `echo approved > proof.txt` in the session's workspace, once approved.
const BASH_CALL: &str = r#"{"tool_calls": [{"id": "call_b", "name": "Bash", "arguments": {"command": "echo approved > proof.txt"}}]}"#;

/// How long any one CLI invocation may take before the test fails instead of hanging.
const BOUND: Duration = Duration::from_secs(60);

/// Runs a CLI command; returns (exit code, stdout, stderr).
async fn odyssey(args: &[&str]) -> (i32, String, String) {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let args = args.iter().map(|a| a.to_string()).collect();
    let code = tokio::time::timeout(BOUND, odyssey_cli::run_cli(args, &mut out, &mut err))
        .await
        .unwrap_or_else(|_| panic!("the command did not finish within {BOUND:?}"));
    (
        code,
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    )
}

#[tokio::test]
async fn the_demo_runs_a_streamed_turn_with_no_network_and_no_key() {
    let (code, out, err) = odyssey(&["demo"]).await;
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(
        out.contains("Welcome to Odyssey!"),
        "streamed answer shown:\n{out}"
    );
    assert!(out.contains("This answer is streaming to you"), "{out}");
    // Issue 12 item 11: the server and its home are gone once the demo ends, so it does not
    // send the user to replay a session from them; it says how to keep them.
    assert!(!out.contains("odyssey events"), "{out}");
    assert!(out.contains("run `odyssey demo --keep`"), "{out}");

    let home = tempfile::tempdir().expect("demo home");
    let dir = home.path().to_string_lossy().into_owned();
    let (code, out, err) = odyssey(&["demo", "--home", &dir]).await;
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(
        out.contains("Replay this turn from the kept home:"),
        "{out}"
    );
    assert!(out.contains("  odyssey events "), "{out}");
}

#[tokio::test]
async fn bundles_sessions_turns_and_events_from_the_command_line() {
    let server = TestServer::start().await;
    let url = server.handle.url();
    let project = Project::replay("clitest", &[r#"{"text": ["Hi ", "from ", "the CLI."]}"#]);
    let dir = project.path().to_string_lossy().into_owned();

    // A local build writes the artifact and installs nothing.
    let artifact = tempfile::tempdir().expect("out dir");
    let artifact_path = artifact.path().join("clitest.tar.gz");
    let artifact_str = artifact_path.to_string_lossy().into_owned();
    let (code, _, err) = odyssey(&["bundle", "build", &dir, "--output", &artifact_str]).await;
    assert_eq!(code, 0, "{err}");
    assert!(artifact_path.is_file());
    let (code, out, _) = odyssey(&["--server", &url, "--json", "bundle", "list"]).await;
    assert_eq!(code, 0);
    assert!(out.trim().is_empty(), "nothing installed yet: {out}");

    let (code, _, err) = odyssey(&["--server", &url, "bundle", "import", &artifact_str]).await;
    assert_eq!(code, 0, "{err}");
    let (code, out, err) =
        odyssey(&["--server", &url, "--json", "session", "create", "clitest"]).await;
    assert_eq!(code, 0, "{err}");
    let session: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
    let id = session["id"].as_str().expect("session id").to_string();

    let (code, out, err) = odyssey(&["--server", &url, "run", &id, "hello"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Hi from the CLI."), "{out}");

    let (code, out, _) = odyssey(&["--server", &url, "--json", "events", &id]).await;
    assert_eq!(code, 0);
    let sequences: Vec<u64> = out
        .lines()
        .map(|line| {
            // Each line is SubscribeSession's message in its canonical JSON form: the proto's
            // names, 64-bit integers as strings.
            let event: serde_json::Value = serde_json::from_str(line).expect("JSON line");
            assert_eq!(event["event"]["sessionId"], id.as_str(), "{line}");
            let parsed: pb::SubscribeSessionResponse =
                odyssey_api::json::from_str(line).expect("a SubscribeSessionResponse");
            let Some(pb::subscribe_session_response::Item::Event(parsed)) = parsed.item else {
                panic!("not an event: {line}");
            };
            assert_eq!(event["event"]["sequence"], parsed.sequence.to_string());
            parsed.sequence
        })
        .collect();
    assert!(sequences.len() >= 5, "{out}");
    assert_eq!(sequences, (1..=sequences.len() as u64).collect::<Vec<_>>());

    // The second turn fails (the cassette has one answer): exit 1, one clear line.
    let (code, _, err) = odyssey(&["--server", &url, "run", &id, "again"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("cassette"), "{err}");

    let missing = uuid::Uuid::new_v4().to_string();
    let (code, _, err) = odyssey(&["--server", &url, "session", "get", &missing]).await;
    assert_eq!(code, 1);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains("NOT_FOUND"), "{err}");
}

/// A replay project whose agent may read freely but must ask before any Bash command.
fn bash_project(name: &str, cassette: &[&str]) -> Project {
    Project::with_tools(name, cassette, &["Bash", "Read"], "[Read]", "[Bash]", "[]")
}

/// A file in the session's sandbox workspace.
fn workspace_file(server: &TestServer, session_id: &str, relative: &str) -> PathBuf {
    server
        .home()
        .join("sandbox")
        .join(session_id)
        .join("data")
        .join(relative)
}

fn json_lines(out: &str) -> Vec<serde_json::Value> {
    out.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

/// The pending requests, through the generated client (not the CLI under test).
async fn pending(server: &TestServer, session_id: &str) -> Vec<pb::Approval> {
    ApprovalServiceClient::new(server.channel.clone())
        .list_approvals(pb::ListApprovalsRequest {
            session_id: session_id.into(),
            ..Default::default()
        })
        .await
        .expect("list approvals")
        .into_inner()
        .approvals
}

/// Submits a turn and waits until it waits for approval; returns the execution id.
async fn waiting_turn(server: &TestServer, session_id: &str, prompt: &str) -> String {
    let execution = server.submit(session_id, prompt).await.expect("submit");
    server
        .wait_for_state(&execution, pb::ExecutionState::WaitingApproval)
        .await;
    execution
}

/// A writer that another future can read while the CLI is still writing to it.
#[derive(Clone, Default)]
struct SharedBuffer(Arc<Mutex<Vec<u8>>>);

impl SharedBuffer {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("buffer lock")).into_owned()
    }
}

impl Write for SharedBuffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("buffer lock").extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn exec_streams_both_streams_in_order_and_exits_with_the_commands_code() {
    let server = TestServer::start().await;
    let url = server.handle.url();
    let session = server
        .session_on(&Project::replay("execcli", &[r#"{"text": "hi"}"#]))
        .await;
    let id = session.id.as_str();

    // Interleaved output lands on the matching stream, each in order; the last stderr
    // line (no newline of its own) is closed, and the exit code becomes ours, silently.
    let script = "for i in 1 2 3; do echo out$i; echo err$i >&2; done; printf partial >&2; exit 3";
    let (code, out, err) =
        odyssey(&["--server", &url, "exec", id, "--", "bash", "-c", script]).await;
    assert_eq!(code, 3, "stdout:\n{out}\nstderr:\n{err}");
    assert_eq!(out, "out1\nout2\nout3\n");
    assert_eq!(err, "err1\nerr2\nerr3\npartial\n");

    // --cwd is relative to the workspace, --timeout-ms is the limit; exit 0 is success.
    let (code, _, err) = odyssey(&["--server", &url, "exec", id, "--", "mkdir", "-p", "sub"]).await;
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = odyssey(&[
        "--server",
        &url,
        "exec",
        id,
        "--cwd",
        "sub",
        "--timeout-ms",
        "20000",
        "--",
        "bash",
        "-c",
        "echo here > made.txt; echo ok",
    ])
    .await;
    assert_eq!((code, out.as_str(), err.as_str()), (0, "ok\n", ""));
    assert_eq!(
        std::fs::read_to_string(workspace_file(&server, id, "sub/made.txt"))
            .expect("ran in data/sub"),
        "here\n"
    );

    // A command past its timeout is killed: a failing exit and one line saying so.
    let started = Instant::now();
    let (code, out, err) = odyssey(&[
        "--server",
        &url,
        "exec",
        id,
        "--timeout-ms",
        "300",
        "--",
        "sleep",
        "30",
    ])
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "killed, not waited for"
    );
    assert_ne!(code, 0);
    assert_eq!(out, "");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("odyssey: the command timed out after ")
            && err.ends_with(" ms and was killed\n"),
        "{err}"
    );
}

#[tokio::test]
async fn exec_json_prints_begin_output_and_end_and_a_bad_session_is_one_line() {
    let server = TestServer::start().await;
    let url = server.handle.url();
    let session = server
        .session_on(&Project::replay("execjson", &[r#"{"text": "hi"}"#]))
        .await;
    let script = "echo to-out; echo to-err >&2; exit 3";
    let (code, out, err) = odyssey(&[
        "--server",
        &url,
        "--json",
        "exec",
        &session.id,
        "--",
        "bash",
        "-c",
        script,
    ])
    .await;
    assert_eq!(code, 3, "{err}");
    let items = json_lines(&out);
    // Each line is a StreamSessionCommandResponse: its one key is the item's kind.
    let kind = |i: &serde_json::Value| -> String {
        let object = i.as_object().expect("an object");
        assert_eq!(object.len(), 1, "{i}");
        object.keys().next().cloned().unwrap_or_default()
    };
    let kinds: Vec<String> = items.iter().map(kind).collect();
    let kinds: Vec<&str> = kinds.iter().map(String::as_str).collect();
    assert_eq!(kinds.first(), Some(&"begin"), "{out}");
    assert_eq!(kinds.last(), Some(&"end"), "{out}");
    assert!(
        kinds[1..kinds.len() - 1].iter().all(|k| *k == "output"),
        "{out}"
    );
    assert_eq!(
        items[0]["begin"]["argv"],
        serde_json::json!(["bash", "-c", script])
    );
    let text = |stream: &str| -> String {
        items
            .iter()
            .filter(|i| i["output"]["stream"] == stream)
            .map(|i| i["output"]["text"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(text("OUTPUT_STREAM_STDOUT"), "to-out\n");
    assert_eq!(text("OUTPUT_STREAM_STDERR"), "to-err\n");
    let end = &items.last().unwrap()["end"];
    assert_eq!(end["exitCode"], 3);
    // proto3 JSON leaves out default values: not timed out is no `timedOut`.
    assert_eq!(end.get("timedOut"), None);
    let exec_id = end["execId"].as_str().unwrap();
    assert!(!exec_id.is_empty());
    assert!(items.iter().all(|i| i[kind(i)]["execId"] == exec_id));
    for line in out.lines() {
        let item: pb::StreamSessionCommandResponse =
            odyssey_api::json::from_str(line).expect("a StreamSessionCommandResponse");
        assert!(item.item.is_some(), "{line}");
    }
    assert_eq!(err, "", "JSON mode writes the output into the objects only");

    let missing = uuid::Uuid::new_v4().to_string();
    let (code, out, err) = odyssey(&["--server", &url, "exec", &missing, "--", "true"]).await;
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("odyssey: "), "{err}");
    assert!(err.trim_end().ends_with("(NOT_FOUND)"), "{err}");
}

#[tokio::test]
async fn the_sdk_runs_command_lines_and_ends_streams_after_their_end_item() {
    let server = TestServer::start().await;
    let session = server
        .session_on(&Project::replay("execsdk", &[r#"{"text": "hi"}"#]))
        .await;
    let client = OdysseyClient::connect(server.handle.url(), None)
        .await
        .expect("connect");

    // A command line is split by the server with shell quoting, then run without a
    // shell, in the given directory of the workspace.
    let made = client
        .run_session_command(
            &session.id,
            OperatorCommand::Line("mkdir -p 'a dir'".into()),
            None,
            Some(Duration::from_secs(20)),
        )
        .await
        .expect("mkdir");
    assert_eq!(made.exit_code, 0, "{made:?}");
    let ran = client
        .run_session_command(
            &session.id,
            OperatorCommand::Line("cp -v /dev/null 'made by a line'".into()),
            Some("a dir"),
            Some(Duration::from_secs(20)),
        )
        .await
        .expect("run command line");
    assert_eq!(ran.exit_code, 0, "{ran:?}");
    assert!(ran.stdout.contains("made by a line"), "{ran:?}");
    assert!(
        workspace_file(&server, &session.id, "a dir/made by a line").is_file(),
        "ran in the given cwd, with the quoted argument whole"
    );

    let mut stream = client
        .stream_session_command(
            &session.id,
            OperatorCommand::Argv(vec!["bash".into(), "-c".into(), "echo x; exit 3".into()]),
            None,
            None,
        )
        .await
        .expect("stream");
    let mut kinds = Vec::new();
    while let Some(item) = tokio::time::timeout(BOUND, stream.next())
        .await
        .expect("items keep coming")
        .expect("item")
    {
        use pb::stream_session_command_response::Item;
        kinds.push(match item.item.expect("item set") {
            Item::Begin(_) => "begin",
            Item::Output(_) => "output",
            Item::End(_) => "end",
        });
    }
    kinds.dedup();
    assert_eq!(kinds, ["begin", "output", "end"]);
    assert_eq!(stream.end().map(|e| e.exit_code), Some(3));
    assert!(stream.next().await.expect("after the end").is_none());
}

#[tokio::test]
async fn approvals_lists_pending_requests_and_approve_lets_the_turn_finish() {
    let server = TestServer::start().await;
    let url = server.handle.url();
    let bundle = server
        .install(&bash_project(
            "approvecli",
            &[BASH_CALL, r#"{"text": "done"}"#],
        ))
        .await;
    let reference = format!("approvecli@{}", crate::support::bundle_version(&bundle));
    let first = server.create_session(&reference).await;
    let second = server.create_session(&reference).await;
    let first_turn = waiting_turn(&server, &first.id, "write the proof").await;
    let second_turn = waiting_turn(&server, &second.id, "write it too").await;

    // One session's request as a table, then everyone's.
    let (code, out, err) = odyssey(&["--server", &url, "approvals", "--session", &first.id]).await;
    assert_eq!(code, 0, "{err}");
    let rows: Vec<&str> = out.lines().collect();
    assert_eq!(rows.len(), 2, "{out}");
    let header: Vec<&str> = rows[0].split_whitespace().collect();
    assert_eq!(header, ["REQUEST", "SESSION", "TOOL", "CALL", "AGE"]);
    let row: Vec<&str> = rows[1].split_whitespace().collect();
    let request = row[0].to_owned();
    assert_eq!(&row[1..3], [first.id.as_str(), "Bash"], "{out}");
    assert!(rows[1].contains("echo approved > proof.txt"), "{out}");
    let (code, out, _) = odyssey(&["--server", &url, "approvals"]).await;
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 3, "both sessions' requests: {out}");

    let (code, out, _) = odyssey(&["--server", &url, "--json", "approvals"]).await;
    assert_eq!(code, 0);
    let listed = json_lines(&out);
    assert_eq!(listed.len(), 2, "{out}");
    let mine: Vec<&serde_json::Value> = listed
        .iter()
        .filter(|a| a["sessionId"] == first.id.as_str())
        .collect();
    assert_eq!(mine.len(), 1, "{out}");
    assert_eq!(mine[0]["requestId"], request.as_str());
    assert_eq!(mine[0]["executionId"], first_turn.as_str());
    assert_eq!(mine[0]["tool"], "Bash");
    assert_eq!(mine[0]["arguments"]["command"], "echo approved > proof.txt");
    let display = mine[0]["display"].as_str().unwrap().to_owned();
    assert_eq!(display, "echo approved > proof.txt");
    // proto3 JSON leaves out default values: `false` is absent.
    assert_eq!(mine[0].get("controlCharacters"), None);
    let parsed: pb::Approval =
        odyssey_api::json::from_str(&mine[0].to_string()).expect("an Approval");
    assert_eq!(
        (parsed.request_id.as_str(), parsed.control_characters),
        (request.as_str(), false)
    );
    let (code, out, _) = odyssey(&[
        "--server",
        &url,
        "--json",
        "approvals",
        "--session",
        &second.id,
    ])
    .await;
    assert_eq!(code, 0);
    let others = json_lines(&out);
    assert_eq!(others.len(), 1, "{out}");
    assert_eq!(others[0]["sessionId"], second.id.as_str());
    let other_request = others[0]["requestId"].as_str().unwrap().to_owned();

    // Approving once lets the waiting turn run the command and finish.
    let (code, out, err) = odyssey(&["--server", &url, "approve", &request]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        format!(
            "Allowed once: Bash (request {request}, session {})\n    {display}\n",
            first.id
        )
    );
    server
        .wait_for_state(&first_turn, pb::ExecutionState::Completed)
        .await;
    assert_eq!(server.status(&first_turn).await.response, "done");
    assert_eq!(
        std::fs::read_to_string(workspace_file(&server, &first.id, "proof.txt"))
            .expect("the approved command ran in the workspace"),
        "approved\n"
    );

    // Answering it again, or an id nobody issued: one line, the code named, exit 1.
    let (code, out, err) = odyssey(&["--server", &url, "approve", &request]).await;
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("odyssey: ") && err.contains(&request),
        "{err}"
    );
    assert!(err.trim_end().ends_with("(FAILED_PRECONDITION)"), "{err}");
    let nobody = uuid::Uuid::now_v7().to_string();
    let (code, _, err) = odyssey(&["--server", &url, "deny", &nobody]).await;
    assert_eq!(code, 1);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.trim_end().ends_with("(NOT_FOUND)"), "{err}");

    // The other session still waits; a deny without a reason ends it, and then nothing
    // is pending.
    let (code, out, err) = odyssey(&["--json", "--server", &url, "deny", &other_request]).await;
    assert_eq!(code, 0, "{err}");
    let resolved = json_lines(&out);
    assert_eq!(resolved[0]["decision"], "APPROVAL_DECISION_DENY");
    assert_eq!(resolved[0]["approval"]["requestId"], other_request.as_str());
    server
        .wait_for_state(&second_turn, pb::ExecutionState::Completed)
        .await;
    assert!(!workspace_file(&server, &second.id, "proof.txt").exists());
    let (code, out, err) = odyssey(&["--server", &url, "approvals"]).await;
    assert_eq!(
        (code, out.as_str(), err.as_str()),
        (0, "", "No pending approvals.\n")
    );
}

#[tokio::test]
async fn approve_always_lets_the_same_command_run_again_without_asking() {
    let server = TestServer::start().await;
    let url = server.handle.url();
    let session = server
        .session_on(&bash_project(
            "alwayscli",
            &[
                BASH_CALL,
                r#"{"text": "one"}"#,
                BASH_CALL,
                r#"{"text": "two"}"#,
            ],
        ))
        .await;
    let first = waiting_turn(&server, &session.id, "first").await;
    let waiting = pending(&server, &session.id).await;
    assert_eq!(waiting.len(), 1);
    let request = &waiting[0].request_id;
    let (code, out, err) = odyssey(&["--server", &url, "approve", request, "--always"]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        format!(
            "Allowed for the rest of the session: Bash (request {request}, session {})\n    {}\n",
            session.id, waiting[0].display
        )
    );
    server
        .wait_for_state(&first, pb::ExecutionState::Completed)
        .await;
    std::fs::remove_file(workspace_file(&server, &session.id, "proof.txt")).expect("first proof");

    // `run` off a terminal would print how to answer and wait; it finishes on its own,
    // so nothing asked.
    let (code, out, err) = odyssey(&["--server", &url, "run", &session.id, "same again"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("two"), "{out}");
    assert!(!err.contains("waits for approval"), "nothing asked: {err}");
    assert_eq!(
        std::fs::read_to_string(workspace_file(&server, &session.id, "proof.txt"))
            .expect("ran again"),
        "approved\n"
    );
}

#[tokio::test]
async fn deny_with_a_reason_tells_the_model_and_nothing_runs() {
    let server = TestServer::start().await;
    let url = server.handle.url();
    // The second answer only plays if the model was told exactly this.
    let session = server
        .session_on(&bash_project(
            "denycli",
            &[
                BASH_CALL,
                r#"{"text": "understood", "request": {"last_message": {"role": "tool", "content": "denied by the user: not on a Friday"}}}"#,
            ],
        ))
        .await;
    let execution = waiting_turn(&server, &session.id, "try").await;
    let request = pending(&server, &session.id).await[0].request_id.clone();
    let (code, out, err) = odyssey(&[
        "--server",
        &url,
        "deny",
        &request,
        "--reason",
        "not on a Friday",
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        format!(
            "Denied: Bash (request {request}, session {})\n    echo approved > proof.txt\n",
            session.id
        )
    );
    server
        .wait_for_state(&execution, pb::ExecutionState::Completed)
        .await;
    assert_eq!(server.status(&execution).await.response, "understood");
    assert!(
        !workspace_file(&server, &session.id, "proof.txt").exists(),
        "a denied command never runs"
    );
}

#[tokio::test]
async fn run_auto_approve_and_auto_deny_answer_the_turns_own_request() {
    let server = TestServer::start().await;
    let url = server.handle.url();

    let approved = server
        .session_on(&bash_project(
            "autoapprove",
            &[BASH_CALL, r#"{"text": "The proof is written."}"#],
        ))
        .await;
    let (code, out, err) = odyssey(&[
        "--server",
        &url,
        "run",
        &approved.id,
        "write it",
        "--auto-approve",
    ])
    .await;
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("The proof is written."), "{out}");
    assert!(
        err.contains(
            "? Bash asks to run — allowed once (--auto-approve):\n    echo approved > proof.txt\n"
        ),
        "{err}"
    );
    assert!(err.contains("✓ "), "the resolution is shown: {err}");
    assert_eq!(
        std::fs::read_to_string(workspace_file(&server, &approved.id, "proof.txt"))
            .expect("the approved command ran"),
        "approved\n"
    );
    assert!(pending(&server, &approved.id).await.is_empty());

    let denied = server
        .session_on(&bash_project(
            "autodeny",
            &[
                BASH_CALL,
                r#"{"text": "Not writing it, then.", "request": {"last_message": {"role": "tool", "content": "denied by the user: denied by the CLI (non-interactive)"}}}"#,
            ],
        ))
        .await;
    let (code, out, err) = odyssey(&[
        "--server",
        &url,
        "run",
        &denied.id,
        "write it",
        "--auto-deny",
    ])
    .await;
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("Not writing it, then."), "{out}");
    assert!(
        err.contains("? Bash asks to run — denied (--auto-deny):\n    echo approved > proof.txt\n"),
        "{err}"
    );
    assert!(err.contains("✗ "), "the resolution is shown: {err}");
    assert!(!workspace_file(&server, &denied.id, "proof.txt").exists());
}

#[tokio::test]
async fn run_off_a_terminal_prints_the_exact_command_that_answers_and_keeps_waiting() {
    let server = TestServer::start().await;
    let url = server.handle.url();
    let session = server
        .session_on(&bash_project(
            "waitcli",
            &[BASH_CALL, r#"{"text": "Approved from elsewhere."}"#],
        ))
        .await;

    // `run` streams into a buffer the test reads while it is still running; the test
    // runs the approve command it printed, exactly as printed.
    let err = SharedBuffer::default();
    let run = async {
        let mut out = Vec::new();
        let mut err = err.clone();
        let args = ["--server", &url, "run", &session.id, "write it"]
            .map(String::from)
            .to_vec();
        let code = odyssey_cli::run_cli(args, &mut out, &mut err).await;
        (code, String::from_utf8_lossy(&out).into_owned())
    };
    let answer = async {
        let printed = printed_command(&err, " approve ").await;
        // Still pending: `run` printed the command and sent nothing.
        let waiting = pending(&server, &session.id).await;
        assert_eq!(waiting.len(), 1, "{}", err.text());
        let id = &waiting[0].request_id;
        assert_eq!(printed, format!("odyssey --server {url} approve {id}"));
        let text = err.text();
        assert!(
            text.contains(&format!("odyssey --server {url} deny {id}")),
            "{text}"
        );
        let args: Vec<&str> = printed.split_whitespace().collect();
        odyssey(&args).await
    };
    let ((code, out), (approve_code, _, approve_err)) =
        tokio::time::timeout(BOUND, async { tokio::join!(run, answer) })
            .await
            .expect("the turn finished once approved");
    let err = err.text();
    assert_eq!(approve_code, 0, "{approve_err}");
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("Approved from elsewhere."), "{out}");
    assert!(
        err.contains("? Bash waits for approval (request ")
            && err.contains("):\n    echo approved > proof.txt\n"),
        "{err}"
    );
    assert!(err.contains("✓ "), "the resolution is shown: {err}");
    assert_eq!(
        std::fs::read_to_string(workspace_file(&server, &session.id, "proof.txt"))
            .expect("ran once approved"),
        "approved\n"
    );
}

/// Waits (bounded) until `err` holds a printed `odyssey …` command containing `verb`;
/// returns it without its trailing hint.
async fn printed_command(err: &SharedBuffer, verb: &str) -> String {
    let deadline = Instant::now() + BOUND;
    loop {
        let text = err.text();
        let found = text.lines().map(str::trim).find_map(|line| {
            (line.starts_with("odyssey ") && line.contains(verb))
                .then(|| line.split("   (").next().unwrap_or(line).trim().to_owned())
        });
        if let Some(command) = found {
            return command;
        }
        assert!(
            Instant::now() < deadline,
            "no `odyssey{verb}…` line in:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn run_notes_a_request_that_ended_before_its_answer_and_goes_on() {
    // A zero approval timeout ends every request as soon as it is filed: `run`'s answer
    // always arrives too late, deterministically.
    let server =
        TestServer::start_configured(|_| {}, |config| config.approval_timeout = Duration::ZERO)
            .await;
    let url = server.handle.url();
    let session = server
        .session_on(&bash_project(
            "latecli",
            &[
                BASH_CALL,
                r#"{"text": "Nobody approved it.", "request": {"last_message": {"role": "tool", "content": "denied: nobody approved the call in time"}}}"#,
            ],
        ))
        .await;
    let (code, out, err) = odyssey(&[
        "--server",
        &url,
        "run",
        &session.id,
        "write it",
        "--auto-approve",
    ])
    .await;
    assert_eq!(code, 0, "not an error:\nstdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("Nobody approved it."), "{out}");
    assert!(err.contains("was already answered elsewhere: "), "{err}");
    assert!(!workspace_file(&server, &session.id, "proof.txt").exists());
}

#[tokio::test]
async fn approvals_follows_every_page_of_a_long_queue() {
    // One more request than the CLI asks for per page (100), so the list takes two pages.
    const REQUESTS: usize = 101;
    let server = TestServer::start().await;
    let url = server.handle.url();
    let bundle = server
        .install(&bash_project("pagescli", &[BASH_CALL]))
        .await;
    let reference = format!("pagescli@{}", crate::support::bundle_version(&bundle));
    let mut sessions = Vec::new();
    for i in 0..REQUESTS {
        let session = server.create_session(&reference).await;
        let execution = server
            .submit(&session.id, &format!("turn {i}"))
            .await
            .expect("submit");
        sessions.push((session.id, execution));
    }
    for (_, execution) in &sessions {
        server
            .wait_for_state(execution, pb::ExecutionState::WaitingApproval)
            .await;
    }
    let (code, out, err) = odyssey(&["--server", &url, "--json", "approvals"]).await;
    assert_eq!(code, 0, "{err}");
    let listed: Vec<String> = json_lines(&out)
        .iter()
        .map(|a| a["sessionId"].as_str().unwrap().to_owned())
        .collect();
    // The server's order (requests as filed), read in one page through the generated client.
    let in_one_page: Vec<String> = ApprovalServiceClient::new(server.channel.clone())
        .list_approvals(pb::ListApprovalsRequest {
            page_size: 1_000,
            ..Default::default()
        })
        .await
        .expect("list approvals")
        .into_inner()
        .approvals
        .into_iter()
        .map(|a| a.session_id)
        .collect();
    assert_eq!(
        listed, in_one_page,
        "every request once, in the server's order"
    );
    let mut submitted: Vec<String> = sessions.into_iter().map(|(s, _)| s).collect();
    let mut listed = listed;
    submitted.sort();
    listed.sort();
    assert_eq!(listed, submitted, "one request per waiting turn");
    let (code, out, _) = odyssey(&["--server", &url, "approvals"]).await;
    assert_eq!(code, 0);
    assert_eq!(
        out.lines().count(),
        REQUESTS + 1,
        "a header and every request"
    );
}

/// Issue 12 item 9: `events --after N` past the session's end fails the same way with and
/// without `--follow`: exit 1, one line naming the last sequence. At the end exactly,
/// without `--follow`, there is simply nothing to print.
#[tokio::test]
async fn events_after_the_end_name_the_last_sequence() {
    let server = TestServer::start().await;
    let url = server.handle.url();
    let project = Project::replay("pastend", &[r#"{"text": ["Done."]}"#]);
    let dir = project.path().to_string_lossy().into_owned();
    let (code, _, err) = odyssey(&["--server", &url, "bundle", "build", &dir]).await;
    assert_eq!(code, 0, "{err}");
    let (code, out, err) =
        odyssey(&["--server", &url, "--json", "session", "create", "pastend"]).await;
    assert_eq!(code, 0, "{err}");
    let session: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
    let id = session["id"].as_str().expect("session id").to_string();
    let (code, _, err) = odyssey(&["--server", &url, "run", &id, "hello"]).await;
    assert_eq!(code, 0, "{err}");
    let (_, out, _) = odyssey(&["--server", &url, "--json", "session", "get", &id]).await;
    let info: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
    // A 64-bit integer is a string in proto3 JSON.
    let last: u64 = info["lastSequence"]
        .as_str()
        .and_then(|n| n.parse().ok())
        .expect("lastSequence");

    let past = (last + 5).to_string();
    for follow in [false, true] {
        let mut args = vec!["--server", url.as_str(), "events", &id, "--after", &past];
        if follow {
            args.push("--follow");
        }
        let (code, out, err) = odyssey(&args).await;
        assert_eq!(code, 1, "follow {follow}: {out}{err}");
        assert!(out.is_empty(), "{out}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(
            err.contains(&format!("--after {past} is past the end of session {id}"))
                && err.contains(&format!("its last sequence is {last}")),
            "{err}"
        );
    }
    let at_end = last.to_string();
    let (code, out, err) = odyssey(&["--server", &url, "events", &id, "--after", &at_end]).await;
    assert_eq!((code, out.as_str(), err.as_str()), (0, "", ""));
}

/// Waits until `buffer` holds at least `lines` lines, failing the test after `BOUND`.
async fn wait_for_lines(buffer: &SharedBuffer, lines: usize) -> String {
    let start = Instant::now();
    loop {
        let text = buffer.text();
        if text.lines().count() >= lines {
            return text;
        }
        assert!(start.elapsed() < BOUND, "only this came:\n{text}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn approvals_watch_prints_the_table_then_each_request_filed_and_ended() {
    let server = TestServer::start().await;
    let url = server.handle.url();
    let session = server
        .session_on(&bash_project(
            "watchcli",
            &[BASH_CALL, r#"{"text": "done"}"#],
        ))
        .await;
    let json_out = SharedBuffer::default();
    let text_out = SharedBuffer::default();
    let mut watchers = Vec::new();
    for (json, buffer) in [(true, json_out.clone()), (false, text_out.clone())] {
        let mut args = vec!["--server".to_owned(), url.clone()];
        if json {
            args.push("--json".into());
        }
        args.extend(["approvals", "--watch", "--session", &session.id].map(String::from));
        let mut out = buffer;
        watchers.push(tokio::spawn(async move {
            odyssey_cli::run_cli(args, &mut out, &mut std::io::sink()).await
        }));
    }
    // The snapshot: nothing pending (JSON: one line; text: the note goes to stderr).
    let first = wait_for_lines(&json_out, 1).await;
    assert_eq!(json_lines(&first)[0], serde_json::json!({"snapshot": {}}));

    let turn = waiting_turn(&server, &session.id, "write it").await;
    let text = wait_for_lines(&json_out, 2).await;
    let added = &json_lines(&text)[1]["added"];
    assert_eq!(added["executionId"], turn.as_str());
    let request = added["requestId"]
        .as_str()
        .expect("a request id")
        .to_owned();
    let shown = wait_for_lines(&text_out, 1).await;
    assert_eq!(
        shown,
        format!(
            "+ request {request} · session {} · Bash: echo approved > proof.txt\n",
            session.id
        )
    );

    let (code, _, err) = odyssey(&["--server", &url, "deny", &request, "--reason", "no"]).await;
    assert_eq!(code, 0, "{err}");
    let text = wait_for_lines(&json_out, 3).await;
    let removed = &json_lines(&text)[2]["removed"];
    assert_eq!(removed["requestId"], request.as_str());
    assert_eq!(removed["decision"], "APPROVAL_DECISION_DENY");
    let shown = wait_for_lines(&text_out, 2).await;
    assert!(
        shown.ends_with(&format!("- request {request}: denied (no)\n")),
        "{shown}"
    );
    for watcher in watchers {
        watcher.abort();
    }
}
