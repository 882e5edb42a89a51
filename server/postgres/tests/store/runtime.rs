//! Whole runtimes on the PostgreSQL store: two replicas (two homes, two replica ids, one
//! schema) serving the same sessions.

use std::path::Path;
use std::time::Duration;

use odyssey_runtime::events::EventPayload;
use odyssey_runtime::{InstallOptions, SessionSpec};

use crate::PATIENCE;
use crate::database::TestDatabase;
use crate::replica::{Replica, completed_turn, write_file};

/// A replay agent answering each turn with the next line of its cassette.
fn write_project(dir: &Path, answers: &[&str]) {
    let write = |path: &str, text: String| write_file(dir, path, &text);
    write(
        "odyssey.bundle.yaml",
        "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: shared\n  version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      default: true\n".into(),
    );
    write(
        "agents/main/agent.yaml",
        "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\n  version: 0.1.0\nspec:\n  kind: prompt\n  prompt: Answer.\n  model:\n    provider: replay\n    name: main\n".into(),
    );
    let lines: Vec<String> = answers
        .iter()
        .map(|a| serde_json::json!({ "text": a }).to_string())
        .collect();
    write("cassettes/main.jsonl", format!("{}\n", lines.join("\n")));
}

/// A session created on one replica runs its turns on either, one after the other: each
/// replica's turn starts from what the other wrote (one gap-free log in the database), and
/// a subscriber on the first sees the second's events, in order, without a gap.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_session_runs_its_turns_on_either_replica_and_is_followed_on_both() {
    let Some(db) = TestDatabase::unmigrated().await else {
        return;
    };
    let a = Replica::start(&db, "replica-a").await;
    let b = Replica::start(&db, "replica-b").await;
    let project = tempfile::tempdir().unwrap();
    write_project(project.path(), &["one", "two", "three"]);
    let bundle = a
        .runtime
        .build_and_install(project.path(), InstallOptions::default())
        .await
        .unwrap();
    let session = a
        .runtime
        .create_session(SessionSpec::new(bundle.id.to_string()))
        .await
        .unwrap();
    let id = session.record.id;
    let mut followed = a.runtime.subscribe_session(id, 0).await.unwrap();

    let first = completed_turn(&b.runtime, id, "first").await;
    let second = completed_turn(&a.runtime, id, "second").await;
    let third = completed_turn(&b.runtime, id, "third").await;
    assert!(first < second && second < third, "{first} {second} {third}");

    let mut sequences = Vec::new();
    let mut responses = Vec::new();
    while followed.cursor() < third {
        let batch = tokio::time::timeout(PATIENCE, followed.next_batch())
            .await
            .expect("the other replica's events reach this one")
            .unwrap()
            .expect("the session exists");
        for event in batch {
            sequences.push(event.sequence);
            if let EventPayload::TurnCompleted(done) = &event.payload {
                responses.push(done.response.clone());
            }
        }
    }
    let expected: Vec<u64> = (1..=third).collect();
    assert_eq!(sequences, expected, "no gap, no duplicate");
    assert_eq!(responses, ["one", "two", "three"]);

    // Both replicas list it, with the totals of all three turns.
    for replica in [&a, &b] {
        let info = replica.runtime.get_session(id).await.unwrap();
        assert_eq!(info.stats.turn_count, 3);
        assert_eq!(info.stats.last_sequence, third);
    }
    tokio::time::sleep(Duration::from_millis(10)).await;
    db.drop().await;
}
