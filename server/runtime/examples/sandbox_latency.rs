//! Measures what the sandbox adds to a command: runs `true` N times (default 50) under
//! `workspace_write` and prints the p50, p90 and max wall time, beside `danger_full_access`
//! for comparison.
//!
//! Run it with `cargo build -p odyssey-server --bin odyssey-sandbox && cargo run -p
//! odyssey-server --release --example sandbox_latency [N]` (the helper is found beside the
//! example's folder, or through `ODYSSEY_SANDBOX_HELPER`).

use std::collections::BTreeMap;
use std::error::Error;
use std::time::{Duration, Instant};

use odyssey_runtime::policy::SandboxMode;
use odyssey_runtime::sandbox::{AppSource, ExecRequest, Sandbox, SandboxSettings};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let runs: usize = std::env::args()
        .nth(1)
        .map(|n| n.parse())
        .transpose()?
        .unwrap_or(50);
    let home = tempfile::tempdir()?;
    let app = home.path().join("app-source");
    std::fs::create_dir_all(&app)?;
    let sandbox = Sandbox::new(SandboxSettings::default());
    let cell = sandbox.prepare_cell(
        &home.path().join("sandbox"),
        Uuid::new_v4(),
        AppSource {
            root: &app,
            digest: "latency",
        },
    )?;
    for mode in [SandboxMode::WorkspaceWrite, SandboxMode::DangerFullAccess] {
        let mut times = Vec::with_capacity(runs);
        for i in 0..runs {
            let request = ExecRequest {
                exec_id: format!("latency-{i}"),
                argv: vec!["true".into()],
                cwd: cell.data.clone(),
                mode,
                env: BTreeMap::new(),
                network: None,
                mounts_read: Vec::new(),
                mounts_write: Vec::new(),
                timeout: Duration::from_secs(10),
                memory_mb: None,
                cpu_seconds: None,
            };
            let started = Instant::now();
            let outcome = sandbox
                .run(&cell, request, |_, _| {}, CancellationToken::new())
                .await?;
            times.push(started.elapsed());
            if outcome.exit_code != 0 {
                return Err(format!("`true` failed under {mode}: {outcome:?}").into());
            }
        }
        times.sort();
        let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
        println!(
            "{mode}: {runs} runs of `true`: p50 {:.1} ms, p90 {:.1} ms, max {:.1} ms",
            at(0.5).as_secs_f64() * 1e3,
            at(0.9).as_secs_f64() * 1e3,
            at(1.0).as_secs_f64() * 1e3,
        );
    }
    Ok(())
}
