//! What a sub-agent call adds beyond the child's turn itself: a parent turn that calls the
//! `Agent` tool once, less the same parent turn with a trivial tool (`UpdatePlan`) in its
//! place, less a turn of the child agent run on its own. Each of the three is measured as
//! its runtime overhead (the client's wall time of `Run` less the model server's time on
//! the turn's calls), interleaved, so each sample's neighbours share the machine's load.

use std::path::Path;
use std::time::Duration;

use odyssey_client::{OdysseyClient, SessionOptions, pack_files};
use odyssey_testing::openai_wire::{OpenAiWireServer, Script};

use super::Outcome;
use crate::bundle::MODEL;
use crate::daemon::MODEL_KEY;
use crate::env::{self, Env};
use crate::error::{BenchError, ClientContext, Result};
use crate::floors::Floor;
use crate::machine::filesystem_of;
use crate::replies;
use crate::report::{Bound, Figure, Statistic};
use crate::stats::Summary;
use crate::turn;

/// The target: a sub-agent call's own cost, at the p50, in milliseconds.
const P50_LIMIT_MS: f64 = 1.0;
/// Turns of each kind in a session before the next session is used.
const TURNS_PER_SESSION: usize = 16;

const BUNDLE: &str = "bench-delegate";
/// Where a home on memory (no disk under the log) can go, when the machine has it.
const MEMORY_FS: &str = "/dev/shm";

/// What one run measured, per sample.
struct Samples {
    parent: Vec<Duration>,
    child: Vec<Duration>,
    baseline: Vec<Duration>,
    call: Vec<Duration>,
}

pub async fn run(env: &Env) -> Result<Outcome> {
    let home = env.home("subagents")?;
    let plain_home = env.home("subagents-plain")?;
    let Samples {
        parent,
        child,
        baseline,
        call,
    } = measure(env, &home, &plain_home).await?;
    let mut outcome = Outcome::default();
    outcome.figures.push(
        Figure::new(
            "sub-agent call overhead",
            "ms",
            "per sample: the runtime overhead of a parent turn that calls `Agent` once \
             (three model calls: the parent's two, the child's one), less that of the same \
             turn calling `UpdatePlan` instead (two model calls), less that of a turn of the \
             child agent alone (one model call): creating the child session, queueing and \
             running its turn beside the parent's, and the parent's log records",
        )
        .samples(Summary::of_millis(&call))
        .against(Floor::Unary)
        .target(Statistic::P50, Bound::AtMost, P50_LIMIT_MS),
    );
    for (name, definition, samples) in [
        (
            "parent turn with an Agent call, overhead",
            "Run's wall time less the model server's time on the three calls",
            &parent,
        ),
        (
            "parent turn with an UpdatePlan call, overhead",
            "Run's wall time less the model server's time on the two calls",
            &baseline,
        ),
        (
            "child agent's turn alone, overhead",
            "Run's wall time less the model server's time on the one call",
            &child,
        ),
    ] {
        outcome.figures.push(
            Figure::new(name, "ms", definition)
                .samples(Summary::of_millis(samples))
                .against(Floor::Unary),
        );
    }
    // The same samples with the homes on memory: what the runtime itself adds, syncs
    // costing next to nothing.
    if filesystem_of(Path::new(MEMORY_FS)).starts_with("tmpfs") {
        let parent_dir = tempfile::Builder::new()
            .prefix("odyssey-bench-")
            .tempdir_in(MEMORY_FS)
            .map_err(|e| BenchError::io("create a folder in", MEMORY_FS, e))?;
        let home = env.home_in(Some(parent_dir.path()), "subagents-tmpfs")?;
        let plain_home = env.home_in(Some(parent_dir.path()), "subagents-plain-tmpfs")?;
        let memory = measure(env, &home, &plain_home).await?;
        outcome.figures.push(
            Figure::new(
                "sub-agent call overhead, homes on tmpfs",
                "ms",
                "as `sub-agent call overhead`, with the homes on tmpfs: the runtime's own \
                 work, syncs and new inodes costing next to nothing",
            )
            .samples(Summary::of_millis(&memory.call))
            .against(Floor::Unary),
        );
    }
    outcome.notes.push(
        "The child's turn alone is run through `Run` by the client, so it includes one \
         client round trip that the child of an `Agent` call does not make (it is queued \
         in the server): the sub-agent figure is low by about one bare unary call. The \
         child session's creation is made durable beside its turn and with its turn's end \
         (its record, its folder and the sessions folder synced together), not before the \
         turn starts; what a disk still adds is the child's new inodes (its session \
         folder, its sandbox cell with the bundle staged into it, its first snapshot's \
         folders), which the child's turn alone, on a session that has run turns before, \
         does not create (compare the tmpfs figure)."
            .to_owned(),
    );
    Ok(outcome)
}

