//! The store suite against the file store.

use tempfile::TempDir;

use super::Store;
use super::suite::Stores;
use crate::config::RuntimeConfig;

async fn open_file_store() -> (Stores, (Store, TempDir)) {
    let home = match tempfile::tempdir() {
        Ok(home) => home,
        Err(e) => panic!("temporary home: {e}"),
    };
    let store = match Store::files(&RuntimeConfig::with_home(home.path())) {
        Ok(store) => store,
        Err(e) => panic!("open the file store: {e}"),
    };
    (Stores::from(&store), (store, home))
}

crate::store_suite!(open_file_store);
