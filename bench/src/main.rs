//! `odyssey-bench`: measures a real `odysseyd` against Odyssey's performance targets and
//! writes `bench/REPORT.md` and `bench/report.json`.
//!
//! ```text
//! cargo run --release -p odyssey-bench -- all            # every benchmark, then the report
//! cargo run --release -p odyssey-bench -- quick          # archives, egress, sandbox, overhead: < 60 s
//! cargo run --release -p odyssey-bench -- overhead       # one benchmark, printed only
//! cargo run --release -p odyssey-bench -- all --compare /tmp/other/report.json
//! scripts/test-postgres cargo run --release -p odyssey-bench -- scale --report bench/scale
//! ```
//!
//! Each benchmark starts its own `odysseyd` (the workspace's release binary, built first
//! only when its sources are newer, unless `--odysseyd` names one) as a child process with
//! a fresh home in a temporary folder, on a free loopback port, with a loopback model
//! server speaking the OpenAI chat-completions wire format in this process, and drives it
//! through `odyssey-client`. Benchmarks run in interleaved rounds (round 1 of each, then
//! round 2 of each, ...), each between two measurements of the floors (`floors.rs`).
//! Children and temporary folders go away however the run ends (the daemons die with the
//! harness).
//!
//! `scale` also measures replicas sharing a PostgreSQL database (`--database-url`, else
//! `ODYSSEY_BENCH_DATABASE_URL` or `ODYSSEY_TEST_DATABASE_URL`): each cluster of replicas in a
//! database of its own, created and dropped by the run; without one, its PostgreSQL figures
//! are reported as not measured.

mod benches;
mod binaries;
mod bundle;
mod child;
mod daemon;
mod database;
mod echo;
mod env;
mod error;
mod floors;
mod follow;
mod machine;
mod model_server;
mod replies;
mod report;
mod settings;
mod stats;
mod turn;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;

use benches::Which;
use env::Env;
use error::Result;
use floors::FloorKit;
use report::{BenchResult, Report, Round};
use settings::Settings;

/// Benchmarks a real odysseyd against Odyssey's performance targets.
#[derive(Parser)]
#[command(name = "odyssey-bench")]
struct Cli {
    /// The benchmark to run (`quick`: archives, egress, sandbox and overhead at small
    /// sizes, in under a minute).
    #[arg(value_enum, default_value = "all")]
    which: Which,
    #[command(flatten)]
    settings: Settings,
    /// Rounds of each benchmark, interleaved with the others'.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..))]
    rounds: u16,
    /// Where to write REPORT.md and report.json [default: this crate's folder for `all`;
    /// no report otherwise].
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
    /// Another run's report.json: the report says which verdicts differ from it.
    #[arg(long, value_name = "FILE")]
    compare: Option<PathBuf>,
    /// What else the machine was doing, for the report ("a cargo build", "quiet").
    #[arg(long, value_name = "TEXT")]
    conditions: Option<String>,
    /// The odysseyd to measure, with odyssey-sandbox beside it [default: the workspace's
    /// target/release/odysseyd, built first only when older than its sources].
    #[arg(long, value_name = "FILE")]
    odysseyd: Option<PathBuf>,
    /// The folder temporary homes are made in [default: the system's temporary folder].
    #[arg(long, value_name = "DIR")]
    tmp: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> ExitCode {
    // The floors' echo server runs in a child process of the harness.
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some(echo::ECHO_SERVER_ARG) {
        let events = args.next().and_then(|n| n.parse().ok()).unwrap_or(0);
        if let Err(e) = echo::serve(events).await {
            eprintln!("odyssey-bench echo server: {e}");
            return ExitCode::FAILURE;
        }
        return ExitCode::SUCCESS;
    }
    // So do the model servers of `turn-cost`.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(model_server::MODEL_SERVER_ARG) {
        if let Err(e) = model_server::serve(&args[1..]).await {
            eprintln!("odyssey-bench model server: {e}");
            return ExitCode::FAILURE;
        }
        return ExitCode::SUCCESS;
    }
    let cli = Cli::parse();
    tokio::select! {
        result = run(cli) => match result {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::FAILURE,
            Err(e) => {
                eprintln!("odyssey-bench: {e}");
                ExitCode::FAILURE
            }
        },
        // Dropping the run kills the daemons and removes the temporary folders.
        _ = tokio::signal::ctrl_c() => {
            eprintln!("odyssey-bench: interrupted");
            ExitCode::FAILURE
        }
    }
}

