//! Fork, rewind and turn changes through a real server, with the files: turns whose tool
//! calls (Write, and Bash appending in place) change the workspace, against the OpenAI
//! wire format, whose requests the loopback server keeps (so the history a turn is sent
//! can be checked).

use std::path::PathBuf;
use std::time::Duration;

use odyssey_api::v1 as pb;
use odyssey_runtime::provider::ProviderSettings;
use odyssey_runtime::snapshot::MechanismChoice;
use odyssey_testing::openai_wire::{OpenAiWireServer, Reply, Script, StreamBuilder};
use pb::fork_session_request::Point;
use pb::session_event::Payload;
use serde_json::Value;
use tonic::Code;

use crate::support::{Project, TestServer, bad_fields};

const KEY: &str = "sk-test-fork-key-0123456789";

fn call(id: &str, tool: &str, arguments: &str) -> Reply {
    StreamBuilder::new()
        .tool_call(0, id, tool, arguments, 2)
        .finish("tool_calls")
        .done()
        .build()
}

fn text(answer: &str) -> Reply {
    StreamBuilder::new()
        .text(answer, 2)
        .finish("stop")
        .done()
        .build()
}

fn project() -> Project {
    let project = Project::openai("forks");
    project.write(
        "odyssey.bundle.yaml",
        "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: forks\n  version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      default: true\n  tools:\n    - { name: Bash, source: builtin }\n    - { name: Write, source: builtin }\n  sandbox:\n    mode: workspace_write\n",
    );
    project.write(
        "agents/main/agent.yaml",
        "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\n  version: 0.1.0\nspec:\n  kind: prompt\n  prompt: You are a test agent.\n  model:\n    provider: openai\n    name: gpt-test\n  tools:\n    allow: [Bash, Write]\n",
    );
    project
}

fn workspace(server: &TestServer, session_id: &str) -> PathBuf {
    server.home().join("sandbox").join(session_id).join("data")
}

fn read(path: PathBuf) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// The user messages of a chat-completions request, in order.
fn user_messages(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

async fn completed(server: &TestServer, session_id: &str, prompt: &str) {
    let status = server.run(session_id, prompt).await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{prompt}: {}",
        status.error
    );
}

async fn changes(server: &TestServer, session_id: &str, turn: u64) -> pb::GetTurnChangesResponse {
    server
        .sessions()
        .get_turn_changes(pb::GetTurnChangesRequest {
            session_id: session_id.into(),
            turn,
        })
        .await
        .expect("turn changes")
        .into_inner()
}

fn summary(changes: &pb::GetTurnChangesResponse) -> Vec<(String, pb::FileChangeKind)> {
    changes
        .changes
        .iter()
        .map(|c| {
            (
                c.path.clone(),
                pb::FileChangeKind::try_from(c.change).expect("kind"),
            )
        })
        .collect()
}

async fn fork(
    server: &TestServer,
    session_id: &str,
    point: Point,
) -> Result<pb::Session, tonic::Status> {
    server
        .sessions()
        .fork_session(pb::ForkSessionRequest {
            session_id: session_id.into(),
            point: Some(point),
        })
        .await
        .map(|r| r.into_inner().session.expect("session"))
}

#[tokio::test]
async fn forks_and_rewinds_carry_the_files_of_their_turn_and_nothing_else_with_copies() {
    forks_and_rewinds(MechanismChoice::Copies).await;
}

/// The same, on overlay layers: the in-place append in the fork lands in the fork's upper
/// folder, never in the layer it shares with the source and the later fork.
#[tokio::test]
async fn forks_and_rewinds_carry_the_files_of_their_turn_and_nothing_else_with_overlays() {
    if !overlays_mount() {
        return;
    }
    forks_and_rewinds(MechanismChoice::Overlay).await;
}

