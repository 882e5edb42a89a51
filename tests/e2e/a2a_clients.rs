//! The SDK's and the CLI's A2A helpers against a real server: an agent's extended card, a
//! task sent plainly and streamed, read back, followed from a sequence number (nothing at
//! or below it comes again), and cancelled.

use std::time::Duration;

use futures::StreamExt;
use odyssey_client::a2a::{DETAILS_EXTENSION, TaskUpdate};
use odyssey_client::a2a_proto as a2a;
use odyssey_client::{ConnectOptions, OdysseyClient};

use crate::support::{Project, TestServer};

const TOKEN: &str = "a2a-clients-token";
const BOUND: Duration = Duration::from_secs(60);

async fn connect(server: &TestServer) -> OdysseyClient {
    OdysseyClient::connect_with(server.handle.url(), ConnectOptions::new().token(TOKEN))
        .await
        .expect("connect")
}

fn state(task: &a2a::Task) -> a2a::TaskState {
    a2a::TaskState::try_from(task.status.as_ref().map_or(0, |s| s.state))
        .unwrap_or(a2a::TaskState::Unspecified)
}

fn answer(task: &a2a::Task) -> String {
    task.artifacts
        .iter()
        .flat_map(|a| &a.parts)
        .filter_map(|p| match &p.content {
            Some(a2a::part::Content::Text(t)) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// Installs the project through the runtime (the server's token guards the API).
async fn install(server: &TestServer, project: &Project) {
    server
        .handle
        .runtime()
        .build_and_install(project.path(), Default::default())
        .await
        .expect("install");
}

/// A cassette answer streamed in `chunks` pieces, `delay_ms` apart.
fn slow_answer(chunks: usize, delay_ms: u64) -> String {
    let pieces: Vec<String> = (0..chunks).map(|i| format!("\"w{i} \"")).collect();
    format!(
        r#"{{"text": [{}], "chunk_delay_ms": {delay_ms}}}"#,
        pieces.join(",")
    )
}

#[tokio::test]
async fn the_sdk_reads_a_card_sends_streams_resumes_from_a_sequence_and_cancels_tasks() {
    let server = TestServer::start_with(|args| args.auth_token = Some(TOKEN.into())).await;
    install(
        &server,
        &Project::replay(
            "sdkagent",
            &[
                r#"{"text": ["Hello ", "from A2A"]}"#,
                r#"{"text": ["one ", "two ", "three"]}"#,
                &slow_answer(400, 50),
            ],
        ),
    )
    .await;
    let client = connect(&server).await;

    // The card: the default agent's is the named agent's.
    let card = client.agent_card("sdkagent", "main").await.expect("card");
    assert_eq!(card.name, "main");
    let extensions = &card.capabilities.as_ref().expect("capabilities").extensions;
    assert!(
        extensions.iter().any(|e| e.uri == DETAILS_EXTENSION),
        "{extensions:?}"
    );
    assert_eq!(client.agent_card("", "").await.expect("default card"), card);
    let missing = client
        .agent_card("sdkagent", "nobody")
        .await
        .expect_err("no such agent");
    assert_eq!(
        missing.code(),
        Some(tonic::Code::InvalidArgument),
        "{missing}"
    );

    // A plain task, read back.
    let task = client
        .a2a_send("sdkagent.main", "", "Say hello")
        .await
        .expect("send");
    assert_eq!(state(&task), a2a::TaskState::Completed);
    assert_eq!(answer(&task), "Hello from A2A");
    let again = client.a2a_get(&task.id, Some(1)).await.expect("get");
    assert_eq!(
        (again.id.as_str(), again.history.len()),
        (task.id.as_str(), 1)
    );

    // A streamed task in the same context: the task, then the chunks with their sequences.
    let mut updates = client
        .a2a_stream("sdkagent.main", &task.context_id, "Count")
        .await
        .expect("stream");
    let mut seen: Vec<TaskUpdate> = Vec::new();
    while let Some(update) = tokio::time::timeout(BOUND, updates.next())
        .await
        .expect("an update in time")
    {
        seen.push(update.expect("update"));
    }
    assert!(
        matches!(seen[0].update, a2a::stream_response::Payload::Task(_)),
        "{seen:?}"
    );
    let sequences: Vec<u64> = seen.iter().filter_map(|u| u.sequence).collect();
    assert!(
        sequences.windows(2).all(|w| w[0] <= w[1]) && sequences.len() >= 3,
        "{sequences:?}"
    );

    // A long task, followed from a sequence: nothing at or below it comes again.
    let slow = client
        .a2a_send_returning_at_once("sdkagent.main", &task.context_id, "Slowly")
        .await;
    let mut first = client.a2a_subscribe(&slow, 0).await.expect("subscribe");
    let mut handled = 0;
    let mut chunks = 0;
    while chunks < 3 {
        let update = tokio::time::timeout(BOUND, first.next())
            .await
            .expect("in time")
            .expect("more")
            .expect("update");
        if let a2a::stream_response::Payload::ArtifactUpdate(_) = update.update {
            chunks += 1;
            handled = update.sequence.expect("a sequence");
        }
    }
    drop(first);
    let mut resumed = client
        .a2a_subscribe(&slow, handled)
        .await
        .expect("subscribe again");
    let mut after = Vec::new();
    while after.len() < 3 {
        let update = tokio::time::timeout(BOUND, resumed.next())
            .await
            .expect("in time")
            .expect("more")
            .expect("update");
        if let Some(n) = update.sequence {
            after.push(n);
        }
    }
    assert!(
        after.iter().all(|n| *n > handled),
        "{after:?} after {handled}"
    );

    // A call that asks first: the task waits for a person, and a decision answers it.
    install(&server, &Project::with_tools(
            "asker",
            &[
                r#"{"tool_calls": [{"id": "call_a", "name": "Bash", "arguments": {"command": "echo asked"}}]}"#,
                r#"{"text": ["Denied, as you said"]}"#,
            ],
            &["Bash"],
            "[]",
            "[Bash]",
            "[]",
        )).await;
    let asking = client
        .a2a_send("asker.main", "", "Run it")
        .await
        .expect("send");
    assert_eq!(state(&asking), a2a::TaskState::InputRequired);
    let decided = client
        .a2a_decide(&asking, "deny", "not now")
        .await
        .expect("decide");
    assert_eq!(
        (decided.id.as_str(), state(&decided)),
        (asking.id.as_str(), a2a::TaskState::Completed)
    );
    assert_eq!(answer(&decided), "Denied, as you said");

    let cancelled = client.a2a_cancel(&slow).await.expect("cancel");
    assert_eq!(state(&cancelled), a2a::TaskState::Canceled);
    let unknown = client
        .a2a_get(
            &format!("{}.{}", uuid::Uuid::new_v4(), uuid::Uuid::new_v4()),
            None,
        )
        .await
        .expect_err("no such task");
    assert_eq!(unknown.code(), Some(tonic::Code::NotFound), "{unknown}");
}

/// Test-side: a task started without waiting for its turn (A2A's `returnImmediately`).
trait ReturningAtOnce {
    async fn a2a_send_returning_at_once(&self, tenant: &str, context: &str, text: &str) -> String;
}

impl ReturningAtOnce for OdysseyClient {
    async fn a2a_send_returning_at_once(&self, tenant: &str, context: &str, text: &str) -> String {
        let request = a2a::SendMessageRequest {
            tenant: tenant.into(),
            message: Some(a2a::Message {
                message_id: uuid::Uuid::new_v4().to_string(),
                context_id: context.into(),
                role: a2a::Role::User as i32,
                parts: vec![a2a::Part {
                    content: Some(a2a::part::Content::Text(text.into())),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            configuration: Some(a2a::SendMessageConfiguration {
                return_immediately: true,
                ..Default::default()
            }),
            ..Default::default()
        };
        let response = self.a2a().send_message(request).await.expect("send");
        match response.into_inner().payload {
            Some(a2a::send_message_response::Payload::Task(task)) => task.id,
            other => panic!("a task, not {other:?}"),
        }
    }
}

/// Runs a CLI command; returns (exit code, stdout, stderr).
async fn odyssey(args: &[&str]) -> (i32, String, String) {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let args = args.iter().map(|a| a.to_string()).collect();
    let code = tokio::time::timeout(BOUND, odyssey_cli::run_cli(args, &mut out, &mut err))
        .await
        .unwrap_or_else(|_| panic!("the command did not finish within {BOUND:?}"));
    (
        code,
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    )
}

#[tokio::test]
async fn the_cli_shows_a_card_and_sends_streams_gets_and_cancels_tasks() {
    let server = TestServer::start_with(|args| args.auth_token = Some(TOKEN.into())).await;
    install(
        &server,
        &Project::with_tools(
            "cliagent",
            &[
                r#"{"text": ["Hello ", "CLI"]}"#,
                r#"{"text": ["streamed ", "answer"]}"#,
                &slow_answer(400, 50),
            ],
            &["Read"],
            "[Read]",
            "[]",
            "[]",
        ),
    )
    .await;
    let url = server.handle.url();
    let a2a = |rest: &[&str]| {
        let mut args = vec!["--server", url.as_str(), "--token", TOKEN, "a2a"];
        args.extend_from_slice(rest);
        args.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let run = |args: Vec<String>| async move {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        odyssey(&refs).await
    };

    let (code, out, err) = run(a2a(&["card", "cliagent"])).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("interface    GRPC "), "{out}");
    assert!(out.contains("tools        Read"), "{out}");
    assert!(out.contains("model        replay/main"), "{out}");

    let (code, out, err) = run(a2a(&["send", "--agent", "cliagent.main", "Hi"])).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(out, "Hello CLI\n");
    assert!(err.contains("TASK_STATE_COMPLETED"), "{err}");
    let task: String = err
        .split_whitespace()
        .nth(1)
        .expect("the task id")
        .to_owned();
    let context = task.split('.').next().expect("the context").to_owned();

    let (code, out, err) = run(a2a(&["send", "--context", &context, "--stream", "More"])).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(out, "streamed answer\n");
    assert!(err.contains("TASK_STATE_COMPLETED ["), "{err}");

    let (code, out, _) = run(a2a(&["--json", "get", &task])).await;
    assert_eq!(code, 0);
    let json: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON line");
    assert_eq!(json["id"], task, "{json}");
    assert_eq!(json["status"]["state"], "TASK_STATE_COMPLETED", "{json}");

    // A task that runs long: cancelled, then gone from subscriptions.
    let client = connect(&server).await;
    let slow = client
        .a2a_send_returning_at_once("cliagent.main", &context, "Slowly")
        .await;
    let (code, out, err) = run(a2a(&["cancel", &slow])).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(err.contains("TASK_STATE_CANCELED"), "{err}");
    let (code, _, err) = run(a2a(&["subscribe", &slow])).await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("(FAILED_PRECONDITION)"), "{err}");

    let (code, _, err) = run(a2a(&["get", "not-a-task"])).await;
    assert_eq!(code, 1);
    assert!(err.contains("(NOT_FOUND)"), "{err}");
}
