//! Where a server keeps sessions, as GetServerInfo tells it: the file store of its home,
//! or a PostgreSQL database it shares with other replicas (`ODYSSEY_TEST_DATABASE_URL`,
//! started by `scripts/test-postgres`; skipped without it, except under CI).

use std::time::{Duration, SystemTime};

use odyssey_api::v1 as pb;
use odyssey_server::config::ServeArgs;
use odyssey_testing::database::TestDatabase;

use crate::support::{Project, TestServer, loopback};

#[tokio::test]
async fn a_server_on_its_home_says_it_keeps_sessions_in_files_and_has_no_replicas() {
    let server = TestServer::start().await;
    let info = server
        .server()
        .get_server_info(pb::GetServerInfoRequest {})
        .await
        .expect("info")
        .into_inner();
    let store = info.store.expect("the store is named");
    assert_eq!(store.kind, "files");
    assert_eq!(store.replica_id, "", "a file store has no replica id");
    assert!(store.replicas.is_empty(), "{:?}", store.replicas);

    let (code, out, err) = odyssey(&["--server", &server.handle.url(), "info"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.lines().any(|line| line == "store: files"), "{out}");
    let (code, out, err) = odyssey(&["--server", &server.handle.url(), "--json", "info"]).await;
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON line");
    assert_eq!(json["store"]["kind"], "files", "{out}");
}

/// `--workspace-root`: sessions' cells live there, not under the home: a turn's Write lands
/// in `<root>/<session>/data/`, and deleting the session removes its cell from there.
#[tokio::test]
async fn sessions_work_in_the_workspace_root_and_not_in_the_home() {
    use odyssey_runtime::provider::ProviderSettings;
    use odyssey_testing::openai_wire::{OpenAiWireServer, Script, StreamBuilder};

    const KEY: &str = "sk-test-workspace-root-0123";
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(
                StreamBuilder::new()
                    .tool_call(
                        0,
                        "call_1",
                        "Write",
                        r#"{"path": "notes.txt", "content": "in the root\n"}"#,
                        2,
                    )
                    .finish("tool_calls")
                    .done()
                    .build(),
            )
            .reply(
                StreamBuilder::new()
                    .text("written", 1)
                    .finish("stop")
                    .done()
                    .build(),
            ),
    )
    .await
    .expect("loopback model");
    let root = tempfile::tempdir().expect("workspace root");
    let workspaces = root.path().join("workspaces");
    let base_url = model.base_url();
    let server = TestServer::start_configured(
        |args| args.workspace_root = Some(workspaces.clone()),
        move |config| {
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
    .await;
    let project = Project::openai("rooted");
    project.write(
        "agents/main/agent.yaml",
        "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\n  version: 0.1.0\nspec:\n  kind: prompt\n  prompt: You are a test agent.\n  model:\n    provider: openai\n    name: gpt-test\n  tools:\n    allow: [Write]\n",
    );
    project.write(
        "odyssey.bundle.yaml",
        "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: rooted\n  version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      default: true\n  tools:\n    - { name: Write, source: builtin }\n  sandbox:\n    mode: workspace_write\n",
    );
    let session = server.session_on(&project).await.id;
    let status = server.run(&session, "write a note").await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{}",
        status.error
    );
    let cell = workspaces.join(&session);
    assert_eq!(
        std::fs::read_to_string(cell.join("data/notes.txt"))
            .ok()
            .as_deref(),
        Some("in the root\n")
    );
    assert!(
        !server.home().join("sandbox").join(&session).exists(),
        "nothing of the session's cell is under the home"
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&workspaces)
        .expect("root")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700, "the root is the server's alone");

    server
        .sessions()
        .delete_session(pb::DeleteSessionRequest {
            session_id: session.clone(),
        })
        .await
        .expect("deleted");
    assert!(!cell.exists(), "the cell is removed with the session");
}

