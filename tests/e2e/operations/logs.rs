//! Logs and metrics never carry what users, models and tools say, nor keys. A turn with a
//! distinctive prompt, a provider error quoting it, a tool call with distinctive output
//! and a distinctive answer runs through `odysseyd` in a child process — the same
//! `serve::run` the binary runs, configured by its environment, logging JSON to stderr at
//! the default level — and neither the whole log nor the metrics contain any of them.
//!
//! The environment of a process is fixed when it starts, so the test runs itself again as
//! the child, which serves until it gets SIGTERM.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use odyssey_api::v1 as pb;
use odyssey_api::v1::{
    bundle_service_client::BundleServiceClient, execution_service_client::ExecutionServiceClient,
    session_service_client::SessionServiceClient,
};
use odyssey_server::config::ServeArgs;
use odyssey_testing::openai_wire::{OpenAiWireServer, Reply, Script, StreamBuilder};
use serde_json::Value;
use tonic::transport::Channel;

use super::{sample, scrape};
use crate::support::{bundle_name, bundle_version, loopback, turn};

/// Set in the child: serve instead of testing.
const CHILD: &str = "ODYSSEY_E2E_OPS_LOG_CHILD";
/// Set in the child: its home folder.
const CHILD_HOME: &str = "ODYSSEY_E2E_OPS_LOG_HOME";
const TEST_NAME: &str =
    "operations::logs::logs_and_metrics_never_carry_prompts_answers_tool_output_or_keys";

const KEY: &str = "sk-ops-logs-key-7c1d9e52";
const PROMPT: &str = "PROMPT-quartz-4471";
const ANSWER: &str = "ANSWER-cobalt-9052";
/// What the tool prints; its command builds it from pieces, so only its output holds it.
const TOOL_OUTPUT: &str = "TOOLOUT-amber-3318";
const TOOL_COMMAND: &str = "printf 'TOOLOUT-%s-3318' amber";

/// The child process, killed if the test ends early.
pub(super) struct Odysseyd(pub(super) Child);

impl Drop for Odysseyd {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn script() -> Script {
    let arguments = serde_json::json!({ "command": TOOL_COMMAND }).to_string();
    Script::new(KEY)
        // Retried at the start of the call; providers' messages may quote the request.
        .reply(Reply::error(
            503,
            format!("overloaded while reading `{PROMPT}`"),
        ))
        .reply(
            StreamBuilder::new()
                .tool_call(0, "call_logged", "Bash", &arguments, 3)
                .finish("tool_calls")
                .done()
                .build(),
        )
        .reply(Reply::text(&format!("The box holds {ANSWER}.")))
}

/// The address in the first JSON log line whose message is `message`.
pub(super) fn address_in(line: &str, message: &str) -> Option<SocketAddr> {
    let entry: Value = serde_json::from_str(line).ok()?;
    if entry["fields"]["message"] != message {
        return None;
    }
    entry["fields"]["addr"].as_str()?.parse().ok()
}

#[tokio::test(flavor = "multi_thread")]
async fn logs_and_metrics_never_carry_prompts_answers_tool_output_or_keys() {
    if std::env::var_os(CHILD).is_some() {
        let home = std::env::var(CHILD_HOME).expect("child home");
        let args = ServeArgs::new(loopback(), home.into());
        odyssey_server::serve::run(args)
            .await
            .expect("odysseyd serves");
        return;
    }
    let model = OpenAiWireServer::start(script())
        .await
        .expect("loopback model");
    let dir = tempfile::tempdir().expect("dir");
    let mut command = Command::new(std::env::current_exe().expect("test binary"));
    command.args([TEST_NAME, "--exact", "--test-threads=1", "--quiet"]);
    for (name, _) in std::env::vars_os() {
        let name_text = name.to_string_lossy();
        if name_text.starts_with("ODYSSEY_") || name_text == "RUST_LOG" {
            command.env_remove(name);
        }
    }
    command
        .env(CHILD, "1")
        .env(CHILD_HOME, dir.path().join("home"))
        .env("HOME", dir.path().join("user"))
        .env("ODYSSEY_LOG_FORMAT", "json")
        .env("ODYSSEY_METRICS_LISTEN", "127.0.0.1:0")
        .env(
            "ODYSSEY_PROVIDER_BASE_URL",
            format!("openai={}", model.base_url()),
        )
        .env("OPENAI_API_KEY", KEY)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = Odysseyd(command.spawn().expect("child starts"));
    let stderr = child.0.stderr.take().expect("stderr");
    let (lines, log) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut captured = Vec::new();
    let (mut api, mut metrics) = (None, None);
    while api.is_none() || metrics.is_none() {
        let line = log
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("odysseyd never started:\n{}", captured.join("\n")));
        api = api.or_else(|| address_in(&line, "odysseyd serving"));
        metrics = metrics.or_else(|| address_in(&line, "metrics endpoint listening"));
        captured.push(line);
    }
    let (api, metrics) = (api.expect("api"), metrics.expect("metrics"));

