//! A server killed (SIGKILL) while a parent's `Agent` call runs. A sub-agent's session is
//! created without waiting for a sync (its first turn's end makes it durable), so a kill
//! can find a child whose turn has not started, or is running. After the restart: the
//! parent's turn is recorded as interrupted; every child its log names exists, opens and
//! is listed under it; a child whose turn never started is an idle session with an empty
//! log that takes a new turn; a child whose turn ran is closed as interrupted; nothing is
//! quarantined and every log replays without a gap.

use std::time::Duration;

use odyssey_api::v1 as pb;
use odyssey_testing::openai_wire::{OpenAiWireServer, Reply, Script, StreamBuilder};
use pb::session_event::Payload;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;

use crate::support::odysseyd::{MODEL_KEY, lines_with};
use crate::support::{Launch, Odysseyd, check_log, install, last_message, replay, temp_home, turn};

const BUNDLE: &str = "delegating";
const DELEGATE: &str = "delegate the task";
const BLOCK: &str = "block the worker";
const TASK: &str = "the child's task";
const INTERRUPTED: i32 = pb::TurnOutcome::Interrupted as i32;

/// `main` delegates to `helper`; both may run Bash.
fn bundle() -> Vec<u8> {
    let manifest = format!(
        "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: {BUNDLE}\n  \
         version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      \
         default: true\n    - id: helper\n      spec: agents/helper/agent.yaml\n  tools:\n    \
         - {{ name: Agent, source: builtin }}\n    - {{ name: Bash, source: builtin }}\n  \
         sandbox:\n    mode: workspace_write\n"
    );
    let agent = |id: &str, tail: &str| {
        format!(
            "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: {id}\n  version: 0.1.0\n\
             spec:\n  kind: prompt\n  prompt: You are a test agent.\n  model:\n    provider: \
             openai\n    name: gpt-faults\n{tail}"
        )
    };
    let files = [
        ("odyssey.bundle.yaml", manifest),
        (
            "agents/main/agent.yaml",
            agent(
                "main",
                "  delegates: [helper]\n  tools:\n    allow: [Agent, Bash]\n",
            ),
        ),
        (
            "agents/helper/agent.yaml",
            agent("helper", "  tools:\n    allow: [Bash]\n"),
        ),
    ];
    crate::support::pack(files.iter().map(|(path, text)| (*path, text.as_str())))
}

fn call(id: &str, tool: &str, arguments: Value) -> Reply {
    StreamBuilder::new()
        .tool_call(0, id, tool, &arguments.to_string(), 1)
        .finish("tool_calls")
        .done()
        .build()
}

/// `DELEGATE` gets an `Agent` call whose task is `TASK`; `TASK` and `BLOCK` get a Bash
/// `sleep` (named by `marker`); a tool's result, or any other prompt, an answer.
fn model(marker: String) -> impl Fn(&Value) -> Reply + Send + Sync {
    move |request| match last_message(request) {
        (role, _) if role == "tool" => StreamBuilder::new()
            .text("Done.", 1)
            .finish("stop")
            .done()
            .build(),
        (_, prompt) if prompt == DELEGATE => call(
            "call_agent",
            "Agent",
            serde_json::json!({ "agent": "helper", "prompt": TASK }),
        ),
        (_, prompt) if prompt == TASK || prompt == BLOCK => call(
            "call_sleep",
            "Bash",
            serde_json::json!({ "command": format!("sleep {marker}") }),
        ),
        _ => StreamBuilder::new()
            .text("Hello.", 1)
            .finish("stop")
            .done()
            .build(),
    }
}

async fn create(server: &Odysseyd) -> String {
    server
        .sessions()
        .create_session(pb::CreateSessionRequest {
            bundle_reference: BUNDLE.into(),
            ..Default::default()
        })
        .await
        .expect("session")
        .into_inner()
        .session
        .expect("a session")
        .id
}

