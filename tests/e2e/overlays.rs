//! Workspaces on overlay layers through a real server: what a delete leaves (no mount, no
//! layer only it used), a restart (the workspace mounted again, its files there), and a
//! sandboxed process hunting for the layers and upper folders behind its workspace.

use std::path::{Path, PathBuf};
use std::time::Duration;

use odyssey_api::v1 as pb;
use odyssey_runtime::provider::ProviderSettings;
use odyssey_runtime::snapshot::MechanismChoice;
use odyssey_testing::openai_wire::{OpenAiWireServer, Reply, Script, StreamBuilder};
use pb::fork_session_request::Point;
use pb::session_event::Payload;

use crate::forks::overlays_mount;
use crate::support::{Project, TestServer};

const KEY: &str = "sk-test-overlay-key-0123456789";

fn call(id: &str, tool: &str, arguments: &str) -> Reply {
    StreamBuilder::new()
        .tool_call(0, id, tool, arguments, 2)
        .finish("tool_calls")
        .done()
        .build()
}

fn text(answer: &str) -> Reply {
    StreamBuilder::new()
        .text(answer, 2)
        .finish("stop")
        .done()
        .build()
}

fn write(id: &str, path: &str, content: &str) -> Reply {
    let arguments = serde_json::json!({ "path": path, "content": content }).to_string();
    call(id, "Write", &arguments)
}

fn bash(id: &str, command: &str) -> Reply {
    let arguments = serde_json::json!({ "command": command }).to_string();
    call(id, "Bash", &arguments)
}

fn project() -> Project {
    let project = Project::openai("overlays");
    project.write(
        "odyssey.bundle.yaml",
        "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: overlays\n  version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      default: true\n  tools:\n    - { name: Bash, source: builtin }\n    - { name: Write, source: builtin }\n  sandbox:\n    mode: workspace_write\n",
    );
    project.write(
        "agents/main/agent.yaml",
        "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\n  version: 0.1.0\nspec:\n  kind: prompt\n  prompt: You are a test agent.\n  model:\n    provider: openai\n    name: gpt-test\n  tools:\n    allow: [Bash, Write]\n",
    );
    project
}

async fn server_on(model: &OpenAiWireServer, mechanism: MechanismChoice) -> TestServer {
    let base_url = model.base_url();
    TestServer::start_configured(
        |_| {},
        move |config| {
            config.snapshots.mechanism = mechanism;
            config.providers.insert(
                "openai".into(),
                ProviderSettings {
                    base_url: Some(base_url),
                    api_key: Some(KEY.into()),
                    ..ProviderSettings::default()
                },
            );
        },
    )
    .await
}

fn workspace(home: &Path, session_id: &str) -> PathBuf {
    home.join("sandbox").join(session_id).join("data")
}

/// The mount points of this process's mount namespace (the server's: it runs in it).
fn mount_points() -> Vec<String> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .expect("mountinfo")
        .lines()
        .filter_map(|line| line.split(' ').nth(4).map(str::to_owned))
        .collect()
}

fn layers(home: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(home.join("overlay/layers"))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

async fn completed(server: &TestServer, session_id: &str, prompt: &str) {
    let status = server.run(session_id, prompt).await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{prompt}: {}",
        status.error
    );
}

