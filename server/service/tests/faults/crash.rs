//! Crash test: turns run in a child `odysseyd` that is killed with SIGKILL at seeded random
//! points, most of them inside a turn (the model streaming slowly, a Bash call sleeping,
//! events being appended), and restarted on the same home. After every restart: every
//! session opens; its log replays from 0 with sequences 1, 2, 3… and no turn left open;
//! everything that was in the log before is still there, byte for byte (completed turns
//! and their records intact); and a turn the kill caught is recorded as interrupted.
//!
//! The seed is printed; `ODYSSEY_CRASH_SEED=<seed>` replays the same kill points and
//! prompts (timing still varies a little from run to run).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use odyssey_api::v1 as pb;
use odyssey_testing::openai_wire::{OpenAiWireServer, Reply, Script};
use pb::session_event::Payload;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::support::odysseyd::{MODEL_KEY, lines_with};
use crate::support::{
    Launch, Odysseyd, check_log, create_session, install, last_message, procfs, replay, slow_text,
    slow_tool_call, temp_home, turn,
};

/// Kills in all; at least `MID_TURN` of them must catch a turn running.
const KILLS: usize = 60;
const MID_TURN: usize = 20;
const SESSIONS: usize = 3;
/// The longest wait before a kill: a turn takes 0.3 to 0.9 s, so most kills land inside
/// one and some between turns.
const MAX_KILL_DELAY_MS: u64 = 900;
/// How often a restart is itself killed before it serves (while it repairs).
const KILL_AT_STARTUP: f64 = 0.1;

const INTERRUPTED_ERROR: &str = "the server stopped while this turn was running";

/// The model: a prompt asking for the tool gets a Bash call (sleeping, so kills land in
/// it); a tool result, or any other prompt, gets a slowly streamed answer.
fn model(marker: String) -> impl Fn(&serde_json::Value) -> Reply + Send + Sync {
    move |request| {
        let pause = Duration::from_millis(15);
        match last_message(request) {
            (role, _) if role == "tool" => slow_text(
                "The command finished and printed done, which is what we wanted to see here.",
                12,
                pause,
            ),
            (_, prompt) if prompt.contains("tool") => {
                slow_tool_call(&format!("sleep {marker} && echo done"), pause)
            }
            _ => slow_text(
                "Once upon a time a server was killed in the middle of a sentence and came back to finish nothing, but it remembered every word it had written.",
                20,
                pause,
            ),
        }
    }
}

