//! Issue 21: one canary key sent through every path a model config takes (a bundle's
//! `agent.yaml`, CreateSession's model, Run's and Submit's overrides, as a key, as userinfo
//! in a base URL, as a header) is refused naming the field, and the operator's credential
//! holding the same key, picked by name, runs a turn. Then the home (session records,
//! event logs, cassettes), the log, the metrics page, the event-hook bodies, the
//! SubscribeSession stream and the gateway's SSE stream hold no trace of it: the only
//! place it may go is the request to the provider, which accepts no other key.
//!
//! The server runs as a child process (this test run again), configured like `odysseyd`,
//! so its whole log can be read.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use eventsource_stream::Eventsource;
use futures::StreamExt;
use odyssey_api::v1 as pb;
use odyssey_api::v1::{
    bundle_service_client::BundleServiceClient, execution_service_client::ExecutionServiceClient,
    session_service_client::SessionServiceClient,
};
use odyssey_server::config::ServeArgs;
use odyssey_testing::openai_wire::{OpenAiWireServer, Reply, Script};
use tonic::transport::Channel;

use super::hooks::Receiver;
use super::logs::{Odysseyd, address_in};
use super::scrape;
use crate::support::{bad_fields, bundle_name, bundle_version, loopback, turn};

const CHILD: &str = "ODYSSEY_E2E_CANARY_CHILD";
const CHILD_HOME: &str = "ODYSSEY_E2E_CANARY_HOME";
const CHILD_CONFIG: &str = "ODYSSEY_E2E_CANARY_CONFIG";
const TEST_NAME: &str =
    "operations::canary::a_canary_key_through_every_path_is_refused_and_found_nowhere";

const CANARY: &str = "sk-canary-5b7e1d93c2aa4f06";

/// A model config holding the canary, in each of the shapes that must be refused, and
/// the field each refusal must name.
fn leaky_configs() -> Vec<(serde_json::Value, &'static str)> {
    vec![
        (
            serde_json::json!({ "api_key": CANARY }),
            "model.config.api_key",
        ),
        (
            serde_json::json!({ "base_url": format!("https://team:{CANARY}@llm.example.com/v1") }),
            "model.config.base_url",
        ),
        (
            serde_json::json!({ "headers": { "X-Team-Key": CANARY } }),
            "model.config.headers.X-Team-Key",
        ),
        (
            serde_json::json!({ "extra_body": { "auth": { "Token": CANARY } } }),
            "model.config.extra_body.auth.Token",
        ),
    ]
}

fn model(config: &serde_json::Value) -> pb::ModelSpec {
    pb::ModelSpec {
        provider: "openai".into(),
        name: "gpt-test".into(),
        config: Some(json_struct(config)),
    }
}

fn json_struct(value: &serde_json::Value) -> prost_types::Struct {
    let fields = value
        .as_object()
        .map(|o| o.iter().map(|(k, v)| (k.clone(), json_value(v))).collect())
        .unwrap_or_default();
    prost_types::Struct { fields }
}

fn json_value(value: &serde_json::Value) -> prost_types::Value {
    use prost_types::value::Kind;
    let kind = match value {
        serde_json::Value::Null => Kind::NullValue(0),
        serde_json::Value::Bool(b) => Kind::BoolValue(*b),
        serde_json::Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or_default()),
        serde_json::Value::String(s) => Kind::StringValue(s.clone()),
        serde_json::Value::Array(a) => Kind::ListValue(prost_types::ListValue {
            values: a.iter().map(json_value).collect(),
        }),
        serde_json::Value::Object(_) => Kind::StructValue(json_struct(value)),
    };
    prost_types::Value { kind: Some(kind) }
}

/// A refusal of the canary: INVALID_ARGUMENT naming `field`, saying where keys go, and
/// quoting nothing of the key.
fn assert_refused(what: &str, status: tonic::Status, field: &str) {
    assert_eq!(
        status.code(),
        tonic::Code::InvalidArgument,
        "{what}: {status:?}"
    );
    assert!(
        bad_fields(&status).iter().any(|f| f == field),
        "{what}: {:?} should name {field}",
        bad_fields(&status)
    );
    assert!(
        status.message().contains("credential"),
        "{what}: {}",
        status.message()
    );
    assert!(
        !format!("{status:?}").contains(CANARY),
        "{what}: {status:?}"
    );
}