/// Runs the benchmarks; `Ok(false)` when a round of one of them could not run to its end.
async fn run(cli: Cli) -> Result<bool> {
    if cfg!(debug_assertions) {
        eprintln!(
            "odyssey-bench: this harness is a debug build; its client and model server are \
             slower than in a release build (cargo run --release -p odyssey-bench)"
        );
    }
    let started_at = utc_now();
    let load_at_start = machine::load_average();
    let (binary, origin) = match cli.odysseyd {
        Some(path) => (path, "given with --odysseyd".to_owned()),
        None => binaries::release_odysseyd()?,
    };
    let measured = binaries::describe(&binary, origin);
    eprintln!(
        "odyssey-bench: measuring {} ({}, {}{}; {})",
        measured.odysseyd.path.display(),
        measured.version,
        measured.commit.as_deref().unwrap_or("no commit"),
        if measured.dirty { ", dirty" } else { "" },
        measured.origin
    );
    let settings = match cli.which {
        Which::Quick => cli.settings.quick(),
        _ => cli.settings,
    };
    let tmp_parent = cli.tmp.unwrap_or_else(std::env::temp_dir);
    let env = Env::new(binary.clone(), settings.clone(), &tmp_parent)?;
    let machine = machine::Machine::probe(env.tmp());
    let kit = FloorKit::new(env.tmp(), &binary.with_file_name("odyssey-sandbox")).await?;
    let selected = cli.which.each();
    let rounds = usize::from(cli.rounds);
    let mut all_rounds: Vec<Vec<Round>> = vec![Vec::new(); selected.len()];
    for round in 1..=rounds {
        for (i, which) in selected.iter().enumerate() {
            eprintln!(
                "odyssey-bench: {} ({}), round {round} of {rounds}",
                which.name(),
                which.title()
            );
            let result = measure(*which, &env, &kit, round).await;
            print_round(&result);
            all_rounds[i].push(result);
        }
    }
    let results: Vec<BenchResult> = selected
        .iter()
        .zip(all_rounds)
        .map(|(which, rounds)| BenchResult::new(which.name(), which.title(), rounds))
        .collect();
    print_summary(&results);
    let all_ran = results.iter().all(|r| r.failed_rounds() == 0);
    let report_dir = cli
        .report
        .or_else(|| (cli.which == Which::All).then(|| PathBuf::from(env!("CARGO_MANIFEST_DIR"))));
    if let Some(dir) = report_dir {
        let mut report = Report {
            generated_at: started_at,
            command: std::env::args()
                .skip(1)
                .map(|arg| match arg.split_once('=') {
                    Some((flag, value)) if flag.starts_with("--") => {
                        format!("{flag}={}", database::redact(value))
                    }
                    _ => database::redact(&arg),
                })
                .collect::<Vec<_>>()
                .join(" "),
            conditions: cli.conditions,
            load_at_start,
            load_at_end: machine::load_average(),
            rounds,
            machine,
            measured,
            settings,
            benchmarks: results,
            comparison: None,
        };
        if let Some(other) = &cli.compare {
            // A comparison that cannot be made loses nothing of this run.
            if let Err(e) = report.compare_with(other) {
                eprintln!("odyssey-bench: no comparison: {e}");
            }
            if let Some(c) = &report.comparison {
                eprintln!(
                    "odyssey-bench: against {}: {} of {} verdicts differ",
                    other.display(),
                    c.differ.len(),
                    c.verdicts
                );
                for d in &c.differ {
                    eprintln!("  {d}");
                }
            }
        }
        report.write(&dir)?;
        eprintln!("odyssey-bench: wrote {}", dir.join("REPORT.md").display());
    }
    Ok(all_ran)
}

/// One round of one benchmark, between two measurements of the floors.
async fn measure(which: Which, env: &Env, kit: &FloorKit, round: usize) -> Round {
    let concurrent = which.needs_concurrent_floor();
    let floors_before = kit.measure(concurrent).await;
    let load_before = machine::load_average();
    let started = Instant::now();
    let outcome = which.run(env).await;
    let seconds = started.elapsed().as_secs_f64();
    let load_after = machine::load_average();
    let floors_after = kit.measure(concurrent).await;
    let (figures, notes, error) = match outcome {
        Ok(outcome) => (outcome.figures, outcome.notes, None),
        Err(e) => (Vec::new(), Vec::new(), Some(e.to_string())),
    };
    Round {
        round,
        floors_before,
        floors_after,
        figures,
        notes,
        load_before,
        load_after,
        seconds,
        error,
    }
}

fn print_round(round: &Round) {
    if let Some(error) = &round.error {
        eprintln!("  failed: {error}");
    }
    for figure in &round.figures {
        let statistic = figure.headline();
        let shown = figure
            .stat(statistic)
            .map_or_else(|| "—".to_owned(), report::number);
        let ratio = figure
            .floor
            .and_then(|floor| Some((floor, round.floor(floor, statistic)?)))
            .map(|(floor, value)| {
                format!(
                    " (floor {} {}, {}×)",
                    report::number(value),
                    floor.unit(),
                    figure
                        .stat(statistic)
                        .map_or_else(|| "—".to_owned(), |v| report::number(v / value))
                )
            })
            .unwrap_or_default();
        eprintln!("  {}: {shown} {}{ratio}", figure.name, figure.unit);
    }
    eprintln!("  ({:.1} s)", round.seconds);
}

fn print_summary(results: &[BenchResult]) {
    eprintln!("odyssey-bench: verdicts on the median round");
    for bench in results {
        for figure in &bench.figures {
            for check in &figure.checks {
                let median = check
                    .measured
                    .median
                    .map_or_else(|| "—".to_owned(), report::number);
                let spread = check
                    .measured
                    .spread
                    .map_or_else(String::new, |s| format!(", spread {:.0} %", s * 100.0));
                eprintln!(
                    "  {} / {}: {median}{} (limit {}{spread}) {}{}",
                    bench.name,
                    figure.name,
                    if check.ratio { "×" } else { "" },
                    report::number(check.limit),
                    if check.met { "met" } else { "MISSED" },
                    if check.measured.unsteady {
                        " UNSTEADY"
                    } else {
                        ""
                    }
                );
            }
        }
    }
}

/// `YYYY-MM-DD HH:MM UTC`.
fn utc_now() -> String {
    chrono::Utc::now().format("%Y-%m-%d %H:%M UTC").to_string()
}