/// Runs the warm-up and measured samples on two daemons with these homes.
async fn measure(
    env: &Env,
    home: &crate::env::Home,
    plain_home: &crate::env::Home,
) -> Result<Samples> {
    let turns = env.settings.subagent_turns.max(1);
    let warmup = (turns / 10).max(5);
    // One server delegates (the parent calls `Agent` once, the child, offered no tools,
    // answers at once); the other has the parent call `UpdatePlan` instead.
    let delegating = env::model(Script::tool_loop(
        MODEL_KEY,
        "Agent",
        r#"{"agent": "helper", "prompt": "Answer briefly."}"#,
        1,
        replies::short(),
    ))
    .await?;
    let planning = env::model(Script::tool_loop(
        MODEL_KEY,
        "UpdatePlan",
        r#"{"steps": [{"text": "answer", "status": "completed"}]}"#,
        1,
        replies::short(),
    ))
    .await?;
    let daemon = env.daemon(home, Some(&delegating), &[]).await?;
    let plain = env.daemon(plain_home, Some(&planning), &[]).await?;
    let client = daemon.client().await?;
    let plain_client = plain.client().await?;
    install(&client).await?;
    install(&plain_client).await?;

    let mut samples = Samples {
        parent: Vec::with_capacity(turns),
        child: Vec::with_capacity(turns),
        baseline: Vec::with_capacity(turns),
        call: Vec::with_capacity(turns),
    };
    let mut sessions = Sessions::default();
    for i in 0..warmup + turns {
        if i % TURNS_PER_SESSION == 0 {
            sessions = Sessions {
                parent: session(&client, "main").await?,
                child: session(&client, "helper").await?,
                baseline: session(&plain_client, "main").await?,
            };
        }
        let with_agent = overhead(&client, &delegating, &sessions.parent, 3).await?;
        let alone = overhead(&client, &delegating, &sessions.child, 1).await?;
        let with_plan = overhead(&plain_client, &planning, &sessions.baseline, 2).await?;
        if i >= warmup {
            samples.parent.push(with_agent);
            samples.child.push(alone);
            samples.baseline.push(with_plan);
            samples
                .call
                .push(with_agent.saturating_sub(with_plan).saturating_sub(alone));
        }
    }
    daemon.stop().await?;
    plain.stop().await?;
    Ok(samples)
}

#[derive(Default)]
struct Sessions {
    parent: String,
    child: String,
    baseline: String,
}

/// One completed turn's runtime overhead; fails unless the model served `calls` calls.
async fn overhead(
    client: &OdysseyClient,
    model: &OpenAiWireServer,
    session: &str,
    calls: usize,
) -> Result<Duration> {
    model.take_timings();
    let run = turn::run(client, session, "What is the answer?").await?;
    let timings = model.take_timings();
    if timings.len() != calls {
        return Err(BenchError::check(format!(
            "a turn made {} model calls instead of {calls}",
            timings.len()
        )));
    }
    Ok(turn::overhead(run.wall, &timings))
}

/// The bundle: `main` delegates to `helper` and may call `Agent` and `UpdatePlan`;
/// `helper` is offered no tool at all.
async fn install(client: &OdysseyClient) -> Result<()> {
    let manifest = format!(
        "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: {BUNDLE}\n  \
         version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      \
         default: true\n    - id: helper\n      spec: agents/helper/agent.yaml\n  tools:\n    \
         - {{ name: Agent, source: builtin }}\n    - {{ name: UpdatePlan, source: builtin }}\n  \
         sandbox:\n    mode: workspace_write\n"
    );
    let agent = |id: &str, tail: &str| {
        format!(
            "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: {id}\n  version: 0.1.0\n\
             spec:\n  kind: prompt\n  prompt: You are a benchmark agent. Answer briefly.\n  \
             model:\n    provider: openai\n    name: {MODEL}\n{tail}"
        )
    };
    let main = agent(
        "main",
        "  delegates: [helper]\n  tools:\n    allow: [Agent, UpdatePlan]\n",
    );
    let helper = agent("helper", "  tools:\n    deny: [UpdatePlan]\n");
    let archive = pack_files(&[
        ("odyssey.bundle.yaml", manifest.as_bytes()),
        ("agents/main/agent.yaml", main.as_bytes()),
        ("agents/helper/agent.yaml", helper.as_bytes()),
    ])
    .context("pack the sub-agent benchmark bundle")?;
    client
        .build_bundle(archive, "", false)
        .await
        .context("install the sub-agent benchmark bundle")?;
    Ok(())
}

async fn session(client: &OdysseyClient, agent: &str) -> Result<String> {
    let options = SessionOptions {
        agent_id: Some(agent.to_owned()),
        ..SessionOptions::default()
    };
    let session = client
        .create_session(BUNDLE, options)
        .await
        .context("create a session")?;
    Ok(session.id)
}