async fn session(server: &Odysseyd, id: &str) -> Result<pb::Session, String> {
    server
        .sessions()
        .get_session(pb::GetSessionRequest {
            session_id: id.into(),
        })
        .await
        .map(|r| r.into_inner().session.unwrap_or_default())
        .map_err(|e| format!("{id} does not open: {e}"))
}

async fn children(server: &Odysseyd, parent: &str) -> Vec<pb::Session> {
    server
        .sessions()
        .list_sessions(pb::ListSessionsRequest {
            page_size: 100,
            parent_session_id: parent.into(),
            ..Default::default()
        })
        .await
        .expect("list children")
        .into_inner()
        .sessions
}

/// Checks a session's whole log; answers its turns' outcomes and the children its
/// `subagent_started` events name.
async fn verified(server: &Odysseyd, id: &str) -> Result<(Vec<i32>, Vec<String>), String> {
    let info = session(server, id).await?;
    let events = replay(server, id, info.last_sequence, Duration::from_secs(10)).await?;
    let outcomes = check_log(id, &events)?;
    let named = events
        .iter()
        .filter_map(|e| match &e.payload {
            Some(Payload::SubagentStarted(started)) => Some(started.child_session_id.clone()),
            _ => None,
        })
        .collect();
    Ok((outcomes, named))
}

/// What a restarted server shows of a parent and its children; answers the children
/// (id, last sequence, turn outcomes).
async fn check_family(
    server: &Odysseyd,
    parent: &str,
) -> Result<Vec<(String, u64, Vec<i32>)>, String> {
    let (outcomes, named) = verified(server, parent).await?;
    // A kill before the parent's turn started leaves it none.
    if !matches!(outcomes.as_slice(), [] | [INTERRUPTED]) {
        return Err(format!("{parent}: the killed turn ended {outcomes:?}"));
    }
    let listed: Vec<String> = children(server, parent)
        .await
        .into_iter()
        .map(|c| c.id)
        .collect();
    let mut family = Vec::new();
    for child in &listed {
        let info = session(server, child).await?;
        if info.parent_session_id != parent {
            return Err(format!("{child}: parent {:?}", info.parent_session_id));
        }
        let (outcomes, _) = verified(server, child).await?;
        if outcomes
            .iter()
            .any(|o| *o != INTERRUPTED && *o != pb::TurnOutcome::Completed as i32)
        {
            return Err(format!("{child}: turns ended {outcomes:?}"));
        }
        family.push((child.clone(), info.last_sequence, outcomes));
    }
    for child in &named {
        if !listed.contains(child) {
            return Err(format!(
                "{parent} names child {child}, which is not listed under it ({listed:?})"
            ));
        }
    }
    Ok(family)
}