/// Runs a CLI command in-process; returns (exit code, stdout, stderr).
async fn odyssey(args: &[&str]) -> (i32, String, String) {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let args = args.iter().map(|a| a.to_string()).collect();
    let code = tokio::time::timeout(
        Duration::from_secs(60),
        odyssey_cli::run_cli(args, &mut out, &mut err),
    )
    .await
    .expect("the command finishes");
    (
        code,
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    )
}

/// Starts replica `id` on the test database, with a home of its own under `dir` and the
/// shared workspace root; the password is read from a file only the server's user reads.
async fn start_replica(
    db: &TestDatabase,
    dir: &std::path::Path,
    id: &str,
    workspaces: &std::path::Path,
) -> Result<odyssey_server::serve::ServerHandle, odyssey_server::serve::ServeError> {
    use std::os::unix::fs::PermissionsExt;
    let home = dir.join(id);
    std::fs::create_dir_all(&home).expect("home");
    let password_file = home.join("database-password");
    std::fs::write(&password_file, format!("{}\n", db.password)).expect("password file");
    std::fs::set_permissions(&password_file, std::fs::Permissions::from_mode(0o600))
        .expect("chmod");
    let config = home.join("database.toml");
    std::fs::write(
        &config,
        format!(
            "[database]\npassword_file = \"{}\"\nlease_seconds = 3\n",
            password_file.display()
        ),
    )
    .expect("config file");
    let mut args = ServeArgs::new(loopback(), home);
    args.config = Some(config);
    args.database_url = Some(db.url.clone());
    args.replica_id = Some(id.to_owned());
    args.workspace_root = Some(workspaces.to_owned());
    odyssey_server::serve::start(&args).await
}

async fn server_info(url: String) -> pb::GetServerInfoResponse {
    odyssey_api::v1::server_service_client::ServerServiceClient::connect(url)
        .await
        .expect("connect")
        .get_server_info(pb::GetServerInfoRequest {})
        .await
        .expect("info")
        .into_inner()
}

/// Two replicas on one database (and one workspace root): each names the store and itself,
/// and sees both alive; `odyssey info` says so in one line.
#[tokio::test]
async fn replicas_on_postgres_name_the_store_themselves_and_see_each_other_alive() {
    let Some(db) = TestDatabase::new("serve")
        .await
        .expect("a database of its own")
    else {
        return;
    };
    let dir = tempfile::tempdir().expect("dir");
    let workspaces = dir.path().join("shared-workspaces");
    let before = SystemTime::now() - Duration::from_secs(60);
    let mut servers = Vec::new();
    for id in ["r1", "r2"] {
        match start_replica(&db, dir.path(), id, &workspaces).await {
            Ok(server) => servers.push(server),
            Err(e) => {
                for server in servers {
                    let _ = server.shutdown().await;
                }
                db.drop().await.expect("drop the test database");
                panic!("odysseyd serves from PostgreSQL as {id}: {e}");
            }
        }
    }
    let r1 = server_info(servers[0].url()).await;
    let r2 = server_info(servers[1].url()).await;
    let (code, out, err) = odyssey(&["--server", &servers[0].url(), "info"]).await;
    for server in servers {
        server.shutdown().await.expect("clean shutdown");
    }
    db.drop().await.expect("drop the test database");
    assert_eq!(code, 0, "{err}");
    assert!(
        out.lines()
            .any(|line| line == "store: postgres (replica r1; replicas: r1 alive, r2 alive)"),
        "{out}"
    );

    for (info, me) in [(&r1, "r1"), (&r2, "r2")] {
        let store = info.store.as_ref().expect("the store is named");
        assert_eq!(store.kind, "postgres");
        assert_eq!(store.replica_id, me);
        let seen: Vec<&str> = store.replicas.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(seen, ["r1", "r2"], "{me} sees both");
        for replica in &store.replicas {
            assert!(replica.alive, "{me}: {replica:?}");
            let at = replica.last_seen.expect("last seen");
            let at = SystemTime::UNIX_EPOCH + Duration::new(at.seconds as u64, at.nanos as u32);
            assert!(at > before, "{me}: {replica:?}");
        }
        let snapshots = info.workspace_snapshots.expect("snapshots");
        assert_eq!(
            snapshots.mechanism,
            pb::SnapshotMechanism::Copies as i32,
            "workspaces every replica can read"
        );
    }
    assert!(workspaces.is_dir(), "the workspace root is created");
}