/// Whether this test process can mount overlays (as root); the overlay tests say so when
/// they cannot run, and CI runs them as root.
pub(crate) fn overlays_mount() -> bool {
    let dir = tempfile::tempdir().expect("tempdir");
    match odyssey_runtime::snapshot::overlay::probe(dir.path()) {
        Ok(()) => true,
        Err(e) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "overlays must mount in CI: {e}"
            );
            eprintln!("skipped: overlays do not mount here ({e})");
            false
        }
    }
}

async fn forks_and_rewinds(mechanism: MechanismChoice) {
    let overlay = mechanism == MechanismChoice::Overlay;
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            // Turn 1: Write.
            .reply(call(
                "call_1",
                "Write",
                r#"{"path": "notes.txt", "content": "one\n"}"#,
            ))
            .reply(text("wrote one"))
            // Turn 2: Bash appends in place and adds a file.
            .reply(call(
                "call_2",
                "Bash",
                r#"{"command": "printf 'two\\n' >> notes.txt && echo bee > second.txt"}"#,
            ))
            .reply(text("appended two"))
            // Turn 3, in the fork: an in-place append to the file it was given.
            .reply(call(
                "call_3",
                "Bash",
                r#"{"command": "printf 'fork\\n' >> notes.txt"}"#,
            ))
            .reply(text("appended in the fork"))
            // After the rewind, on the source.
            .reply(text("back at one"))
            // A turn held running while a rewind is asked for.
            .reply(
                StreamBuilder::new()
                    .text("slowly ", 1)
                    .pause(Duration::from_secs(60))
                    .text("never", 1)
                    .finish("stop")
                    .done()
                    .build(),
            ),
    )
    .await
    .expect("loopback model");
    let base_url = model.base_url();
    let server = TestServer::start_configured(
        |_| {},
        move |config| {
            config.snapshots.mechanism = mechanism;
            config.providers.insert(
                "openai".into(),
                ProviderSettings {
                    base_url: Some(base_url),
                    api_key: Some(KEY.into()),
                    ..ProviderSettings::default()
                },
            );
        },
    )
    .await;
    let info = server
        .server()
        .get_server_info(pb::GetServerInfoRequest {})
        .await
        .expect("info")
        .into_inner();
    assert_eq!(
        info.workspace_snapshots.expect("snapshots").mechanism,
        if overlay {
            pb::SnapshotMechanism::Overlay
        } else {
            pb::SnapshotMechanism::Copies
        } as i32
    );

    let source = server.session_on(&project()).await.id;
    completed(&server, &source, "first: write notes").await;
    completed(&server, &source, "second: append and add").await;
    let data = workspace(&server, &source);
    let last = server.get_session(&source).await.last_sequence;
    for event in server.events(&source, 0, last).await {
        if let Some(Payload::ToolCallFinished(done)) = &event.payload {
            assert!(done.success, "{}: {}", done.tool, done.result);
        }
    }
    assert_eq!(read(data.join("notes.txt")).as_deref(), Some("one\ntwo\n"));

    // What each turn changed, the same under either mechanism.
    turn_changes_of_the_source(&server, &source).await;

    // A fork after turn 1 sees turn 1's files, not turn 2's.
    let forked = fork(&server, &source, Point::AfterTurn(1))
        .await
        .expect("fork");
    assert_eq!(forked.forked_from, source);
    let at = forked.forked_at.clone().expect("forked_at");
    assert_eq!(at.turn, 1);
    assert_eq!(forked.turn_count, 1);
    let fork_data = workspace(&server, &forked.id);
    assert_eq!(read(fork_data.join("notes.txt")).as_deref(), Some("one\n"));
    assert!(!fork_data.join("second.txt").exists());

    // A turn in the fork appends in place; the source and its snapshots are untouched,
    // and the fork's model history holds turn 1, not turn 2.
    completed(&server, &forked.id, "third: in the fork").await;
    assert_eq!(
        read(fork_data.join("notes.txt")).as_deref(),
        Some("one\nfork\n")
    );
    assert_eq!(read(data.join("notes.txt")).as_deref(), Some("one\ntwo\n"));
    let requests = model.requests();
    assert_eq!(
        user_messages(&requests[4]),
        ["first: write notes", "third: in the fork"]
    );
    let again = fork(&server, &source, Point::AtSequence(at.sequence))
        .await
        .expect("fork at a sequence");
    assert_eq!(
        read(workspace(&server, &again.id).join("notes.txt")).as_deref(),
        Some("one\n"),
        "the snapshot of turn 1 is what it was"
    );
    if !overlay {
        let in_fork = changes(&server, &forked.id, 2).await;
        assert_eq!(in_fork.base_turn, 1);
        assert_eq!(
            summary(&in_fork),
            [("notes.txt".to_owned(), pb::FileChangeKind::Changed)]
        );
    }

    // Fork points that are not a turn's end are refused, naming the field.
    let refused = fork(&server, &source, Point::AtSequence(at.sequence - 1))
        .await
        .expect_err("not a turn's end");
    assert_eq!(refused.code(), Code::InvalidArgument);
    assert_eq!(bad_fields(&refused), ["at_sequence"]);
    let refused = fork(&server, &source, Point::AfterTurn(9))
        .await
        .expect_err("no turn 9");
    assert_eq!(refused.code(), Code::InvalidArgument);
    assert_eq!(bad_fields(&refused), ["after_turn"]);

    // Rewind the source to turn 1: files and history go back; the log keeps turn 2.
    let rewound = server
        .sessions()
        .rewind_session(pb::RewindSessionRequest {
            session_id: source.clone(),
            to_turn: 1,
        })
        .await
        .expect("rewind")
        .into_inner();
    match rewound.event.and_then(|e| e.payload) {
        Some(Payload::SessionRewound(r)) => {
            assert_eq!((r.to_turn, r.turns_left), (1, 1));
            assert_eq!(r.to_sequence, at.sequence);
        }
        other => panic!("expected session_rewound, got {other:?}"),
    }
    assert_eq!(read(data.join("notes.txt")).as_deref(), Some("one\n"));
    assert!(!data.join("second.txt").exists());
    completed(&server, &source, "fourth: after the rewind").await;
    assert_eq!(
        user_messages(&model.requests()[6]),
        ["first: write notes", "fourth: after the rewind"]
    );
    if !overlay {
        let after_rewind = changes(&server, &source, 3).await;
        assert_eq!(
            after_rewind.base_turn, 1,
            "turn 3 started from turn 1's end"
        );
        assert!(after_rewind.changes.is_empty());
    }

    // Refused while a turn runs.
    let running = server.submit(&source, "fifth: slow").await.expect("submit");
    server
        .wait_for_state(&running, pb::ExecutionState::Running)
        .await;
    let busy = server
        .sessions()
        .rewind_session(pb::RewindSessionRequest {
            session_id: source.clone(),
            to_turn: 1,
        })
        .await
        .expect_err("a turn runs");
    assert_eq!(busy.code(), Code::FailedPrecondition, "{busy:?}");
    server
        .executions()
        .cancel_execution(pb::CancelExecutionRequest {
            execution_id: running,
        })
        .await
        .expect("cancel");
}

async fn turn_changes_of_the_source(server: &TestServer, source: &str) {
    let first = changes(server, source, 1).await;
    assert_eq!(first.base_turn, 0);
    assert_eq!(
        summary(&first),
        [("notes.txt".to_owned(), pb::FileChangeKind::Added)]
    );
    assert!(first.changes[0].unified_diff.contains("+one"), "{first:?}");
    let second = changes(server, source, 2).await;
    assert_eq!(second.base_turn, 1);
    assert_eq!(
        summary(&second),
        [
            ("notes.txt".to_owned(), pb::FileChangeKind::Changed),
            ("second.txt".to_owned(), pb::FileChangeKind::Added),
        ]
    );
    assert!(second.changes[0].unified_diff.contains("+two"));
}