/// The results of the tool calls of a session, in order.
async fn tool_results(server: &TestServer, session_id: &str) -> Vec<(bool, String)> {
    let last = server.get_session(session_id).await.last_sequence;
    server
        .events(session_id, 0, last)
        .await
        .into_iter()
        .filter_map(|event| match event.payload {
            Some(Payload::ToolCallFinished(done)) => Some((done.success, done.result)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn deleting_a_fork_leaves_no_mount_and_no_layer_only_it_used() {
    if !overlays_mount() {
        return;
    }
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(write("call_1", "kept.txt", "source\n"))
            .reply(text("wrote"))
            .reply(write("call_2", "own.txt", "fork only\n"))
            .reply(text("wrote in the fork"))
            .reply(bash("call_3", "cat kept.txt"))
            .reply(text("read")),
    )
    .await
    .expect("loopback model");
    let server = server_on(&model, MechanismChoice::Auto).await;
    let info = server
        .server()
        .get_server_info(pb::GetServerInfoRequest {})
        .await
        .expect("info")
        .into_inner();
    assert_eq!(
        info.workspace_snapshots.expect("snapshots").mechanism,
        pb::SnapshotMechanism::Overlay as i32,
        "auto takes overlays where they mount"
    );
    let home = server.home().to_path_buf();
    let source = server.session_on(&project()).await.id;
    completed(&server, &source, "write in the source").await;
    let source_layers = layers(&home);
    assert_eq!(source_layers.len(), 1, "one turn wrote: {source_layers:?}");

    let fork = server
        .sessions()
        .fork_session(pb::ForkSessionRequest {
            session_id: source.clone(),
            point: Some(Point::AfterTurn(1)),
        })
        .await
        .expect("fork")
        .into_inner()
        .session
        .expect("session")
        .id;
    completed(&server, &fork, "write in the fork").await;
    let fork_data = workspace(&home, &fork);
    assert_eq!(
        std::fs::read_to_string(fork_data.join("own.txt")).expect("own"),
        "fork only\n"
    );
    let mount = fork_data.display().to_string();
    assert!(
        mount_points().contains(&mount),
        "the fork's workspace is mounted"
    );
    assert_eq!(layers(&home).len(), 2);

    server
        .sessions()
        .delete_session(pb::DeleteSessionRequest {
            session_id: fork.clone(),
        })
        .await
        .expect("delete");
    assert!(
        !mount_points().contains(&mount),
        "the deleted fork's workspace is still mounted"
    );
    assert!(!home.join("overlay/sessions").join(&fork).exists());
    assert!(!home.join("sandbox").join(&fork).exists());
    // The layer only the fork used goes off the request path; the one it shared stays.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while layers(&home) != source_layers {
        assert!(
            std::time::Instant::now() < deadline,
            "layers left after the delete: {:?}, expected {source_layers:?}",
            layers(&home)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        std::fs::read_to_string(workspace(&home, &source).join("kept.txt")).expect("kept"),
        "source\n"
    );

    // A graceful stop unmounts every workspace; the next start mounts it again when used.
    let stopped = server.stop().await;
    let source_data = workspace(stopped.home(), &source).display().to_string();
    assert!(
        !mount_points().contains(&source_data),
        "unmounted at shutdown"
    );
    let server = stopped.start_again().await;
    completed(&server, &source, "read after the restart").await;
    let results = tool_results(&server, &source).await;
    let (ok, output) = results.last().expect("the read ran");
    assert!(*ok && output.contains("source"), "{output}");
    assert!(
        mount_points().contains(&source_data),
        "mounted again when used"
    );
    server
        .sessions()
        .delete_session(pb::DeleteSessionRequest {
            session_id: source.clone(),
        })
        .await
        .expect("delete the source");
    assert!(!mount_points().contains(&source_data));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !layers(&home).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "layers left after every session went: {:?}",
            layers(&home)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_sandboxed_process_reaches_no_layer_and_no_upper_folder() {
    if !overlays_mount() {
        return;
    }
    // The server's home is known only once it starts: the prompt names it, and the
    // hostile command tries the folders the sandbox's mount table shows and the layout
    // under the home.
    let model = OpenAiWireServer::start(Script::respond(KEY, move |request| {
        let messages = request["messages"].as_array().cloned().unwrap_or_default();
        let last = messages.last().cloned().unwrap_or_default();
        if last["role"] == "tool" {
            return text("done");
        }
        let prompt = last["content"].as_str().unwrap_or_default().to_owned();
        match prompt.strip_prefix("hunt ") {
            Some(home) => bash(
                "call_hunt",
                &format!(
                    "for d in $(grep -o 'upperdir=[^,]*' /proc/self/mountinfo | cut -d= -f2) \
                     {home}/overlay/sessions/*/upper {home}/overlay/layers/* {home}/overlay/base; \
                     do echo evil > \"$d/evil\" 2>/dev/null && echo \"WROTE $d\"; \
                     ls \"$d\" >/dev/null 2>&1 && echo \"LISTED $d\"; done; \
                     echo mine >> kept.txt; echo hunted"
                ),
            ),
            None => write("call_write", "kept.txt", "source\n"),
        }
    }))
    .await
    .expect("loopback model");
    let server = server_on(&model, MechanismChoice::Overlay).await;
    let home = server.home().to_path_buf();
    let source = server.session_on(&project()).await.id;
    completed(&server, &source, "write").await;
    let fork = server
        .sessions()
        .fork_session(pb::ForkSessionRequest {
            session_id: source.clone(),
            point: Some(Point::AfterTurn(1)),
        })
        .await
        .expect("fork")
        .into_inner()
        .session
        .expect("session")
        .id;
    completed(&server, &fork, &format!("hunt {}", home.display())).await;

    let results = tool_results(&server, &fork).await;
    let (ok, output) = results.last().expect("the hunt ran");
    assert!(ok, "{output}");
    assert!(output.contains("hunted"), "{output}");
    assert!(!output.contains("WROTE"), "{output}");
    assert!(!output.contains("LISTED"), "{output}");
    // Nothing landed anywhere under the layers and upper folders, and the fork's append
    // stayed in the fork.
    let mut pending = vec![home.join("overlay")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("list").flatten() {
            assert_ne!(entry.file_name(), "evil", "{}", entry.path().display());
            if entry.file_type().expect("type").is_dir() {
                pending.push(entry.path());
            }
        }
    }
    assert_eq!(
        std::fs::read_to_string(workspace(&home, &fork).join("kept.txt")).expect("fork"),
        "source\nmine\n"
    );
    assert_eq!(
        std::fs::read_to_string(workspace(&home, &source).join("kept.txt")).expect("source"),
        "source\n"
    );
}

#[tokio::test]
async fn a_session_made_under_copies_stays_copies_after_the_server_switches() {
    if !overlays_mount() {
        return;
    }
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(write("call_1", "a.txt", "copies\n"))
            .reply(text("wrote a"))
            .reply(write("call_2", "b.txt", "still copies\n"))
            .reply(text("wrote b"))
            .reply(write("call_3", "c.txt", "layers\n"))
            .reply(text("wrote c")),
    )
    .await
    .expect("loopback model");
    let server = server_on(&model, MechanismChoice::Copies).await;
    let old = server.session_on(&project()).await.id;
    completed(&server, &old, "under copies").await;
    let mut stopped = server.stop().await;
    stopped.config.snapshots.mechanism = MechanismChoice::Auto;
    let server = stopped.start_again().await;
    let home = server.home().to_path_buf();

    completed(&server, &old, "after the switch").await;
    let data = workspace(&home, &old).display().to_string();
    assert!(
        !mount_points().contains(&data),
        "a copies session is not mounted"
    );
    assert!(!home.join("overlay/sessions").join(&old).exists());
    let fork = server
        .sessions()
        .fork_session(pb::ForkSessionRequest {
            session_id: old.clone(),
            point: Some(Point::AfterTurn(2)),
        })
        .await
        .expect("fork of a copies session")
        .into_inner()
        .session
        .expect("session")
        .id;
    assert!(
        !home.join("overlay/sessions").join(&fork).exists(),
        "forked as copies"
    );
    for (file, text) in [("a.txt", "copies\n"), ("b.txt", "still copies\n")] {
        assert_eq!(
            std::fs::read_to_string(workspace(&home, &fork).join(file)).expect(file),
            text
        );
    }
    let changes = server
        .sessions()
        .get_turn_changes(pb::GetTurnChangesRequest {
            session_id: old.clone(),
            turn: 2,
        })
        .await
        .expect("a copies session's turn changes")
        .into_inner();
    assert_eq!(changes.changes.len(), 1, "{changes:?}");

    // A session made now gets layers.
    let new = server.session_on(&project()).await.id;
    completed(&server, &new, "under layers").await;
    assert!(home.join("overlay/sessions").join(&new).is_dir());
    assert!(mount_points().contains(&workspace(&home, &new).display().to_string()));
}