/// Where the kills landed.
#[derive(Debug, Default)]
struct Tally {
    kills: usize,
    /// Kills that caught at least one turn running.
    mid_turn: usize,
    /// Interrupted turns by the last event before their end.
    mid_stream: usize,
    mid_tool: usize,
    /// Torn last lines cut off at restart (a kill during an append).
    torn_tails: usize,
    startup_kills: usize,
    turns_completed: usize,
    turns_interrupted: usize,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_random_points_never_loses_a_completed_turn() {
    let seed = std::env::var("ODYSSEY_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random::<u64>);
    eprintln!("crash test seed: {seed} (replay with ODYSSEY_CRASH_SEED={seed})");
    let mut rng = StdRng::seed_from_u64(seed);

    // `sleep 0.31<pid>` sleeps about 0.3 s and names this test's sandboxed processes
    // (the other tests of this process use other digits after `0.`).
    let marker = format!("0.31{}", std::process::id());
    let model = OpenAiWireServer::start(Script::respond(MODEL_KEY, model(marker.clone())))
        .await
        .expect("loopback model");
    let home = temp_home();
    let mut launch = Launch::new(home.path());
    launch.model_url = Some(model.base_url());
    launch.flags = vec!["--worker-count".into(), SESSIONS.to_string()];

    let mut server = Odysseyd::start(&launch).await;
    install(&server, crate::support::bundle_archive("crashy"))
        .await
        .expect("bundle installs");
    let mut sessions = Vec::new();
    for _ in 0..SESSIONS {
        sessions.push(create_session(&server, "crashy").await.expect("session"));
    }

    let started = Instant::now();
    let mut tally = Tally::default();
    // Each session's log as last verified: it may only grow.
    let mut verified: HashMap<String, Vec<pb::SessionEvent>> = HashMap::new();
    for round in 0..KILLS {
        for session in &sessions {
            let prompt = if rng.random_bool(0.5) {
                "use the tool, then tell me"
            } else {
                "tell me a story"
            };
            server
                .executions()
                .submit(pb::SubmitRequest {
                    input: turn(session, prompt),
                })
                .await
                .unwrap_or_else(|e| panic!("seed {seed}, round {round}: submit: {e}"));
        }
        tokio::time::sleep(Duration::from_millis(
            rng.random_range(0..MAX_KILL_DELAY_MS),
        ))
        .await;
        server.kill().await;
        tally.kills += 1;

        if rng.random_bool(KILL_AT_STARTUP) {
            let mut early = Odysseyd::spawn_only(&launch);
            tokio::time::sleep(Duration::from_millis(rng.random_range(0..60))).await;
            early.start_kill().expect("SIGKILL at startup");
            early.wait().await.expect("reaped");
            tally.startup_kills += 1;
        }
        server = Odysseyd::start(&launch).await;
        let before = tally.turns_interrupted;
        for session in &sessions {
            verify(&server, session, &mut verified, &mut tally)
                .await
                .unwrap_or_else(|e| {
                    panic!(
                        "seed {seed}, round {round}: {e}\nserver log:\n{}",
                        server.log_lines().join("\n")
                    )
                });
        }
        if tally.turns_interrupted > before {
            tally.mid_turn += 1;
        }
        tally.torn_tails += lines_with(&server.log_lines(), "cut a torn last event off the log");
    }
    let elapsed = started.elapsed();
    server.kill().await;
    eprintln!("crash test: {tally:?} in {elapsed:?}");

    assert!(
        tally.mid_turn >= MID_TURN,
        "seed {seed}: only {} of {} kills caught a turn running: {tally:?}",
        tally.mid_turn,
        tally.kills
    );
    assert!(
        tally.mid_tool > 0 && tally.mid_stream > 0,
        "seed {seed}: kills landed both in tool calls and in model streams: {tally:?}"
    );
    assert!(tally.turns_completed > 0, "some turns completed: {tally:?}");
    // The sandboxed `sleep`s of killed servers are gone too.
    let mut left = procfs::processes_with(&marker);
    for _ in 0..50 {
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = procfs::processes_with(&marker);
    }
    assert!(
        left.is_empty(),
        "sandboxed processes outlived their server: {left:?}"
    );
}

/// Opens a session on the restarted server and checks its whole log against what was
/// verified before the kill; counts the turns that ended since.
async fn verify(
    server: &Odysseyd,
    session_id: &str,
    verified: &mut HashMap<String, Vec<pb::SessionEvent>>,
    tally: &mut Tally,
) -> Result<(), String> {
    let info = server
        .sessions()
        .get_session(pb::GetSessionRequest {
            session_id: session_id.into(),
        })
        .await
        .map_err(|e| format!("{session_id} does not open: {e}"))?
        .into_inner()
        .session
        .ok_or("no session in the response")?;
    let events = replay(
        server,
        session_id,
        info.last_sequence,
        Duration::from_secs(10),
    )
    .await?;
    if events.len() as u64 != info.last_sequence {
        return Err(format!(
            "{session_id}: replayed {} events, the session says {}",
            events.len(),
            info.last_sequence
        ));
    }
    let outcomes = check_log(session_id, &events)?;
    if info.turn_count != outcomes.len() as u64 {
        return Err(format!(
            "{session_id}: turn_count {} but {} turns in the log",
            info.turn_count,
            outcomes.len()
        ));
    }
    let previous = verified.remove(session_id).unwrap_or_default();
    if events.len() < previous.len() || events[..previous.len()] != previous[..] {
        let first_change = previous
            .iter()
            .zip(&events)
            .position(|(a, b)| a != b)
            .unwrap_or(events.len());
        return Err(format!(
            "{session_id}: the log changed at event {} (of {} verified before)",
            first_change + 1,
            previous.len()
        ));
    }
    for (i, event) in events.iter().enumerate().skip(previous.len()) {
        let Some(Payload::TurnCompleted(done)) = &event.payload else {
            continue;
        };
        if done.outcome == pb::TurnOutcome::Interrupted as i32 {
            if done.error != INTERRUPTED_ERROR {
                return Err(format!(
                    "{session_id} event {}: interrupted with `{}`",
                    event.sequence, done.error
                ));
            }
            tally.turns_interrupted += 1;
            match events
                .get(i.wrapping_sub(1))
                .and_then(|e| e.payload.as_ref())
            {
                Some(
                    Payload::ToolCallStarted(_)
                    | Payload::ExecCommandBegin(_)
                    | Payload::ExecCommandOutputDelta(_)
                    | Payload::ExecCommandEnd(_)
                    | Payload::ToolCallFinished(_),
                ) => tally.mid_tool += 1,
                _ => tally.mid_stream += 1,
            }
        } else if done.outcome == pb::TurnOutcome::Completed as i32 {
            tally.turns_completed += 1;
        } else {
            return Err(format!(
                "{session_id} event {}: turn ended {:?}: {}",
                event.sequence, done.outcome, done.error
            ));
        }
    }
    verified.insert(session_id.to_owned(), events);
    Ok(())
}