/// Every file under `dir` that holds the canary.
fn files_holding(dir: &Path, found: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_holding(&path, found);
        } else if std::fs::read(&path)
            .is_ok_and(|bytes| bytes.windows(CANARY.len()).any(|w| w == CANARY.as_bytes()))
        {
            found.push(path.display().to_string());
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_canary_key_through_every_path_is_refused_and_found_nowhere() {
    if std::env::var_os(CHILD).is_some() {
        let home = std::env::var(CHILD_HOME).expect("child home");
        let mut args = ServeArgs::new(loopback(), home.into());
        args.config = std::env::var_os(CHILD_CONFIG).map(Into::into);
        odyssey_server::serve::run(args)
            .await
            .expect("odysseyd serves");
        return;
    }
    // The provider accepts the canary, and nothing else, as its key.
    let provider = OpenAiWireServer::start(Script::new(CANARY).reply(Reply::text("All clear.")))
        .await
        .expect("loopback model");
    let hook = Receiver::start().await;
    let dir = tempfile::tempdir().expect("dir");
    let key_file = dir.path().join("canary.key");
    std::fs::write(&key_file, format!("{CANARY}\n")).expect("key file");
    let config = dir.path().join("odysseyd.toml");
    std::fs::write(
        &config,
        format!(
            "[providers.openai]\nbase_url = \"{}\"\n\n[credentials.canary]\nprovider = \"openai\"\napi_key_file = \"{}\"\n",
            provider.base_url(),
            key_file.display()
        ),
    )
    .expect("config");

    let mut command = Command::new(std::env::current_exe().expect("test binary"));
    command.args([TEST_NAME, "--exact", "--test-threads=1", "--quiet"]);
    for (name, _) in std::env::vars_os() {
        let name_text = name.to_string_lossy();
        if name_text.starts_with("ODYSSEY_")
            || name_text == "RUST_LOG"
            || name_text.ends_with("_API_KEY")
        {
            command.env_remove(name);
        }
    }
    command
        .env(CHILD, "1")
        .env(CHILD_HOME, dir.path().join("home"))
        .env(CHILD_CONFIG, &config)
        .env("HOME", dir.path().join("user"))
        .env("RUST_LOG", "debug")
        .env("ODYSSEY_LOG_FORMAT", "json")
        .env("ODYSSEY_METRICS_LISTEN", "127.0.0.1:0")
        .env("ODYSSEY_HTTP_LISTEN", "127.0.0.1:0")
        .env("ODYSSEY_RECORD_CASSETTES", "true")
        .env("ODYSSEY_EVENT_HOOK", hook.url("/events"))
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
    let (mut api, mut metrics, mut gateway) = (None, None, None);
    while api.is_none() || metrics.is_none() || gateway.is_none() {
        let line = log
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("odysseyd never started:\n{}", captured.join("\n")));
        api = api.or_else(|| address_in(&line, "odysseyd serving"));
        metrics = metrics.or_else(|| address_in(&line, "metrics endpoint listening"));
        gateway = gateway.or_else(|| address_in(&line, "HTTP gateway listening"));
        captured.push(line);
    }
    let (api, metrics, gateway) = (
        api.expect("api"),
        metrics.expect("metrics"),
        gateway.expect("gateway"),
    );
    let channel = Channel::from_shared(format!("http://{api}"))
        .expect("url")
        .connect()
        .await
        .expect("connect");
    let mut bundles = BundleServiceClient::new(channel.clone());
    let mut sessions = SessionServiceClient::new(channel.clone());
    let mut executions = ExecutionServiceClient::new(channel.clone());

    // A bundle carrying the canary is refused at build.
    let leaky = crate::provider_features::project(
        "leaky",
        "openai",
        "gpt-test",
        &format!("{{ api_key: {CANARY} }}"),
        &[],
    );
    let refused = crate::support::build(&mut bundles, leaky.archive(), "", false)
        .await
        .expect_err("a bundle with a key is refused");
    assert_refused(
        "bundle",
        refused,
        "agents/main/agent.yaml:spec.model.config.api_key",
    );

    // The bundle that runs picks the operator's credential by name.
    let project = crate::provider_features::project(
        "canary",
        "openai",
        "gpt-test",
        "{ credential: canary }",
        &[],
    );
    let bundle = crate::support::build(&mut bundles, project.archive(), "", false)
        .await
        .expect("bundle installs");
    let reference = format!("{}@{}", bundle_name(&bundle), bundle_version(&bundle));

    for (config, field) in leaky_configs() {
        let refused = sessions
            .create_session(pb::CreateSessionRequest {
                bundle_reference: reference.clone(),
                model: Some(model(&config)),
                ..Default::default()
            })
            .await
            .expect_err("a session with a key in its model is refused");
        assert_refused("CreateSession", refused, field);
    }
    let session = sessions
        .create_session(pb::CreateSessionRequest {
            bundle_reference: reference.clone(),
            ..Default::default()
        })
        .await
        .expect("session")
        .into_inner()
        .session
        .expect("session");

    for (config, field) in leaky_configs() {
        let mut input = turn(&session.id, "hello");
        input.overrides = Some(pb::TurnOverrides {
            model: Some(model(&config)),
            ..Default::default()
        });
        let field = format!("input.overrides.{field}");
        let refused = executions
            .run(pb::RunRequest {
                input: Some(input.clone()),
            })
            .await
            .expect_err("Run refuses a key in the overrides");
        assert_refused("Run", refused, &field);
        let refused = executions
            .submit(pb::SubmitRequest { input: Some(input) })
            .await
            .expect_err("Submit refuses a key in the overrides");
        assert_refused("Submit", refused, &field);
    }

    // The turn runs with the credential: the provider saw the canary as its key.
    let status = executions
        .run(pb::RunRequest {
            input: Some(turn(&session.id, "status?")),
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
    assert_eq!(status.response, "All clear.");
    assert_eq!(provider.requests().len(), 1);

    // Every stream a client can read.
    let mut streamed = String::new();
    let mut subscription = sessions
        .subscribe_session(pb::SubscribeSessionRequest {
            session_id: session.id.clone(),
            after_sequence: 0,
        })
        .await
        .expect("subscribe")
        .into_inner();
    while let Some(item) = tokio::time::timeout(Duration::from_secs(20), subscription.next())
        .await
        .expect("events keep coming")
    {
        let item = item.expect("stream item");
        streamed.push_str(&format!("{item:?}"));
        if let Some(pb::subscribe_session_response::Item::Event(event)) = item.item
            && matches!(
                event.payload,
                Some(pb::session_event::Payload::TurnCompleted(_))
            )
        {
            break;
        }
    }
    assert!(
        streamed.contains("credential"),
        "the stream shows the model: {streamed}"
    );
    let _ = rustls::crypto::ring::default_provider().install_default();
    let response = reqwest::Client::new()
        .get(format!("http://{gateway}/sessions/{}/events", session.id))
        .send()
        .await
        .expect("SSE");
    let mut sse = response.bytes_stream().eventsource();
    let mut sse_text = String::new();
    while let Some(event) = tokio::time::timeout(Duration::from_secs(20), sse.next())
        .await
        .expect("SSE events keep coming")
    {
        let event = event.expect("an SSE event");
        sse_text.push_str(&event.data);
        if event.event == "turn_completed" {
            break;
        }
    }
    // The gateway's public JSON form: the proto's lowerCamelCase names.
    assert!(sse_text.contains("turnStarted"), "{sse_text}");
    let hooked = hook.wait_for(1).await;
    let hooked = loop {
        let all = hook.wait_for(hooked.len()).await;
        if all
            .iter()
            .any(|e| e["event"].get("turnCompleted").is_some())
        {
            break all;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let (code, metrics_text) = scrape(metrics, None).await;
    assert_eq!(code, 200);

    // SIGTERM, and the whole log.
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
    assert!(whole_log.contains("odysseyd stopped"), "{whole_log}");

    let home = dir.path().join("home");
    let cassette = home
        .join("sessions")
        .join(&session.id)
        .join("cassette.jsonl");
    assert!(cassette.is_file(), "the model call was recorded");
    let mut in_home = Vec::new();
    files_holding(&home, &mut in_home);
    assert!(in_home.is_empty(), "the canary is on disk: {in_home:?}");
    let hooked = serde_json::to_string(&hooked).expect("JSON");
    for (place, text) in [
        ("the log", &whole_log),
        ("the metrics page", &metrics_text),
        ("the event hook", &hooked),
        ("SubscribeSession", &streamed),
        ("the SSE stream", &sse_text),
    ] {
        assert!(!text.contains(CANARY), "the canary in {place}:\n{text}");
    }
}
