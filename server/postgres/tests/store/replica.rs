//! A whole runtime serving from the test database as one replica, with a home of its own:
//! what the tests of several replicas on one database start.

use std::sync::Arc;

use odyssey_runtime::tools::Tool;
use odyssey_runtime::{OdysseyRuntime, RuntimeConfig};
use odyssey_store_postgres::{StoreConfig, open_store};
use tempfile::TempDir;

use crate::database::TestDatabase;

/// A replica: its runtime and its home (removed when the replica is dropped).
pub struct Replica {
    pub runtime: OdysseyRuntime,
    pub home: TempDir,
}

impl Replica {
    /// Replica `id` with the default settings, in a fresh home.
    pub async fn start(db: &TestDatabase, id: &str) -> Self {
        Self::start_with(db, id, tempfile::tempdir().unwrap(), |_| {}, Vec::new()).await
    }

    /// Replica `id` serving from `home` (fresh, or one a replica of the same id served from
    /// before), its settings changed by `configure`, with host `tools` besides the builtins.
    pub async fn start_with(
        db: &TestDatabase,
        id: &str,
        home: TempDir,
        configure: impl FnOnce(&mut RuntimeConfig),
        tools: Vec<Arc<dyn Tool>>,
    ) -> Self {
        let mut config = RuntimeConfig::with_home(home.path());
        configure(&mut config);
        let store = open_store(StoreConfig::new(db.config.clone(), &config), id)
            .await
            .unwrap();
        let runtime = tools
            .into_iter()
            .fold(
                OdysseyRuntime::builder(config).store(store),
                |builder, tool| builder.tool(tool),
            )
            .start()
            .await
            .unwrap();
        Self { runtime, home }
    }
}
