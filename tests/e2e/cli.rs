//! The `odyssey` CLI, run in-process against a real server: the demo, bundles, sessions,
//! a streamed turn, the event log, and errors as one line with a non-zero exit.

use crate::support::{Project, TestServer};

/// Runs a CLI command; returns (exit code, stdout, stderr).
async fn odyssey(args: &[&str]) -> (i32, String, String) {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let args = args.iter().map(|a| a.to_string()).collect();
    let code = odyssey_client::run_cli(args, &mut out, &mut err).await;
    (
        code,
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    )
}

#[tokio::test]
async fn the_demo_runs_a_streamed_turn_with_no_network_and_no_key() {
    let (code, out, err) = odyssey(&["demo"]).await;
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(
        out.contains("Welcome to Odyssey!"),
        "streamed answer shown:\n{out}"
    );
    assert!(out.contains("This answer is streaming to you"), "{out}");
}

#[tokio::test]
async fn bundles_sessions_turns_and_events_from_the_command_line() {
    let server = TestServer::start().await;
    let url = server.handle.url();
    let project = Project::replay("clitest", &[r#"{"text": ["Hi ", "from ", "the CLI."]}"#]);
    let dir = project.path().to_string_lossy().into_owned();

    // A local build writes the artifact and installs nothing.
    let artifact = tempfile::tempdir().expect("out dir");
    let artifact_path = artifact.path().join("clitest.tar.gz");
    let artifact_str = artifact_path.to_string_lossy().into_owned();
    let (code, _, err) = odyssey(&["bundle", "build", &dir, "--output", &artifact_str]).await;
    assert_eq!(code, 0, "{err}");
    assert!(artifact_path.is_file());
    let (code, out, _) = odyssey(&["--server", &url, "--json", "bundle", "list"]).await;
    assert_eq!(code, 0);
    assert!(out.trim().is_empty(), "nothing installed yet: {out}");

    let (code, _, err) = odyssey(&["--server", &url, "bundle", "import", &artifact_str]).await;
    assert_eq!(code, 0, "{err}");
    let (code, out, err) =
        odyssey(&["--server", &url, "--json", "session", "create", "clitest"]).await;
    assert_eq!(code, 0, "{err}");
    let session: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
    let id = session["id"].as_str().expect("session id").to_string();

    let (code, out, err) = odyssey(&["--server", &url, "run", &id, "hello"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Hi from the CLI."), "{out}");

    let (code, out, _) = odyssey(&["--server", &url, "--json", "events", &id]).await;
    assert_eq!(code, 0);
    let sequences: Vec<u64> = out
        .lines()
        .map(|line| {
            let event: serde_json::Value = serde_json::from_str(line).expect("JSON line");
            event["sequence"].as_u64().expect("sequence")
        })
        .collect();
    assert!(sequences.len() >= 5, "{out}");
    assert_eq!(sequences, (1..=sequences.len() as u64).collect::<Vec<_>>());

    // The second turn fails (the cassette has one answer): exit 1, one clear line.
    let (code, _, err) = odyssey(&["--server", &url, "run", &id, "again"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("cassette"), "{err}");

    let missing = uuid::Uuid::new_v4().to_string();
    let (code, _, err) = odyssey(&["--server", &url, "session", "get", &missing]).await;
    assert_eq!(code, 1);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains("NOT_FOUND"), "{err}");
}
