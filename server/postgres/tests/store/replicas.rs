use std::time::Duration;

use crate::database::TestDatabase;

#[tokio::test]
async fn replicas_are_listed_while_they_are_heard_from() {
    let Some(db) = TestDatabase::new().await else {
        return;
    };
    let (a, b) = (db.store.clone(), db.replica());
    a.replica_alive("replica-a").await.unwrap();
    b.replica_alive("replica-b").await.unwrap();
    let ids = |replicas: Vec<odyssey_store_postgres::Replica>| {
        replicas.into_iter().map(|r| r.id).collect::<Vec<_>>()
    };
    let live = a.live_replicas(Duration::from_secs(10)).await.unwrap();
    assert_eq!(ids(live.clone()), ["replica-a", "replica-b"]);
    assert!(
        live.iter().all(|r| (0..10_000).contains(&r.silent_ms)),
        "{live:?}"
    );

    // replica-b falls silent; replica-a keeps saying it is alive.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    a.replica_alive("replica-a").await.unwrap();
    let live = b.live_replicas(Duration::from_secs(1)).await.unwrap();
    assert_eq!(ids(live), ["replica-a"]);
    db.drop().await;
}
