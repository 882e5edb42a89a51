//! A sandboxed command never outlives a server killed with SIGKILL: no supervisor would
//! be left to time it out, and a process started just before the kill had no record for
//! the next start to find. What the server starts is tied to it by a parent-death signal
//! (set again after the staging helper drops root); inside the sandbox a watcher on the
//! server's lifeline pipe kills the command's processes once the server is gone.

use std::time::{Duration, Instant};

use futures::StreamExt;
use odyssey_api::v1 as pb;
use odyssey_testing::openai_wire::{OpenAiWireServer, Reply, Script, StreamBuilder};
use pb::session_event::Payload;
use serde_json::Value;

use crate::support::odysseyd::MODEL_KEY;
use crate::support::procfs::processes_with;
use crate::support::{Launch, Odysseyd, create_session, install, last_message, temp_home, turn};

fn model(command: String) -> impl Fn(&Value) -> Reply + Send + Sync {
    move |request| match last_message(request) {
        (role, _) if role == "tool" => StreamBuilder::new()
            .text("Done.", 1)
            .finish("stop")
            .done()
            .build(),
        _ => {
            let arguments = serde_json::json!({ "command": command }).to_string();
            StreamBuilder::new()
                .tool_call(0, "call_long", "Bash", &arguments, 1)
                .finish("tool_calls")
                .done()
                .build()
        }
    }
}

/// Kills the server as soon as the command's begin event is out (it is written just before
/// the process starts, so the kill lands while bubblewrap is still being set up, before
/// it ties itself to its parent), five times: nothing it started may survive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_process_dies_with_a_killed_server() {
    for round in 0..5 {
        // `sleep 300<pid><round>` names this round's sandboxed processes, and `sleep` in
        // the background a grandchild of its own.
        let marker = format!("300{}{round}", std::process::id());
        kill_as_the_command_starts(&marker).await;
        // Dying takes a moment (the signal, then bubblewrap's PID namespace going down);
        // then nothing may be left, nor start later.
        let gone = Instant::now() + Duration::from_secs(2);
        while !processes_with(&marker).is_empty() && Instant::now() < gone {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let watch = Instant::now() + Duration::from_secs(1);
        while Instant::now() < watch {
            let commands = running_commands(&marker);
            assert!(
                commands.is_empty(),
                "round {round}: sandboxed commands outlived the killed server: {commands:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// The processes running the command itself (bubblewrap's own, still setting up, are not
/// commands yet).
fn running_commands(marker: &str) -> Vec<String> {
    processes_with(marker)
        .into_iter()
        .filter(|p| {
            p.split_once(": ")
                .is_some_and(|(_, cmd)| cmd.starts_with("sleep") || cmd.starts_with("/bin/bash"))
        })
        .collect()
}

async fn kill_as_the_command_starts(marker: &str) {
    let command = format!("sleep {marker} & sleep {marker}");
    let model = OpenAiWireServer::start(Script::respond(MODEL_KEY, model(command)))
        .await
        .expect("loopback model");
    let home = temp_home();
    let mut launch = Launch::new(home.path());
    launch.model_url = Some(model.base_url());
    let server = Odysseyd::start(&launch).await;
    install(&server, crate::support::bundle_archive("orphans"))
        .await
        .expect("bundle installs");
    let session = create_session(&server, "orphans").await.expect("session");
    let mut events = server
        .sessions()
        .subscribe_session(pb::SubscribeSessionRequest {
            session_id: session.clone(),
            after_sequence: 0,
        })
        .await
        .expect("subscribe")
        .into_inner();
    server
        .executions()
        .submit(pb::SubmitRequest {
            input: turn(&session, "wait a while"),
        })
        .await
        .expect("submit");
    let began = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(item) = events.next().await {
            if let Ok(pb::SubscribeSessionResponse {
                item: Some(pb::subscribe_session_response::Item::Event(event)),
            }) = item
                && matches!(event.payload, Some(Payload::ExecCommandBegin(_)))
            {
                return;
            }
        }
    })
    .await;
    assert!(began.is_ok(), "the command never began");
    server.kill().await;
}
