//! Workspace snapshots with two whole runtimes on the PostgreSQL store (two homes, one
//! schema) and one workspace root: a turn's end recorded by one replica is read by the
//! other, for turn changes, rewinds and forks with files.

use std::path::{Path, PathBuf};
use std::time::Duration;

use odyssey_runtime::events::EventPayload;
use odyssey_runtime::snapshot::{ChangeKind, SHARED_SNAPSHOTS_DIR};
use odyssey_runtime::{
    ErrorKind, ExecutionRequest, ExecutionState, ForkPoint, InstallOptions, SessionSpec,
};
use tempfile::TempDir;
use uuid::Uuid;

use crate::PATIENCE;
use crate::database::TestDatabase;
use crate::replica::{Replica, completed_turn, write_file};

async fn replica(db: &TestDatabase, id: &str, workspace_root: &Path) -> Replica {
    replica_in(db, id, workspace_root, tempfile::tempdir().unwrap()).await
}

/// A replica started on `home` (a home a replica of the same id served from before).
async fn replica_in(db: &TestDatabase, id: &str, workspace_root: &Path, home: TempDir) -> Replica {
    let root = workspace_root.to_path_buf();
    Replica::start_with(
        db,
        id,
        home,
        |config| config.workspace_root = Some(root),
        Vec::new(),
    )
    .await
}

/// A replay agent whose turns each write `notes.txt` (one model call for the write, one
/// for the answer), with the contents of `writes` in order.
fn write_project(dir: &Path, writes: &[&str]) {
    let write = |path: &str, text: String| write_file(dir, path, &text);
    write(
        "odyssey.bundle.yaml",
        "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: snapshots\n  version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      default: true\n  tools:\n    - { name: Write, source: builtin }\n  sandbox:\n    mode: workspace_write\n".into(),
    );
    write(
        "agents/main/agent.yaml",
        "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\n  version: 0.1.0\nspec:\n  kind: prompt\n  prompt: Write.\n  model:\n    provider: replay\n    name: main\n  tools:\n    allow: [Write]\n".into(),
    );
    let mut lines = Vec::new();
    for content in writes {
        lines.push(
            serde_json::json!({
                "tool_calls": [{"name": "Write", "arguments": {"path": "notes.txt", "content": content}}]
            })
            .to_string(),
        );
        lines.push(serde_json::json!({ "text": "written" }).to_string());
    }
    write("cassettes/main.jsonl", format!("{}\n", lines.join("\n")));
}

fn notes(workspace_root: &Path, session: Uuid) -> String {
    let path = workspace_root
        .join(session.to_string())
        .join("data")
        .join("notes.txt");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.file_type().unwrap().is_dir() {
                pending.push(entry.path());
            } else {
                found.push(entry.path());
            }
        }
    }
    found
}

