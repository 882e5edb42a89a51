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

/// The runtime's view ([`odyssey_runtime::store::Replicas`]): every replica the store has
/// seen, alive while heard from within the lease time, this one included.
#[tokio::test]
async fn the_store_lists_the_replicas_sharing_it_alive_while_they_beat() {
    let Some(db) = TestDatabase::unmigrated().await else {
        return;
    };
    let ttl = Duration::from_secs(2);
    let (a, _keep_a) =
        crate::suite::open_replica_with(&db, "replica-a", |c| c.lease_ttl = ttl).await;
    let (b, _keep_b) =
        crate::suite::open_replica_with(&db, "replica-b", |c| c.lease_ttl = ttl).await;
    let replicas = a.replicas().expect("a shared store names its replicas");
    assert_eq!(replicas.replica_id(), "replica-a");
    assert_eq!(b.replicas().unwrap().replica_id(), "replica-b");
    let seen = replicas.replicas().await.unwrap();
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    assert_eq!(
        seen.iter()
            .map(|r| (r.id.as_str(), r.alive))
            .collect::<Vec<_>>(),
        [("replica-a", true), ("replica-b", true)]
    );
    assert!(
        seen.iter().all(|r| r.last_seen_ms.abs_diff(now_ms) < 5_000),
        "{seen:?}"
    );

    // replica-b stops (its heartbeat with it); replica-a keeps beating.
    drop(b);
    tokio::time::sleep(ttl + Duration::from_millis(500)).await;
    let seen = replicas.replicas().await.unwrap();
    assert_eq!(
        seen.iter()
            .map(|r| (r.id.as_str(), r.alive))
            .collect::<Vec<_>>(),
        [("replica-a", true), ("replica-b", false)]
    );
    db.drop().await;
}
