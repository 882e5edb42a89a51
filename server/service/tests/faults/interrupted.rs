//! A turn killed with its server: what the restarted server says about it. Its status is
//! answered from the log (INTERRUPTED, with the tokens its calls reported), those tokens
//! count in the session's totals, and the session's next turn is sent its prompt and its
//! completed steps, then a note that it was interrupted.

use std::time::Duration;

use futures::StreamExt;
use odyssey_api::v1 as pb;
use odyssey_testing::openai_wire::{OpenAiWireServer, Reply, Script, StreamBuilder, WireUsage};
use pb::session_event::Payload;
use serde_json::Value;

use crate::support::odysseyd::MODEL_KEY;
use crate::support::{Launch, Odysseyd, create_session, install, last_message, temp_home, turn};

fn usage() -> WireUsage {
    WireUsage {
        prompt_tokens: 40,
        completion_tokens: 12,
        ..WireUsage::default()
    }
}

fn bash_call(id: &str, command: &str) -> Reply {
    let arguments = serde_json::json!({ "command": command }).to_string();
    StreamBuilder::new()
        .text("Checking.", 1)
        .tool_call(0, id, "Bash", &arguments, 1)
        .finish("tool_calls")
        .usage(usage())
        .done()
        .build()
}

/// The first prompt gets a quick Bash call; its result a long one (the kill lands in it);
/// any other prompt a short answer.
fn model(marker: String) -> impl Fn(&Value) -> Reply + Send + Sync {
    move |request| match last_message(request) {
        (role, _) if role == "tool" => bash_call("call_long", &format!("sleep {marker}")),
        (_, prompt) if prompt == "list the files" => bash_call("call_quick", "echo one"),
        _ => StreamBuilder::new()
            .text("It was interrupted.", 1)
            .finish("stop")
            .usage(usage())
            .done()
            .build(),
    }
}

/// Issue 12 items 7 and 8.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_turn_is_answerable_counted_and_remembered() {
    // `sleep 5.7<pid>` (about 5.7 s) names this test's sandboxed process.
    let marker = format!("5.7{}", std::process::id());
    let model = OpenAiWireServer::start(Script::respond(MODEL_KEY, model(marker.clone())))
        .await
        .expect("loopback model");
    let home = temp_home();
    let mut launch = Launch::new(home.path());
    launch.model_url = Some(model.base_url());
    let server = Odysseyd::start(&launch).await;
    install(&server, crate::support::bundle_archive("killed"))
        .await
        .expect("bundle installs");
    let session = create_session(&server, "killed").await.expect("session");
    let mut events = server
        .sessions()
        .subscribe_session(pb::SubscribeSessionRequest {
            session_id: session.clone(),
            after_sequence: 0,
        })
        .await
        .expect("subscribe")
        .into_inner();
    let execution = server
        .executions()
        .submit(pb::SubmitRequest {
            input: turn(&session, "list the files"),
        })
        .await
        .expect("submit")
        .into_inner()
        .execution_id;
    // Kill once the long command runs: the first step (one model call, `echo one`) is
    // complete, the second (another call, the `sleep`) is not.
    let running = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(item) = events.next().await {
            let item = item.expect("event stream");
            if let Some(pb::subscribe_session_response::Item::Event(event)) = item.item
                && let Some(Payload::ExecCommandBegin(begin)) = event.payload
                && begin.argv.iter().any(|a| a.contains(&marker))
            {
                return;
            }
        }
        panic!("the event stream ended before the long command ran");
    })
    .await;
    assert!(running.is_ok(), "the long command never ran");
    drop(events);
    server.kill().await;

    let server = Odysseyd::start(&launch).await;
    let status = server
        .executions()
        .get_execution_status(pb::GetExecutionStatusRequest {
            execution_id: execution.clone(),
        })
        .await
        .expect("the interrupted turn's status is answered after the restart")
        .into_inner()
        .status
        .expect("a status");
    assert_eq!(
        status.state,
        pb::ExecutionState::Interrupted as i32,
        "{status:?}"
    );
    assert_eq!(status.session_id, session);
    assert_eq!(
        status.error,
        "the server stopped while this turn was running"
    );
    let spent = status.usage.expect("usage");
    assert_eq!(
        (spent.input_tokens, spent.output_tokens),
        (80, 24),
        "both calls"
    );
    assert_eq!(status.first_sequence, 1);

    let info = server
        .sessions()
        .get_session(pb::GetSessionRequest {
            session_id: session.clone(),
        })
        .await
        .expect("session")
        .into_inner()
        .session
        .expect("a session");
    assert_eq!(info.last_sequence, status.last_sequence);
    let totals = info.usage.expect("totals");
    assert_eq!(
        (totals.input_tokens, totals.output_tokens),
        (80, 24),
        "the session's totals count the interrupted turn"
    );

    let requests_before = model.requests().len();
    server
        .executions()
        .run(pb::RunRequest {
            input: turn(&session, "what happened?"),
        })
        .await
        .expect("the next turn runs");
    let requests = model.requests();
    assert_eq!(requests.len(), requests_before + 1);
    let sent = requests[requests_before]["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let shape: Vec<(String, String)> = sent
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            let role = m["role"].as_str().unwrap_or_default().to_owned();
            let content = m["content"].as_str().unwrap_or_default().to_owned();
            let calls: Vec<&str> = m["tool_calls"]
                .as_array()
                .map(|c| c.iter().filter_map(|c| c["id"].as_str()).collect())
                .unwrap_or_default();
            if calls.is_empty() {
                (role, content)
            } else {
                (role, format!("{content} {}", calls.join(",")))
            }
        })
        .collect();
    let text = |role: &str, content: &str| (role.to_owned(), content.to_owned());
    assert_eq!(shape.len(), 5, "{shape:#?}");
    assert_eq!(shape[0], text("user", "list the files"));
    assert_eq!(shape[1], text("assistant", "Checking. call_quick"));
    assert_eq!(shape[2].0, "tool");
    assert!(shape[2].1.contains("one"), "{shape:#?}");
    assert_eq!(shape[3].0, "assistant");
    assert!(
        shape[3].1.starts_with("[This turn was interrupted"),
        "{shape:#?}"
    );
    assert_eq!(shape[4], text("user", "what happened?"));
    server.kill().await;
}