/// A turn writing a file runs on A, the next, changing it, on B: both replicas answer
/// what each turn changed; a rewind on B to A's turn puts A's contents back; a fork on A
/// of B's turn gets B's contents. The snapshots are kept once, on the workspace root
/// (neither home holds any), and deleting the sessions removes them.
///
/// Any replica claims any queued turn, so each turn runs where it must by having only
/// that replica up: B starts after A's turn, and A stops for B's turn, then starts again
/// from its home.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn snapshots_on_the_workspace_root_serve_every_replica() {
    let Some(db) = TestDatabase::unmigrated().await else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let a = replica(&db, "replica-a", root.path()).await;
    let project = tempfile::tempdir().unwrap();
    write_project(project.path(), &["from A\n", "from B\n"]);
    let bundle = a
        .runtime
        .build_and_install(project.path(), InstallOptions::default())
        .await
        .unwrap();
    let id = a
        .runtime
        .create_session(SessionSpec::new(bundle.id.to_string()))
        .await
        .unwrap()
        .record
        .id;

    completed_turn(&a.runtime, id, "first").await;
    let b = replica(&db, "replica-b", root.path()).await;
    a.runtime.shutdown(Duration::from_secs(1)).await;
    completed_turn(&b.runtime, id, "second").await;
    assert_eq!(notes(root.path(), id), "from B\n");
    let Replica { runtime, home } = a;
    drop(runtime);
    let a = replica_in(&db, "replica-a", root.path(), home).await;

    for replica in [&a, &b] {
        let first = replica.runtime.turn_changes(id, 1).await.unwrap();
        assert_eq!(first.changes.len(), 1, "{first:?}");
        assert_eq!(first.changes[0].path, "notes.txt");
        assert_eq!(first.changes[0].change, ChangeKind::Added);
        let second = replica.runtime.turn_changes(id, 2).await.unwrap();
        assert_eq!(second.base_turn, 1, "turn 2 started from turn 1's end");
        assert_eq!(second.changes.len(), 1, "{second:?}");
        assert_eq!(second.changes[0].change, ChangeKind::Changed);
        assert!(
            second.changes[0].unified_diff.contains("-from A")
                && second.changes[0].unified_diff.contains("+from B"),
            "{}",
            second.changes[0].unified_diff
        );
    }

    // Forked on A from B's turn: the fork's workspace is what B's turn left.
    let fork = a
        .runtime
        .fork_session(id, ForkPoint::AfterTurn(2))
        .await
        .unwrap()
        .record
        .id;
    assert_eq!(notes(root.path(), fork), "from B\n");
    // The fork's own snapshots are shared too: B answers its turns' changes.
    let inherited = b.runtime.turn_changes(fork, 2).await.unwrap();
    assert_eq!(inherited.changes[0].change, ChangeKind::Changed);

    // Rewound on B to A's turn: A's contents are back.
    let rewound = b.runtime.rewind_session(id, 1).await.unwrap();
    assert_eq!(rewound.session.stats.turn_count, 2);
    assert_eq!(notes(root.path(), id), "from A\n");

    let shared = root.path().join(SHARED_SNAPSHOTS_DIR);
    for session in [id, fork] {
        assert!(
            !files_under(&shared.join(session.to_string())).is_empty(),
            "the snapshots of {session} are on the workspace root"
        );
    }
    for replica in [&a, &b] {
        let in_home: Vec<PathBuf> = files_under(&replica.home.path().join("sessions"))
            .into_iter()
            .filter(|p| p.components().any(|c| c.as_os_str() == "snapshots"))
            .collect();
        assert!(in_home.is_empty(), "no snapshot in a home: {in_home:?}");
    }

    b.runtime.delete_session(fork).await.unwrap();
    a.runtime.delete_session(id).await.unwrap();
    assert!(!shared.join(fork.to_string()).exists());
    assert!(!shared.join(id.to_string()).exists());
    let gone = b.runtime.turn_changes(id, 1).await.unwrap_err();
    assert_eq!(gone.kind(), ErrorKind::NotFound, "{gone}");
    db.drop().await;
}

