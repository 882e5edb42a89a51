//! Long-term memory in the database: what one replica captures, another recalls, within
//! the bounds per scope (records and bytes), oldest first.

use odyssey_runtime::memory::{MemoryRecord, MemoryScope};
use uuid::Uuid;

use crate::database::TestDatabase;
use crate::suite::open_replica_with;

fn scope(agent: &str) -> MemoryScope {
    MemoryScope {
        namespace: "local".into(),
        bundle: "notes".into(),
        agent_id: agent.into(),
    }
}

fn record(n: usize) -> MemoryRecord {
    MemoryRecord::of_turn(
        Uuid::now_v7(),
        Uuid::now_v7(),
        &format!("prompt {n}"),
        &format!("answer {n}"),
        200,
    )
}

#[tokio::test]
async fn memory_captured_on_one_replica_is_recalled_on_another_within_its_bounds() {
    let Some(db) = TestDatabase::unmigrated().await else {
        return;
    };
    let limits = |c: &mut odyssey_store_postgres::StoreConfig| {
        c.memory.max_records = 3;
        c.memory.max_bytes = 100_000;
    };
    let (a, _keep_a) = open_replica_with(&db, "replica-a", limits).await;
    let (b, _keep_b) = open_replica_with(&db, "replica-b", limits).await;
    let (a, b) = (a.memory().unwrap(), b.memory().unwrap());
    for n in 0..5 {
        a.capture(scope("main"), record(n)).await.unwrap();
    }
    b.capture(scope("other"), record(9)).await.unwrap();
    let recalled = b.recall(scope("main"), 10).await.unwrap();
    let prompts: Vec<&str> = recalled.iter().map(|r| r.prompt.as_str()).collect();
    assert_eq!(
        prompts,
        ["prompt 2", "prompt 3", "prompt 4"],
        "the newest three, oldest first"
    );
    let two = a.recall(scope("main"), 2).await.unwrap();
    assert_eq!(two.len(), 2);
    assert_eq!(two[1].prompt, "prompt 4");
    assert_eq!(a.recall(scope("other"), 10).await.unwrap().len(), 1);
    assert!(a.recall(scope("none"), 10).await.unwrap().is_empty());
    db.drop().await;
}

#[tokio::test]
async fn memory_keeps_no_more_bytes_than_its_bound() {
    let Some(db) = TestDatabase::unmigrated().await else {
        return;
    };
    let size = serde_json::to_vec(&record(0)).unwrap().len();
    let (a, _keep_a) = open_replica_with(&db, "replica-a", |c| {
        c.memory.max_records = 100;
        c.memory.max_bytes = size * 2 + size / 2;
    })
    .await;
    let memory = a.memory().unwrap();
    for n in 0..6 {
        memory.capture(scope("main"), record(n)).await.unwrap();
    }
    let recalled = memory.recall(scope("main"), 100).await.unwrap();
    let prompts: Vec<&str> = recalled.iter().map(|r| r.prompt.as_str()).collect();
    assert_eq!(prompts, ["prompt 4", "prompt 5"]);
    db.drop().await;
}

#[tokio::test]
async fn a_record_larger_than_the_bound_is_not_kept_and_leaves_no_room_for_older_ones() {
    let Some(db) = TestDatabase::unmigrated().await else {
        return;
    };
    let size = serde_json::to_vec(&record(0)).unwrap().len();
    let (a, _keep_a) = open_replica_with(&db, "replica-a", |c| {
        c.memory.max_records = 100;
        c.memory.max_bytes = size * 3;
    })
    .await;
    let memory = a.memory().unwrap();
    for n in 0..2 {
        memory.capture(scope("main"), record(n)).await.unwrap();
    }
    assert_eq!(memory.recall(scope("main"), 100).await.unwrap().len(), 2);
    let large = MemoryRecord::of_turn(
        Uuid::now_v7(),
        Uuid::now_v7(),
        &"p".repeat(size * 4),
        "answer",
        size * 8,
    );
    memory.capture(scope("main"), large).await.unwrap();
    assert!(
        memory.recall(scope("main"), 100).await.unwrap().is_empty(),
        "the newest record alone passes the bound: nothing older is recalled past it"
    );
    memory.capture(scope("main"), record(7)).await.unwrap();
    let recalled = memory.recall(scope("main"), 100).await.unwrap();
    let prompts: Vec<&str> = recalled.iter().map(|r| r.prompt.as_str()).collect();
    assert_eq!(prompts, ["prompt 7"]);
    db.drop().await;
}
