//! The runtime's store suite (`odyssey_runtime::store_suite!`), the same cases the file
//! store passes, against this store opened as one replica in a fresh schema per case.

use odyssey_runtime::RuntimeConfig;
use odyssey_runtime::store::Store;
use odyssey_runtime::store::suite::Stores;
use odyssey_store_postgres::{StoreConfig, open_store};
use tempfile::TempDir;

use crate::database::TestDatabase;

/// The store as replica `replica` of the test's schema (migrated by the opening), with
/// its own folder for bundles.
pub async fn open_replica(db: &TestDatabase, replica: &str) -> (Store, TempDir) {
    open_replica_with(db, replica, |_| {}).await
}

/// [`open_replica`], with the configuration changed by `change` first.
pub async fn open_replica_with(
    db: &TestDatabase,
    replica: &str,
    change: impl FnOnce(&mut StoreConfig),
) -> (Store, TempDir) {
    let home = tempfile::tempdir().unwrap();
    let mut config = StoreConfig::new(db.config.clone(), &RuntimeConfig::with_home(home.path()));
    change(&mut config);
    let store = open_store(config, replica).await.unwrap();
    (store, home)
}

/// A fresh schema per case; `None` (skipped) without a test database outside CI.
async fn open_postgres() -> Option<(Stores, (Store, TempDir))> {
    let db = TestDatabase::unmigrated().await?;
    let (store, home) = open_replica(&db, "replica-a").await;
    Some((Stores::from(&store), (store, home)))
}

odyssey_runtime::store_suite!(open_postgres);