/// A rewind on one replica while the other runs a turn of the session is refused before
/// anything is touched: the turn in progress shows in the log every replica reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rewind_waits_for_a_turn_running_on_another_replica() {
    let Some(db) = TestDatabase::unmigrated().await else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let a = replica(&db, "replica-a", root.path()).await;
    let project = tempfile::tempdir().unwrap();
    write_project(project.path(), &["one\n", "two\n"]);
    // The second turn's answer streams slowly, so it is still running when B is asked.
    let cassette = project.path().join("cassettes/main.jsonl");
    let mut lines: Vec<String> = std::fs::read_to_string(&cassette)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    lines[3] = serde_json::json!({ "text": ["slow", "ly", " written"], "chunk_delay_ms": 1500 })
        .to_string();
    std::fs::write(&cassette, format!("{}\n", lines.join("\n"))).unwrap();
    let bundle = a
        .runtime
        .build_and_install(project.path(), InstallOptions::default())
        .await
        .unwrap();
    let id = a
        .runtime
        .create_session(SessionSpec::new(bundle.id.to_string()))
        .await
        .unwrap()
        .record
        .id;
    completed_turn(&a.runtime, id, "first").await;
    let running = a
        .runtime
        .submit(ExecutionRequest {
            session_id: id,
            prompt: "second".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    // Wait until the second turn has written its file (its first model call is done).
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while notes(root.path(), id) != "two\n" {
        assert!(tokio::time::Instant::now() < deadline, "the turn writes");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Started now, B has claimed nothing: the turn runs on A.
    let b = replica(&db, "replica-b", root.path()).await;
    let refused = b.runtime.rewind_session(id, 1).await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::FailedPrecondition, "{refused}");
    assert_eq!(
        notes(root.path(), id),
        "two\n",
        "the workspace is untouched"
    );
    let status = tokio::time::timeout(PATIENCE, a.runtime.wait(running.execution_id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.state, ExecutionState::Completed, "{status:?}");
    b.runtime.rewind_session(id, 1).await.unwrap();
    assert_eq!(notes(root.path(), id), "one\n");
    db.drop().await;
}

/// A session's sandboxed command cannot reach the snapshots on the workspace root: not
/// by the root's path, not beside its own workspace, not through any folder its mount
/// table shows. (Needs the `odyssey-sandbox` helper built and bubblewrap.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sandboxed_command_reaches_no_snapshot_on_the_workspace_root() {
    let Some(db) = TestDatabase::unmigrated().await else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let a = replica(&db, "replica-a", root.path()).await;
    let project = tempfile::tempdir().unwrap();
    write_project(project.path(), &["kept\n"]);
    let shared = root.path().join(SHARED_SNAPSHOTS_DIR);
    let hunt = format!(
        "for d in {shared} {shared}/* \"$PWD/../{name}\" \"$PWD/../../{name}\" \
         $(awk '{{print $5 \"/../{name}\"}}' /proc/self/mountinfo); do \
         ls \"$d\" >/dev/null 2>&1 && echo \"LISTED $d\"; \
         echo evil > \"$d/evil\" 2>/dev/null && echo \"WROTE $d\"; done; echo hunted",
        shared = shared.display(),
        name = SHARED_SNAPSHOTS_DIR,
    );
    let cassette = project.path().join("cassettes/main.jsonl");
    let mut lines = std::fs::read_to_string(&cassette).unwrap();
    lines.push_str(
        &(serde_json::json!({
            "tool_calls": [{"name": "Bash", "arguments": {"command": hunt}}]
        })
        .to_string()
            + "\n"),
    );
    lines.push_str(&(serde_json::json!({ "text": "hunted" }).to_string() + "\n"));
    std::fs::write(&cassette, lines).unwrap();
    for (path, from, to) in [
        (
            "odyssey.bundle.yaml",
            "{ name: Write, source: builtin }\n",
            "{ name: Write, source: builtin }\n    - { name: Bash, source: builtin }\n",
        ),
        ("agents/main/agent.yaml", "[Write]", "[Write, Bash]"),
    ] {
        let path = project.path().join(path);
        let text = std::fs::read_to_string(&path).unwrap().replace(from, to);
        std::fs::write(path, text).unwrap();
    }
    let bundle = a
        .runtime
        .build_and_install(project.path(), InstallOptions::default())
        .await
        .unwrap();
    let id = a
        .runtime
        .create_session(SessionSpec::new(bundle.id.to_string()))
        .await
        .unwrap()
        .record
        .id;
    completed_turn(&a.runtime, id, "write").await;
    assert!(!files_under(&shared.join(id.to_string())).is_empty());
    completed_turn(&a.runtime, id, "hunt").await;

    let mut followed = a.runtime.subscribe_session(id, 0).await.unwrap();
    let last = a.runtime.get_session(id).await.unwrap().stats.last_sequence;
    let mut results = Vec::new();
    while followed.cursor() < last {
        let batch = tokio::time::timeout(PATIENCE, followed.next_batch())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        for event in batch {
            if let EventPayload::ToolCallFinished {
                tool,
                success,
                result,
                ..
            } = &event.payload
                && tool == "Bash"
            {
                results.push((*success, result.clone()));
            }
        }
    }
    let [(success, output)] = results.as_slice() else {
        panic!("one Bash call: {results:?}");
    };
    assert!(*success, "{output}");
    assert!(output.contains("hunted"), "{output}");
    assert!(!output.contains("LISTED"), "{output}");
    assert!(!output.contains("WROTE"), "{output}");
    assert!(
        files_under(&shared)
            .iter()
            .all(|p| p.file_name().is_none_or(|n| n != "evil")),
        "nothing landed among the snapshots"
    );
    db.drop().await;
}
