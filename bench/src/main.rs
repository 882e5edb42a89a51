//! `odyssey-bench`: measures a real `odysseyd` against Odyssey's performance targets and
//! writes `bench/REPORT.md` and `bench/report.json`.
//!
//! ```text
//! cargo run --release -p odyssey-bench -- all            # every benchmark, then the report
//! cargo run --release -p odyssey-bench -- overhead       # one benchmark, printed only
//! cargo run --release -p odyssey-bench -- throughput --sessions 32 --report /tmp/r
//! ```
//!
//! Each benchmark starts its own `odysseyd` (the release binary, built first unless
//! `--odysseyd` names one) as a child process with a fresh home in a temporary folder, on
//! a free loopback port, with a loopback model server speaking the OpenAI chat-completions
//! wire format in this process, and drives it through `odyssey-client`. Children and
//! temporary folders go away however the run ends (the daemons die with the harness).

mod benches;
mod bundle;
mod daemon;
mod env;
mod error;
mod follow;
mod machine;
mod replies;
mod report;
mod settings;
mod stats;
mod turn;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;

use benches::Which;
use env::Env;
use error::{BenchError, Result};
use report::{BenchResult, Report};
use settings::Settings;

/// Benchmarks a real odysseyd against Odyssey's performance targets.
#[derive(Parser)]
#[command(name = "odyssey-bench")]
struct Cli {
    /// The benchmark to run.
    #[arg(value_enum, default_value = "all")]
    which: Which,
    #[command(flatten)]
    settings: Settings,
    /// Where to write REPORT.md and report.json [default: this crate's folder for `all`;
    /// no report for a single benchmark].
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
    /// The odysseyd to measure, with odyssey-sandbox beside it [default: the workspace's
    /// target/release/odysseyd, built first].
    #[arg(long, value_name = "FILE")]
    odysseyd: Option<PathBuf>,
    /// The folder temporary homes are made in [default: the system's temporary folder].
    #[arg(long, value_name = "DIR")]
    tmp: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> ExitCode {
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

/// Runs the benchmarks; `Ok(false)` when one of them could not run to its end.
async fn run(cli: Cli) -> Result<bool> {
    if cfg!(debug_assertions) {
        eprintln!(
            "odyssey-bench: this harness is a debug build; its client and model server are \
             slower than in a release build (cargo run --release -p odyssey-bench)"
        );
    }
    let binary = match cli.odysseyd {
        Some(path) => path,
        None => build_odysseyd()?,
    };
    let tmp_parent = cli.tmp.unwrap_or_else(std::env::temp_dir);
    let env = Env::new(binary.clone(), cli.settings.clone(), &tmp_parent)?;
    let machine = machine::Machine::probe(env.tmp());
    let selected: Vec<Which> = match cli.which {
        Which::All => Which::EACH.to_vec(),
        one => vec![one],
    };
    let mut results = Vec::new();
    for which in selected {
        eprintln!("odyssey-bench: {} ({})", which.name(), which.title());
        let result = measure(which, &env).await;
        print_result(&result);
        results.push(result);
    }
    let all_ran = results.iter().all(|r| r.error.is_none());
    let report_dir = cli
        .report
        .or_else(|| (cli.which == Which::All).then(|| PathBuf::from(env!("CARGO_MANIFEST_DIR"))));
    if let Some(dir) = report_dir {
        let report = Report {
            generated_at: utc_now(),
            command: std::env::args().skip(1).collect::<Vec<_>>().join(" "),
            machine,
            odysseyd: describe_binary(&binary),
            settings: cli.settings,
            benchmarks: results,
        };
        report.write(&dir)?;
        eprintln!("odyssey-bench: wrote {}", dir.join("REPORT.md").display());
    }
    Ok(all_ran)
}

async fn measure(which: Which, env: &Env) -> BenchResult {
    let load_before = machine::load_average();
    let started = Instant::now();
    let outcome = which.run(env).await;
    let seconds = started.elapsed().as_secs_f64();
    let (figures, notes, error) = match outcome {
        Ok(outcome) => (outcome.figures, outcome.notes, None),
        Err(e) => (Vec::new(), Vec::new(), Some(e.to_string())),
    };
    BenchResult {
        name: which.name().to_owned(),
        title: which.title().to_owned(),
        figures,
        notes,
        load_before,
        load_after: machine::load_average(),
        seconds,
        error,
    }
}

fn print_result(result: &BenchResult) {
    if let Some(error) = &result.error {
        eprintln!("  failed: {error}");
    }
    for figure in &result.figures {
        let shown = match (&figure.summary, figure.value) {
            (_, Some(value)) => report::number(value),
            (Some(s), None) => format!(
                "p50 {} p95 {} p99 {}",
                report::number(s.p50),
                report::number(s.p95),
                report::number(s.p99)
            ),
            (None, None) => "—".to_owned(),
        };
        let verdict: Vec<&str> = figure
            .checks
            .iter()
            .map(|c| if c.met { "met" } else { "MISSED" })
            .collect();
        eprintln!(
            "  {}: {shown} {} {}",
            figure.name,
            figure.unit,
            verdict.join(", ")
        );
    }
    eprintln!("  ({:.1} s)", result.seconds);
}

/// Builds the release odysseyd and sandbox helper of this workspace; returns odysseyd.
fn build_odysseyd() -> Result<PathBuf> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or_else(|| BenchError::Build("no workspace above the bench crate".into()))?;
    // This binary is <target>/<profile>/odyssey-bench: build into the same target folder.
    let exe = std::env::current_exe().map_err(|e| BenchError::io("locate", "odyssey-bench", e))?;
    let target = exe
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| BenchError::Build(format!("no target folder above {}", exe.display())))?
        .to_path_buf();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!("odyssey-bench: building the release odysseyd and odyssey-sandbox");
    let status = std::process::Command::new(cargo)
        .args(["build", "--release", "--locked", "-p", "odyssey-server"])
        .args([
            "--bin",
            "odysseyd",
            "--bin",
            "odyssey-sandbox",
            "--target-dir",
        ])
        .arg(&target)
        .current_dir(workspace)
        .status()
        .map_err(|e| BenchError::Build(e.to_string()))?;
    if !status.success() {
        return Err(BenchError::Build(format!(
            "cargo build ended with {status}"
        )));
    }
    Ok(target.join("release").join("odysseyd"))
}

/// The binary's path, version and (when in a git checkout) commit.
fn describe_binary(binary: &Path) -> String {
    let version = std::process::Command::new(binary)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    let mut text = version;
    if let Some(commit) = commit {
        text.push_str(&format!(" (commit {commit})"));
    }
    text
}

/// `YYYY-MM-DD HH:MM UTC`.
fn utc_now() -> String {
    chrono::Utc::now().format("%Y-%m-%d %H:%M UTC").to_string()
}
