//! `odyssey config show --sources` run as a user would: in its own process, with its own
//! environment (the `ODYSSEY_*` layer), a home file, a `--config` file and flags.
//!
//! The environment of a process is fixed when it starts, and changing it while other
//! tests run is unsound, so this test runs itself again as a child process with the
//! environment under test; the child drives the CLI and reports what it printed.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

/// Set in the child: where to write the CLI's exit code and output.
const REPORT: &str = "ODYSSEY_E2E_SHOW_REPORT";
/// Set in the child: the CLI arguments, as a JSON array.
const ARGS: &str = "ODYSSEY_E2E_SHOW_ARGS";
const TEST_NAME: &str = "config::show::config_show_names_where_every_value_comes_from";

/// Runs `odyssey ARGS` in a child process with `env` as its only `ODYSSEY_*` variables.
fn run_in_child(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (i64, String, String) {
    let report = dir.join(format!("report-{}.json", uuid::Uuid::new_v4()));
    let mut command = Command::new(std::env::current_exe().expect("test binary"));
    command.args([TEST_NAME, "--exact", "--test-threads=1", "--quiet"]);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("ODYSSEY_") {
            command.env_remove(name);
        }
    }
    command
        .env("HOME", dir.join("user"))
        .env(REPORT, &report)
        .env(ARGS, serde_json::to_string(args).expect("args"))
        .envs(env.iter().copied());
    let output = command.output().expect("child runs");
    assert!(
        output.status.success(),
        "child failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value =
        serde_json::from_slice(&std::fs::read(&report).expect("child report")).expect("JSON");
    (
        report["code"].as_i64().expect("code"),
        report["out"].as_str().unwrap_or_default().to_owned(),
        report["err"].as_str().unwrap_or_default().to_owned(),
    )
}

/// In the child: run the CLI in this process and report.
async fn child(report: &str) {
    let args: Vec<String> =
        serde_json::from_str(&std::env::var(ARGS).expect("args")).expect("JSON args");
    let mut out = Vec::new();
    let mut err = Vec::new();
    let code = odyssey_cli::run_cli(args, &mut out, &mut err).await;
    let report_json = json!({
        "code": code,
        "out": String::from_utf8_lossy(&out),
        "err": String::from_utf8_lossy(&err),
    });
    std::fs::write(report, report_json.to_string()).expect("write report");
}

#[tokio::test]
async fn config_show_names_where_every_value_comes_from() {
    if let Ok(report) = std::env::var(REPORT) {
        return child(&report).await;
    }
    let dir = tempfile::tempdir().expect("dir");
    let home = dir.path().join("srv-home");
    std::fs::create_dir_all(&home).expect("home");
    let home_file = home.join("config.toml");
    std::fs::write(&home_file, "[server]\nqueue_capacity = 11\n").expect("home file");
    let config = dir.path().join("odysseyd.toml");
    std::fs::write(
        &config,
        "[turns]\nmax_steps = 7\n\n[providers.openai]\napi_key = \"sk-show-secret-000\"\n",
    )
    .expect("config file");
    let config_arg = config.to_string_lossy().into_owned();
    let env = [
        ("ODYSSEY_HOME", home.to_str().expect("utf-8 path")),
        ("ODYSSEY_HEARTBEAT_SECONDS", "3"),
        ("ODYSSEY_AUTH_TOKEN", "tok-show-secret-111"),
    ];

    let (code, out, err) = run_in_child(
        dir.path(),
        &[
            "config",
            "show",
            "--sources",
            "--config",
            &config_arg,
            "--worker-count",
            "8",
        ],
        &env,
    );
    assert_eq!(code, 0, "{err}");
    let line = |prefix: &str| {
        out.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` in:\n{out}"))
            .to_owned()
    };
    assert!(
        line("worker_count = 8").ends_with("# flag --worker-count"),
        "{out}"
    );
    assert!(
        line("heartbeat_seconds = 3").ends_with("# env ODYSSEY_HEARTBEAT_SECONDS"),
        "{out}"
    );
    assert!(line("home = ").ends_with("# env ODYSSEY_HOME"), "{out}");
    assert!(
        line("max_steps = 7").ends_with(&format!("# {}:2", config.display())),
        "{out}"
    );
    assert!(
        line("queue_capacity = 11").ends_with(&format!("# {}:2", home_file.display())),
        "{out}"
    );
    assert!(
        line("timeout_seconds = 600").ends_with("# default"),
        "{out}"
    );
    assert!(
        line("auth_token = \"********\"").ends_with("# env ODYSSEY_AUTH_TOKEN"),
        "{out}"
    );
    assert!(
        line("api_key = \"********\"").contains(&config.display().to_string()),
        "{out}"
    );
    assert!(
        !out.contains("tok-show-secret-111") && !out.contains("sk-show-secret-000"),
        "secrets are masked:\n{out}"
    );
    assert!(
        out.contains(&format!(
            "# Files read: {}, {}.",
            home_file.display(),
            config.display()
        )),
        "{out}"
    );

    let (code, out, err) = run_in_child(
        dir.path(),
        &[
            "config",
            "show",
            "--sources",
            "--json",
            "--config",
            &config_arg,
        ],
        &env,
    );
    assert_eq!(code, 0, "{err}");
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    let heartbeat = lines
        .iter()
        .find(|l| l["key"] == "server.heartbeat_seconds")
        .expect("heartbeat line");
    assert_eq!(heartbeat["value"], 3);
    assert_eq!(heartbeat["layer"], "env");
    assert_eq!(heartbeat["source"], "env ODYSSEY_HEARTBEAT_SECONDS");

    // A typo is one line naming the file, the line and the key, and exit 1.
    std::fs::write(&config, "[turns]\nmax_stepz = 7\n").expect("bad config");
    let (code, _, err) = run_in_child(
        dir.path(),
        &["config", "show", "--config", &config_arg],
        &env,
    );
    assert_eq!(code, 1);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!(
            "{}:2: unknown key `turns.max_stepz`",
            config.display()
        )),
        "{err}"
    );
}
