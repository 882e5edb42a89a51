//! A server on overlay workspaces killed mid-turn: the restarted server replaces the mount
//! the killed one left, keeps what the interrupted turn wrote (it is in the session's
//! upper folder), and later turn ends make layers a fork can start from.

use std::path::Path;
use std::time::Duration;

use futures::StreamExt;
use odyssey_api::v1 as pb;
use odyssey_testing::openai_wire::{OpenAiWireServer, Reply, Script, StreamBuilder};
use pb::session_event::Payload;
use serde_json::Value;

use crate::support::odysseyd::MODEL_KEY;
use crate::support::{Launch, Odysseyd, create_session, install, last_message, temp_home, turn};

fn bash_call(id: &str, command: &str) -> Reply {
    let arguments = serde_json::json!({ "command": command }).to_string();
    StreamBuilder::new()
        .tool_call(0, id, "Bash", &arguments, 1)
        .finish("tool_calls")
        .done()
        .build()
}

/// Allows every tool call of `session` that waits for a human, until dropped (the Bash
/// calls that write ask first).
fn approver(server: &Odysseyd, session: &str) -> tokio::task::JoinHandle<()> {
    use pb::approval_service_client::ApprovalServiceClient;
    let mut approvals = ApprovalServiceClient::new(server.channel.clone());
    let session = session.to_owned();
    tokio::spawn(async move {
        loop {
            if let Ok(listed) = approvals
                .list_approvals(pb::ListApprovalsRequest {
                    session_id: session.clone(),
                    ..Default::default()
                })
                .await
            {
                for approval in listed.into_inner().approvals {
                    let _ = approvals
                        .resolve_approval(pb::ResolveApprovalRequest {
                            request_id: approval.request_id,
                            decision: pb::ApprovalDecision::AllowOnce as i32,
                            ..Default::default()
                        })
                        .await;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
}

fn model(marker: String) -> impl Fn(&Value) -> Reply + Send + Sync {
    move |request| match last_message(request) {
        (role, _) if role == "tool" => StreamBuilder::new()
            .text("done", 1)
            .finish("stop")
            .done()
            .build(),
        (_, prompt) if prompt == "write, then wait" => bash_call(
            "call_long",
            &format!("echo interrupted > kept.txt && sleep {marker}"),
        ),
        _ => bash_call("call_later", "cat kept.txt && echo later >> kept.txt"),
    }
}

/// The mount points under `home` in the mount namespace of process `pid` ("self": this
/// test's, the host's).
fn mounts_under(home: &Path, pid: &str) -> Vec<String> {
    let home = home.display().to_string();
    std::fs::read_to_string(format!("/proc/{pid}/mountinfo"))
        .expect("mountinfo")
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .filter(|point| point.starts_with(&home))
        .map(str::to_owned)
        .collect()
}

/// `path` as the server sees it: `odysseyd` mounts the workspaces in a mount namespace
/// of its own, which `/proc/<pid>/root` resolves paths in.
fn in_server(server: &Odysseyd, path: &Path) -> std::path::PathBuf {
    Path::new(&format!("/proc/{}/root", server.pid()))
        .join(path.strip_prefix("/").expect("absolute"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_turn_keeps_its_writes_in_an_overlay_workspace_and_later_turns_end_well() {
    let probe = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("probe dir");
    if let Err(e) = odyssey_runtime::snapshot::overlay::probe(probe.path()) {
        assert!(
            std::env::var_os("CI").is_none(),
            "overlays must mount in CI: {e}"
        );
        eprintln!("skipped: overlays do not mount here ({e})");
        return;
    }
    let marker = format!("5.3{}", std::process::id());
    let model = OpenAiWireServer::start(Script::respond(MODEL_KEY, model(marker.clone())))
        .await
        .expect("loopback model");
    let home = temp_home();
    let mut launch = Launch::new(home.path());
    launch.model_url = Some(model.base_url());
    launch.flags = vec!["--snapshot-mechanism".into(), "overlay".into()];
    let server = Odysseyd::start(&launch).await;
    install(&server, crate::support::bundle_archive("layered"))
        .await
        .expect("bundle installs");
    let session = create_session(&server, "layered").await.expect("session");
    let approving = approver(&server, &session);
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
            input: turn(&session, "write, then wait"),
        })
        .await
        .expect("submit")
        .into_inner()
        .execution_id;
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
    let status = server
        .executions()
        .get_execution_status(pb::GetExecutionStatusRequest {
            execution_id: execution,
        })
        .await
        .ok()
        .and_then(|s| s.into_inner().status);
    assert!(
        running.is_ok(),
        "{status:?}: the long command never ran; the model was asked {:?}; the server's log:\n{}",
        model
            .requests()
            .iter()
            .map(last_message)
            .collect::<Vec<_>>(),
        server.log_lines().join("\n")
    );
    drop(events);
    let data = home.path().join("sandbox").join(&session).join("data");
    // The kill lands once the command wrote (it then sleeps).
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !in_server(&server, &data).join("kept.txt").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the command never wrote"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        mounts_under(home.path(), &server.pid().to_string()),
        [data.display().to_string()],
        "the server mounts the workspace in its own namespace"
    );
    assert!(
        mounts_under(home.path(), "self").is_empty(),
        "nothing the server mounts reaches the host"
    );
    approving.abort();
    server.kill().await;
    assert!(
        mounts_under(home.path(), "self").is_empty(),
        "the killed server left no mount on the host"
    );

    let server = Odysseyd::start(&launch).await;
    let approving = approver(&server, &session);
    let done = server
        .executions()
        .run(pb::RunRequest {
            input: turn(&session, "read, then append"),
        })
        .await
        .expect("the next turn runs")
        .into_inner()
        .status
        .expect("status");
    assert_eq!(done.state, pb::ExecutionState::Completed as i32, "{done:?}");
    assert_eq!(
        mounts_under(home.path(), &server.pid().to_string()),
        [data.display().to_string()],
        "the workspace is mounted once"
    );
    assert_eq!(
        std::fs::read_to_string(in_server(&server, &data).join("kept.txt")).expect("kept"),
        "interrupted\nlater\n",
        "what the interrupted turn wrote is kept"
    );
    let forked = server
        .sessions()
        .fork_session(pb::ForkSessionRequest {
            session_id: session.clone(),
            point: Some(pb::fork_session_request::Point::AfterTurn(2)),
        })
        .await
        .expect("a fork from the turn after the restart")
        .into_inner()
        .session
        .expect("session");
    let fork_data = home.path().join("sandbox").join(&forked.id).join("data");
    assert_eq!(
        std::fs::read_to_string(in_server(&server, &fork_data).join("kept.txt")).expect("fork"),
        "interrupted\nlater\n"
    );

    approving.abort();
    server.terminate(Duration::from_secs(30)).await;
    assert!(
        mounts_under(home.path(), "self").is_empty(),
        "no mount reaches the host: {:?}",
        mounts_under(home.path(), "self")
    );
}
