use odyssey_store_postgres::StoreError;

use crate::database::TestDatabase;

#[tokio::test]
async fn a_bundle_stored_by_one_replica_is_read_by_another_and_checked() {
    let Some(db) = TestDatabase::new().await else {
        return;
    };
    let (a, b) = (db.store.clone(), db.replica());
    let digest = "sha256:0123";
    assert!(
        a.put_bundle(digest, "demo", "1.0.0", b"archive bytes")
            .await
            .unwrap()
    );
    // The same digest again keeps the first archive.
    assert!(
        !b.put_bundle(digest, "demo", "1.0.0", b"other bytes")
            .await
            .unwrap()
    );
    let read = b.bundle(digest).await.unwrap().unwrap();
    assert_eq!(
        (read.name.as_str(), read.version.as_str()),
        ("demo", "1.0.0")
    );
    assert_eq!(read.archive, b"archive bytes");
    assert_eq!(b.bundle("sha256:none").await.unwrap(), None);

    // A row changed behind the store's back is refused, not served.
    db.sql("UPDATE bundles SET archive = 'tampered'::bytea")
        .await;
    let error = b.bundle(digest).await.unwrap_err();
    assert!(
        matches!(error, StoreError::BundleCorrupted(ref d) if d == digest),
        "{error}"
    );

    assert!(a.delete_bundle(digest).await.unwrap());
    assert!(!a.delete_bundle(digest).await.unwrap());
    assert_eq!(b.bundle(digest).await.unwrap(), None);
    db.drop().await;
}
