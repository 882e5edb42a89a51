use odyssey_store_postgres::{StoreError, latest_version};

use crate::database::TestDatabase;

#[tokio::test]
async fn a_fresh_database_is_migrated_once_and_says_its_version() {
    let Some(db) = TestDatabase::unmigrated().await else {
        return;
    };
    assert_eq!(db.store.schema_version().await.unwrap(), 0);
    let report = db.store.migrate().await.unwrap();
    assert_eq!(report.from, 0);
    assert_eq!(report.to, latest_version());
    assert_eq!(report.applied.len() as i64, latest_version());
    assert_eq!(db.store.schema_version().await.unwrap(), latest_version());

    let again = db.store.migrate().await.unwrap();
    assert_eq!((again.from, again.to), (latest_version(), latest_version()));
    assert!(again.applied.is_empty());
    db.drop().await;
}

#[tokio::test]
async fn replicas_migrating_at_once_apply_each_migration_once() {
    let Some(db) = TestDatabase::unmigrated().await else {
        return;
    };
    let replicas: Vec<_> = (0..4).map(|_| db.replica()).collect();
    let reports = futures::future::join_all(replicas.iter().map(|r| r.migrate())).await;
    let applied: usize = reports.into_iter().map(|r| r.unwrap().applied.len()).sum();
    assert_eq!(applied as i64, latest_version());
    assert_eq!(
        db.count("SELECT count(*) FROM schema_migrations").await,
        latest_version()
    );
    db.drop().await;
}

#[tokio::test]
async fn a_database_from_a_newer_odysseyd_is_refused() {
    let Some(db) = TestDatabase::new().await else {
        return;
    };
    db.sql("INSERT INTO schema_migrations (version, name, checksum) VALUES (999, 'future', 'x')")
        .await;
    let error = db.store.migrate().await.unwrap_err();
    assert!(
        matches!(error, StoreError::SchemaTooNew { found: 999, .. }),
        "{error}"
    );
    assert!(error.to_string().contains("upgrade odysseyd"), "{error}");
    db.drop().await;
}

#[tokio::test]
async fn a_migration_changed_since_it_was_applied_is_refused() {
    let Some(db) = TestDatabase::new().await else {
        return;
    };
    db.sql("UPDATE schema_migrations SET checksum = 'changed' WHERE version = 1")
        .await;
    let error = db.store.migrate().await.unwrap_err();
    assert!(
        matches!(error, StoreError::MigrationChanged { version: 1, .. }),
        "{error}"
    );
    db.drop().await;
}
