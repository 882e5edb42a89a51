//! [`Bundles::refresh_catalog`]: each replica's bundle folder (the catalog the runtime
//! resolves names in) made to match the database.

use std::path::{Path, PathBuf};

use odyssey_runtime::InstallOptions;
use odyssey_runtime::store::suite::bundle_archive;

use crate::database::TestDatabase;
use crate::suite::open_replica;

/// Where `installed` (unpacked under `from`) lies under `to`.
fn same_place(installed: &Path, from: &Path, to: &Path) -> PathBuf {
    to.join(installed.strip_prefix(from).unwrap())
}

#[tokio::test]
async fn a_refresh_unpacks_what_another_replica_installed_and_removes_what_it_deleted() {
    let Some(db) = TestDatabase::unmigrated().await else {
        return;
    };
    let (a, home_a) = open_replica(&db, "replica-a").await;
    let (b, home_b) = open_replica(&db, "replica-b").await;
    let (archive, digest) = bundle_archive("shared");
    let options = InstallOptions {
        namespace: "acme".into(),
        ..InstallOptions::default()
    };
    let installed = a.bundles().install_archive(archive, options).await.unwrap();
    let on_b = same_place(&installed.root, home_a.path(), home_b.path());
    assert!(on_b.ends_with("acme/shared/0.1.0"), "{}", on_b.display());
    assert!(!on_b.exists(), "not on b before a refresh");

    b.bundles().refresh_catalog().await.unwrap();
    assert!(on_b.is_dir(), "unpacked on b");
    // Nothing changed: a second refresh keeps it and touches nothing.
    b.bundles().refresh_catalog().await.unwrap();
    assert!(on_b.is_dir());

    // A replica opened now finds it unpacked already.
    let (c, home_c) = open_replica(&db, "replica-c").await;
    assert!(
        same_place(&installed.root, home_a.path(), home_c.path()).is_dir(),
        "unpacked when c opened"
    );

    a.bundles().delete_bundle(digest).await.unwrap();
    assert!(!installed.root.exists(), "gone on a at once");
    assert!(on_b.exists(), "still on b until it refreshes");
    b.bundles().refresh_catalog().await.unwrap();
    assert!(!on_b.exists(), "removed on b");
    c.bundles().refresh_catalog().await.unwrap();
    assert!(!same_place(&installed.root, home_a.path(), home_c.path()).exists());
    db.drop().await;
}

#[tokio::test]
async fn a_bundle_whose_stored_archive_was_changed_is_not_unpacked() {
    let Some(db) = TestDatabase::unmigrated().await else {
        return;
    };
    let (a, home_a) = open_replica(&db, "replica-a").await;
    let (b, home_b) = open_replica(&db, "replica-b").await;
    let (archive, _digest) = bundle_archive("tampered");
    let installed = a
        .bundles()
        .install_archive(archive, InstallOptions::default())
        .await
        .unwrap();
    db.sql("UPDATE bundles SET archive = archive || '\\x00'::bytea")
        .await;
    // Left out (and logged), the others still refreshed: the refresh itself succeeds.
    b.bundles().refresh_catalog().await.unwrap();
    assert!(!same_place(&installed.root, home_a.path(), home_b.path()).exists());
    db.drop().await;
}
