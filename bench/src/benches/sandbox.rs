//! Figure 6: a `Bash` tool call running `true` under `workspace_write`, end to end: from
//! the model's answer asking for the call to the model's next request, which carries the
//! call's result. In between the runtime parses the call, checks the agent's rules
//! (`allow: [Bash]`, so it runs without asking), splits the command line, runs it in the
//! sandbox (bubblewrap, then Landlock and seccomp by the helper), records its events and
//! sends the conversation back to the model.

use std::time::Duration;

use odyssey_client::OdysseyClient;
use odyssey_client::proto::session_event::Payload;
use odyssey_testing::openai_wire::{OpenAiWireServer, Script};

use super::Outcome;
use crate::bundle::{self, Tools};
use crate::daemon::MODEL_KEY;
use crate::env::{self, Env};
use crate::error::{BenchError, ClientContext, Result};
use crate::floors::Floor;
use crate::replies;
use crate::report::{Bound, Figure, Statistic};
use crate::stats::Summary;

/// Turns run first in each session and not measured (the first makes its sandbox cell).
const WARMUP_TURNS: usize = 1;
/// Turns per session: few enough that the history never needs a summary (an extra model
/// call), which would blur the measure.
const TURNS_PER_SESSION: usize = 4;

pub async fn run(env: &Env) -> Result<Outcome> {
    let s = &env.settings;
    let per_turn = s.sandbox_calls_per_turn.max(1);
    let model = env::model(bash_true_script(per_turn)).await?;
    let home = env.home("sandbox")?;
    let args = ["--max-turn-steps".to_owned(), (per_turn + 1).to_string()];
    let daemon = env.daemon(&home, Some(&model), &args).await?;
    let client = daemon.client().await?;
    let bundle = bundle::install(&client, Tools::Bash).await?;
    let BashCalls {
        calls,
        process,
        skipped,
    } = bash_true_calls(&client, &model, &bundle, per_turn, s.sandbox_calls).await?;
    daemon.stop().await?;

    let mut outcome = Outcome::default();
    let p50 = |s: Option<Summary>| s.map_or(f64::NAN, |s| s.p50);
    outcome.notes.push(format!(
        "Of the end-to-end p50 of {:.1} ms, the sandboxed process took {:.0} ms (p50 of \
         exec_command_end's whole milliseconds): bubblewrap making the namespaces (user, \
         pid, ipc, uts, network) and the bind mounts, the helper applying Landlock and \
         seccomp, then bash: three programs started, each as fast as the machine creates \
         processes, which slows down with its load. The rest is the runtime: decoding the \
         call, the permission rule, splitting the command line, the run folder and the \
         process record, five events, and the next model request.",
        p50(Summary::of_millis(&calls)),
        p50(Summary::of(&process)),
    ));
    if skipped > 0 {
        outcome.notes.push(format!(
            "{skipped} turns made more model calls than their tool calls need and were not \
             measured."
        ));
    }
    outcome.figures.push(bash_true_figure(
        "Bash `true` tool call, end to end",
        &calls,
        per_turn,
        "`workspace_write`",
    ));
    outcome.figures.push(
        Figure::new(
            "sandboxed process",
            "ms",
            "duration_ms of each exec_command_end: the sandboxed process alone, from spawn \
             to exit (whole milliseconds)",
        )
        .samples(Summary::of(&process))
        .against(Floor::Bwrap),
    );
    Ok(outcome)
}

/// The model's side of the measure: every answer calls Bash with `true`, `per_turn`
/// times a turn.
pub(super) fn bash_true_script(per_turn: usize) -> Script {
    Script::tool_loop(
        MODEL_KEY,
        "Bash",
        r#"{"command":"true"}"#,
        per_turn,
        replies::short(),
    )
}

/// What `Bash` `true` tool calls measured.
pub(super) struct BashCalls {
    /// End to end, at the model server.
    pub calls: Vec<Duration>,
    /// The sandboxed processes' own durations, in whole milliseconds.
    pub process: Vec<f64>,
    /// Turns left out because they made extra model calls.
    pub skipped: usize,
}

/// Runs turns of `per_turn` Bash `true` calls on `bundle` until `count` calls are
/// measured, fresh sessions now and then (their first turn makes the cell and is not
/// measured).
pub(super) async fn bash_true_calls(
    client: &OdysseyClient,
    model: &OpenAiWireServer,
    bundle: &str,
    per_turn: usize,
    count: usize,
) -> Result<BashCalls> {
    let (mut calls, mut process, mut skipped) = (Vec::new(), Vec::new(), 0);
    let mut session = String::new();
    let mut number = 0;
    while calls.len() < count {
        if number % (WARMUP_TURNS + TURNS_PER_SESSION) == 0 {
            session = bundle::session(client, bundle).await?;
        }
        let measured = number % (WARMUP_TURNS + TURNS_PER_SESSION) >= WARMUP_TURNS;
        number += 1;
        model.take_timings();
        let mut turn = client
            .run_turn(&session, "Run true, repeatedly.", Default::default())
            .await
            .context("run a turn")?;
        let mut exec_ms = Vec::new();
        while let Some(event) = turn.next().await.context("read the turn's events")? {
            match event.payload {
                Some(Payload::ToolCallFinished(done)) if !done.success => {
                    return Err(BenchError::check(format!("Bash failed: {}", done.result)));
                }
                Some(Payload::ExecCommandEnd(end)) => exec_ms.push(end.duration_ms as f64),
                Some(Payload::TurnCompleted(done)) if !done.error.is_empty() => {
                    return Err(BenchError::check(format!(
                        "the turn failed: {}",
                        done.error
                    )));
                }
                _ => {}
            }
        }
        let timings = model.take_timings();
        if exec_ms.len() != per_turn {
            return Err(BenchError::check(format!(
                "a turn ran {} commands, expected {per_turn}",
                exec_ms.len()
            )));
        }
        if timings.len() != per_turn + 1 {
            // A retried or extra model call: the pairs of calls are not tool calls alone.
            skipped += 1;
            continue;
        }
        if measured {
            for pair in timings.windows(2) {
                calls.push(pair[1].received.saturating_duration_since(pair[0].answered));
            }
            process.extend(exec_ms);
        }
    }
    calls.truncate(count);
    Ok(BashCalls {
        calls,
        process,
        skipped,
    })
}

/// A Bash `true` call ÷ bubblewrap running `true` alone, at the p50.
const BASH_LIMIT: f64 = 3.0;

/// The end-to-end figure of Bash `true` calls, with its target (p50 ≤ 3× bare
/// bubblewrap: the helper, bash and the runtime's share on top of one bubblewrap).
pub(super) fn bash_true_figure(
    name: &str,
    calls: &[Duration],
    per_turn: usize,
    sandbox: &str,
) -> Figure {
    Figure::new(
        name,
        "ms",
        format!(
            "at the model server: from the last byte of an answer calling Bash with `true` \
             to the arrival of the next request, carrying its result; {per_turn} calls per \
             turn, session sandbox {sandbox}, the agent allowing Bash"
        ),
    )
    .samples(Summary::of_millis(calls))
    .against(Floor::Bwrap)
    .ratio_target(Statistic::P50, Bound::AtMost, BASH_LIMIT)
}