async fn wait_for<T>(what: &str, mut probe: impl AsyncFnMut() -> Option<T>) -> T {
    for _ in 0..300 {
        if let Some(found) = probe().await {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_whose_turn_never_started_is_an_idle_session_after_a_kill() {
    // `sleep 7.3<pid>` names this test's sandboxed processes.
    let marker = format!("7.3{}", std::process::id());
    let model = OpenAiWireServer::start(Script::respond(MODEL_KEY, model(marker)))
        .await
        .expect("loopback model");
    let home = temp_home();
    let mut launch = Launch::new(home.path());
    launch.model_url = Some(model.base_url());
    // One worker: the parent gives it back while it waits for its child, and the turn
    // queued before the child's takes it and sleeps, so the child's turn never starts.
    launch.flags = vec!["--worker-count".into(), "1".into()];
    let server = Odysseyd::start(&launch).await;
    install(&server, bundle()).await.expect("bundle installs");
    let parent = create(&server).await;
    let blocker = create(&server).await;
    for (session, prompt) in [(&parent, DELEGATE), (&blocker, BLOCK)] {
        server
            .executions()
            .submit(pb::SubmitRequest {
                input: turn(session, prompt),
            })
            .await
            .expect("submit");
    }
    let child = wait_for("the child session", async || {
        children(&server, &parent).await.into_iter().next()
    })
    .await;
    wait_for("the blocking turn's command", async || {
        let info = session(&server, &blocker).await.ok()?;
        let events = replay(
            &server,
            &blocker,
            info.last_sequence,
            Duration::from_secs(5),
        )
        .await
        .ok()?;
        events
            .iter()
            .any(|e| matches!(e.payload, Some(Payload::ExecCommandBegin(_))))
            .then_some(())
    })
    .await;
    let before = session(&server, &child.id).await.expect("child");
    assert_eq!(before.last_sequence, 0, "the child's turn has not started");
    server.kill().await;

    let server = Odysseyd::start(&launch).await;
    let family = check_family(&server, &parent)
        .await
        .unwrap_or_else(|e| panic!("{e}\nserver log:\n{}", server.log_lines().join("\n")));
    let (ended, _) = verified(&server, &parent).await.expect("parent");
    assert_eq!(ended, [INTERRUPTED], "the parent's turn");
    assert_eq!(
        family,
        [(child.id.clone(), 0, Vec::new())],
        "the child is there, with no turn"
    );
    let (blocked, _) = verified(&server, &blocker).await.expect("blocker");
    assert_eq!(blocked, [INTERRUPTED]);
    let after = session(&server, &child.id).await.expect("child");
    assert_eq!(after.state, pb::SessionState::Idle as i32);
    assert_eq!(after.agent_id, "helper");

    // It is an ordinary session: it takes a turn.
    let ran = server
        .executions()
        .run(pb::RunRequest {
            input: turn(&child.id, "hello"),
        })
        .await
        .expect("the child takes a turn")
        .into_inner();
    assert_eq!(
        ran.status.map(|s| s.state),
        Some(pb::ExecutionState::Completed as i32)
    );
    assert_eq!(lines_with(&server.log_lines(), "quarantine"), 0);
    server.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_around_agent_calls_leaves_every_child_whole() {
    let seed = std::env::var("ODYSSEY_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random::<u64>);
    eprintln!("sub-agent crash seed: {seed} (replay with ODYSSEY_CRASH_SEED={seed})");
    let mut rng = StdRng::seed_from_u64(seed);
    // `sleep 0.2<pid>` sleeps about 0.2 s and names this test's sandboxed processes.
    let marker = format!("0.2{}", std::process::id());
    let model = OpenAiWireServer::start(Script::respond(MODEL_KEY, model(marker)))
        .await
        .expect("loopback model");
    let home = temp_home();
    let mut launch = Launch::new(home.path());
    launch.model_url = Some(model.base_url());
    let mut server = Odysseyd::start(&launch).await;
    install(&server, bundle()).await.expect("bundle installs");
    let mut parents = Vec::new();
    let (mut without_turn, mut mid_turn) = (0, 0);
    for round in 0..8 {
        let parent = create(&server).await;
        server
            .executions()
            .submit(pb::SubmitRequest {
                input: turn(&parent, DELEGATE),
            })
            .await
            .expect("submit");
        // The child is created within a few milliseconds; its sleep ends after 0.2 s.
        tokio::time::sleep(Duration::from_millis(rng.random_range(0..150))).await;
        server.kill().await;
        server = Odysseyd::start(&launch).await;
        parents.push(parent);
        for parent in &parents {
            let family = check_family(&server, parent).await.unwrap_or_else(|e| {
                panic!(
                    "seed {seed}, round {round}: {e}\nserver log:\n{}",
                    server.log_lines().join("\n")
                )
            });
            if parent == parents.last().expect("a parent") {
                for (_, last, outcomes) in &family {
                    match (last, outcomes.as_slice()) {
                        (0, []) => without_turn += 1,
                        (_, [INTERRUPTED]) => mid_turn += 1,
                        _ => {}
                    }
                }
            }
        }
        assert_eq!(
            lines_with(&server.log_lines(), "quarantine"),
            0,
            "seed {seed}, round {round}"
        );
    }
    eprintln!(
        "sub-agent crash: {without_turn} children killed before their turn, {mid_turn} during it"
    );
    server.kill().await;
}