/// Set in the child: serve instead of testing.
const LOG_CHILD: &str = "ODYSSEY_E2E_STORE_LOG_CHILD";
const LOG_TEST_NAME: &str =
    "stores::a_replica_configured_by_its_environment_logs_its_store_and_never_the_password";

/// `odysseyd` as the binary runs it (`serve::run`: the environment's `ODYSSEY_*` layer,
/// JSON logs on stderr) in a child process, told the database, its password and its
/// replica id by variables only: its start lines name the store and the replica, and
/// nothing it writes holds the password.
#[tokio::test(flavor = "multi_thread")]
async fn a_replica_configured_by_its_environment_logs_its_store_and_never_the_password() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    if std::env::var_os(LOG_CHILD).is_some() {
        if let Err(e) = odyssey_server::serve::run(ServeArgs::unset()).await {
            // To the real stderr, which the parent reads (the test harness captures
            // what the print macros write).
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "odysseyd: {e}");
            panic!("odysseyd: {e}");
        }
        return;
    }
    let Some(db) = TestDatabase::new("serve")
        .await
        .expect("a database of its own")
    else {
        return;
    };
    let dir = tempfile::tempdir().expect("dir");
    let mut command = Command::new(std::env::current_exe().expect("test binary"));
    command.args([LOG_TEST_NAME, "--exact", "--test-threads=1", "--quiet"]);
    for (name, _) in std::env::vars_os() {
        let name_text = name.to_string_lossy();
        if name_text.starts_with("ODYSSEY_") || name_text == "RUST_LOG" {
            command.env_remove(name);
        }
    }
    command
        .env(LOG_CHILD, "1")
        .env("HOME", dir.path().join("user"))
        .env("ODYSSEY_HOME", dir.path().join("home"))
        .env("ODYSSEY_LISTEN", "127.0.0.1:0")
        .env("ODYSSEY_LOG_FORMAT", "json")
        .env("ODYSSEY_DATABASE_URL", &db.url)
        .env("ODYSSEY_DATABASE_PASSWORD", &db.password)
        .env("ODYSSEY_REPLICA_ID", "r-env")
        .env("ODYSSEY_WORKSPACE_ROOT", dir.path().join("workspaces"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("child starts");
    let stderr = child.stderr.take().expect("stderr");
    let (lines, log) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut captured = Vec::new();
    let mut serving = None;
    // Until it serves, or stops (the channel closes), or a minute passes.
    while let Ok(line) = log.recv_timeout(Duration::from_secs(60)) {
        let entry: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        captured.push(line);
        if entry["fields"]["message"] == "odysseyd serving" {
            serving = Some(entry);
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let (name, password) = (db.name.clone(), db.password.clone());
    db.drop().await.expect("drop the test database");
    let log = captured.join("\n");
    assert!(!log.contains(&password), "the password leaked:\n{log}");
    let opened = captured
        .iter()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|entry| entry["fields"]["message"] == "serving from the PostgreSQL database")
        .unwrap_or_else(|| panic!("no line says the store was opened:\n{log}"));
    assert_eq!(opened["fields"]["store"], "postgres", "{opened}");
    assert_eq!(opened["fields"]["replica"], "r-env", "{opened}");
    let database = opened["fields"]["database"].as_str().unwrap_or_default();
    assert!(
        database.starts_with("postgres://") && database.ends_with(&format!("/{name}")),
        "{opened}"
    );
    let serving = serving.unwrap_or_else(|| panic!("odysseyd never served:\n{log}"));
    assert_eq!(serving["fields"]["store"], "postgres", "{serving}");
    assert_eq!(serving["fields"]["replica"], "r-env", "{serving}");
    assert_eq!(
        serving["fields"]["workspace_root"],
        dir.path().join("workspaces").display().to_string(),
        "{serving}"
    );
}
