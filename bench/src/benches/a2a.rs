//! What the A2A gRPC binding adds to a turn: the same turn (one model call, no tools) sent
//! as A2A `SendMessage` (the `lf.a2a.v1` client generated from the project's protos, on
//! the same port) and as Odyssey's own `Run`, in interleaved pairs on one daemon with one
//! model server, each measured as its runtime overhead (the client's wall time less the
//! model server's time on the call). A sample is the pair's difference.

use std::path::Path;
use std::time::{Duration, Instant};

use odyssey_api::a2a::v1 as a2a;
use odyssey_api::a2a::v1::a2a_service_client::A2aServiceClient;
use odyssey_client::OdysseyClient;
use odyssey_testing::openai_wire::{OpenAiWireServer, Script};
use tonic::transport::Channel;

use super::Outcome;
use crate::bundle::{self, Tools};
use crate::daemon::MODEL_KEY;
use crate::env::{self, Env};
use crate::error::{BenchError, ClientContext, Result};
use crate::floors::Floor;
use crate::machine::filesystem_of;
use crate::replies;
use crate::report::{Bound, Figure, Statistic};
use crate::stats::Summary;
use crate::turn;

/// The target: what the A2A path adds to a turn, at the p50, in milliseconds.
const P50_LIMIT_MS: f64 = 0.5;
/// Turns of each path in a session before the next sessions are used.
const TURNS_PER_SESSION: usize = 16;
/// Where a home on memory (no disk under the log) can go, when the machine has it.
const MEMORY_FS: &str = "/dev/shm";

/// What one run measured, per pair.
struct Samples {
    run: Vec<Duration>,
    send: Vec<Duration>,
    /// Milliseconds, negative when the A2A turn was the faster.
    added: Vec<f64>,
}

pub async fn run(env: &Env) -> Result<Outcome> {
    let home = env.home("a2a")?;
    let disk = measure(env, &home).await?;
    let mut outcome = Outcome::default();
    outcome.figures.push(
        Figure::new(
            "A2A SendMessage overhead beyond Run",
            "ms",
            "per pair: the runtime overhead of a turn sent as A2A SendMessage over gRPC \
             (tenant and contextId naming an open session; the answer is the task with its \
             history and artifact, read from the session's log) less that of the same turn \
             through Run, the two interleaved on one daemon and one model server",
        )
        .samples(Summary::of(&disk.added))
        .against(Floor::Unary)
        .target(Statistic::P50, Bound::AtMost, P50_LIMIT_MS),
    );
    for (name, definition, samples) in [
        (
            "A2A SendMessage turn, overhead",
            "SendMessage's wall time less the model server's time on the one call",
            &disk.send,
        ),
        (
            "Run turn, overhead",
            "Run's wall time less the model server's time on the one call",
            &disk.run,
        ),
    ] {
        outcome.figures.push(
            Figure::new(name, "ms", definition)
                .samples(Summary::of_millis(samples))
                .against(Floor::Unary),
        );
    }
    if filesystem_of(Path::new(MEMORY_FS)).starts_with("tmpfs") {
        let parent = tempfile::Builder::new()
            .prefix("odyssey-bench-")
            .tempdir_in(MEMORY_FS)
            .map_err(|e| BenchError::io("create a folder in", MEMORY_FS, e))?;
        let home = env.home_in(Some(parent.path()), "a2a-tmpfs")?;
        let memory = measure(env, &home).await?;
        outcome.figures.push(
            Figure::new(
                "A2A SendMessage overhead beyond Run, home on tmpfs",
                "ms",
                "as `A2A SendMessage overhead beyond Run`, with the home on tmpfs: the \
                 binding's own work, the syncs of both turns costing next to nothing",
            )
            .samples(Summary::of(&memory.added))
            .against(Floor::Unary),
        );
    }
    outcome.notes.push(
        "Both paths run the same turn in the runtime; what SendMessage adds is checking the \
         message and tenant, looking up the session's agent, and, once the turn ended, \
         reading the turn's events back from the session's log to build the task (history \
         and artifact), which Run does not do: it answers the execution's status. The pair's \
         order alternates, so neither path always runs first."
            .to_owned(),
    );
    Ok(outcome)
}

