//! A session's long-lived processes run where its turns run: once another replica runs the
//! session's turn, the MCP servers the first replica started for it stop there.

use std::path::Path;
use std::time::{Duration, Instant};

use odyssey_runtime::{InstallOptions, RuntimeConfig, SessionSpec};
use serde_json::json;

use crate::PATIENCE;
use crate::database::TestDatabase;
use crate::replica::{Replica, completed_turn, write_file};
use crate::signals::{EVERYTHING, mcp_servers};

/// A replay agent using the `everything` MCP server: its first turn calls the server's
/// `echo`, its second only answers.
fn write_project(dir: &Path, modules: &Path) {
    let write = |path: &str, text: String| write_file(dir, path, &text);
    let command = serde_json::to_string(&[
        "node".to_owned(),
        modules.join(EVERYTHING).display().to_string(),
        "stdio".to_owned(),
    ])
    .unwrap();
    write(
        "odyssey.bundle.yaml",
        format!(
            "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: handover\n  version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      default: true\n  mcp_servers:\n    - name: everything\n      command: {command}\n      env: {{ FROM_HOST: PATH }}\n  sandbox:\n    mode: workspace_write\n    permissions:\n      filesystem:\n        mounts:\n          read: [\"{}\"]\n",
            modules.display()
        ),
    );
    write(
        "agents/main/agent.yaml",
        "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\n  version: 0.1.0\nspec:\n  kind: prompt\n  prompt: Echo.\n  model:\n    provider: replay\n    name: main\n  mcp_servers: [everything]\n  tools:\n    allow: [\"mcp__everything__*\"]\n".into(),
    );
    let cassette = [
        json!({ "tool_calls": [{ "id": "c1", "name": "mcp__everything__echo", "arguments": { "message": "hello" } }] }).to_string(),
        json!({ "text": "echoed" }).to_string(),
        json!({ "text": "second" }).to_string(),
    ];
    write("cassettes/main.jsonl", format!("{}\n", cassette.join("\n")));
}

/// The MCP server processes recorded as running in a replica's home.
fn running_servers(home: &Path) -> usize {
    std::fs::read_dir(home.join("sandbox/.running")).map_or(0, |entries| {
        entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|name| name.starts_with("mcp-"))
            .count()
    })
}

/// The count of `home`'s running MCP servers once it reached `expected`, or after the
/// patience ran out (a stopped server's record goes a moment after it exits).
async fn running_settled(home: &Path, expected: usize) -> usize {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let running = running_servers(home);
        if running == expected || Instant::now() > deadline {
            return running;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_session_taken_by_another_replica_stops_its_mcp_servers_on_the_first() {
    let Some(db) = TestDatabase::new().await else {
        return;
    };
    let Some(modules) = mcp_servers() else {
        return;
    };
    let start = |id: &'static str| {
        let mounted = modules.clone();
        let db = &db;
        async move {
            let configure = move |config: &mut RuntimeConfig| {
                config.access.mount_roots = vec![mounted];
                config.access.env_allowlist = vec!["PATH".into()];
            };
            Replica::start_with(db, id, tempfile::tempdir().unwrap(), configure, Vec::new()).await
        }
    };
    let a = start("replica-a").await;
    let b = start("replica-b").await;
    let project = tempfile::tempdir().unwrap();
    write_project(project.path(), &modules);
    let bundle = a
        .runtime
        .build_and_install(project.path(), InstallOptions::default())
        .await
        .unwrap();
    let session = a
        .runtime
        .create_session(SessionSpec::new(bundle.id.to_string()))
        .await
        .unwrap();
    let id = session.record.id;

    completed_turn(&a.runtime, id, "echo").await;
    assert_eq!(
        running_settled(a.home.path(), 1).await,
        1,
        "A runs the session's MCP server after its turn"
    );

    // B runs the next turn; A reads B's events through its wake-ups, and stops the server.
    completed_turn(&b.runtime, id, "again").await;
    assert_eq!(
        running_settled(a.home.path(), 0).await,
        0,
        "A stopped the server of a session B runs now"
    );
    a.runtime.shutdown(Duration::from_secs(5)).await;
    b.runtime.shutdown(Duration::from_secs(5)).await;
    db.drop().await;
}
