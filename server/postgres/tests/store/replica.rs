//! A whole runtime serving from the test database as one replica, with a home of its own:
//! what the tests of several replicas on one database start.

use std::path::Path;
use std::sync::Arc;

use odyssey_runtime::tools::Tool;
use odyssey_runtime::{ExecutionRequest, ExecutionState, OdysseyRuntime, RuntimeConfig};
use odyssey_store_postgres::{StoreConfig, open_store};
use tempfile::TempDir;
use uuid::Uuid;

use crate::PATIENCE;
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

/// Writes `text` at `path` under `dir`, making the folders on the way (a test project).
pub fn write_file(dir: &Path, path: &str, text: &str) {
    let path = dir.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Runs a turn of `session_id` on `runtime` to its end, which must be a completion; the
/// sequence of its last event.
pub async fn completed_turn(runtime: &OdysseyRuntime, session_id: Uuid, prompt: &str) -> u64 {
    let status = tokio::time::timeout(
        PATIENCE,
        runtime.run(ExecutionRequest {
            session_id,
            prompt: prompt.into(),
            ..Default::default()
        }),
    )
    .await
    .unwrap_or_else(|_| panic!("the turn {prompt:?} ends"))
    .unwrap();
    assert_eq!(status.state, ExecutionState::Completed, "{status:?}");
    status.last_sequence
}