/// Runs the warm-up and measured pairs on a daemon with `home`.
async fn measure(env: &Env, home: &crate::env::Home) -> Result<Samples> {
    let turns = env.settings.a2a_turns.max(1);
    let warmup = (turns / 10).max(5);
    let model = env::model(Script::repeat(MODEL_KEY, replies::short())).await?;
    let daemon = env.daemon(home, Some(&model), &[]).await?;
    let client = daemon.client().await?;
    let bundle = bundle::install(&client, Tools::None).await?;
    let tenant = format!("{bundle}.main");
    let mut a2a = A2aServiceClient::connect(daemon.url().to_owned())
        .await
        .map_err(|e| BenchError::check(format!("connect the A2A client: {e}")))?;

    let mut samples = Samples {
        run: Vec::with_capacity(turns),
        send: Vec::with_capacity(turns),
        added: Vec::with_capacity(turns),
    };
    let (mut run_session, mut a2a_session) = (String::new(), String::new());
    for i in 0..warmup + turns {
        if i % TURNS_PER_SESSION == 0 {
            run_session = bundle::session(&client, &bundle).await?;
            a2a_session = bundle::session(&client, &bundle).await?;
        }
        let (through_run, through_a2a) = if i % 2 == 0 {
            let r = run_turn(&client, &model, &run_session).await?;
            (
                r,
                send_turn(&mut a2a, &model, &tenant, &a2a_session, i).await?,
            )
        } else {
            let a = send_turn(&mut a2a, &model, &tenant, &a2a_session, i).await?;
            (run_turn(&client, &model, &run_session).await?, a)
        };
        if i >= warmup {
            samples.run.push(through_run);
            samples.send.push(through_a2a);
            samples
                .added
                .push(millis(through_a2a) - millis(through_run));
        }
    }
    daemon.stop().await?;
    Ok(samples)
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// One turn through Run: its runtime overhead.
async fn run_turn(
    client: &OdysseyClient,
    model: &OpenAiWireServer,
    session: &str,
) -> Result<Duration> {
    model.take_timings();
    let run = turn::run(client, session, "What is the answer?").await?;
    one_call(model, run.wall)
}

/// One turn sent as A2A SendMessage on the session `context`: its runtime overhead.
async fn send_turn(
    a2a: &mut A2aServiceClient<Channel>,
    model: &OpenAiWireServer,
    tenant: &str,
    context: &str,
    i: usize,
) -> Result<Duration> {
    let request = a2a::SendMessageRequest {
        tenant: tenant.to_owned(),
        message: Some(a2a::Message {
            message_id: format!("bench-{i}"),
            context_id: context.to_owned(),
            role: a2a::Role::User as i32,
            parts: vec![a2a::Part {
                content: Some(a2a::part::Content::Text("What is the answer?".into())),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    model.take_timings();
    let started = Instant::now();
    let response = a2a.send_message(request).await.context("SendMessage")?;
    let wall = started.elapsed();
    let task = match response.into_inner().payload {
        Some(a2a::send_message_response::Payload::Task(task)) => task,
        other => {
            return Err(BenchError::check(format!(
                "SendMessage answered {other:?} instead of a task"
            )));
        }
    };
    let state = task.status.as_ref().map(|s| s.state);
    if state != Some(a2a::TaskState::Completed as i32) {
        return Err(BenchError::check(format!(
            "task {} ended in state {state:?}",
            task.id
        )));
    }
    one_call(model, wall)
}

/// `wall` less the model server's time on the turn's one call.
fn one_call(model: &OpenAiWireServer, wall: Duration) -> Result<Duration> {
    let timings = model.take_timings();
    if timings.len() != 1 {
        return Err(BenchError::check(format!(
            "a turn made {} model calls instead of one",
            timings.len()
        )));
    }
    Ok(turn::overhead(wall, &timings))
}