    let channel = Channel::from_shared(format!("http://{api}"))
        .expect("url")
        .connect()
        .await
        .expect("connect");
    let project =
        crate::provider_features::project("logged", "openai", "gpt-test", "{}", &["Bash"]);
    let mut bundles = BundleServiceClient::new(channel.clone());
    let bundle = crate::support::build(&mut bundles, project.archive(), "", false)
        .await
        .expect("bundle installs");
    let session = SessionServiceClient::new(channel.clone())
        .create_session(pb::CreateSessionRequest {
            bundle_reference: format!("{}@{}", bundle_name(&bundle), bundle_version(&bundle)),
            ..Default::default()
        })
        .await
        .expect("session")
        .into_inner()
        .session
        .expect("session");
    let prompt = format!("{PROMPT}: what is in the box?");
    let status = ExecutionServiceClient::new(channel.clone())
        .run(pb::RunRequest {
            input: Some(turn(&session.id, &prompt)),
        })
        .await
        .expect("run")
        .into_inner()
        .status
        .expect("status");
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    assert!(status.response.contains(ANSWER), "{status:?}");
    // The distinctive texts really went through: the provider saw the prompt and the
    // tool's output, and the provider was asked again after its error.
    let requests = model.requests();
    assert_eq!(requests.len(), 3, "one retry, a tool call, an answer");
    let fed_back = requests[2].to_string();
    assert!(
        fed_back.contains(PROMPT) && fed_back.contains(TOOL_OUTPUT),
        "{fed_back}"
    );

    let (code, text) = scrape(metrics, None).await;
    assert_eq!(code, 200);
    assert_eq!(
        sample(&text, "odyssey_turns_total", &[("outcome", "completed")]),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &text,
            "odyssey_sandbox_executions_total",
            &[("mode", "workspace_write"), ("outcome", "success")]
        ),
        Some(1.0),
        "{text}"
    );

    // SIGTERM: odysseyd shuts down gracefully and says so last.
    let stopped = Command::new("kill")
        .args(["-TERM", &child.0.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(stopped.success());
    while let Ok(line) = log.recv_timeout(Duration::from_secs(30)) {
        captured.push(line);
    }
    reader.join().expect("reader");
    let exit = child.0.wait().expect("child exits");
    let whole_log = captured.join("\n");
    assert!(exit.success(), "{exit:?}\n{whole_log}");
    for expected in [
        "odysseyd serving",
        "session created",
        "odysseyd stopped",
        &session.id,
    ] {
        assert!(
            whole_log.contains(expected),
            "{expected} in the log:\n{whole_log}"
        );
    }
    assert!(
        whole_log.contains("model call failed to start; retrying"),
        "the provider error was logged:\n{whole_log}"
    );
    for (what, secret) in [
        ("the prompt", PROMPT),
        ("the answer", ANSWER),
        ("the tool output", TOOL_OUTPUT),
        ("the API key", KEY),
    ] {
        assert!(
            !whole_log.contains(secret),
            "{what} in the log:\n{whole_log}"
        );
        assert!(!text.contains(secret), "{what} in the metrics:\n{text}");
    }
}
