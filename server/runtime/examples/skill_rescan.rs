//! Measures what operator skill roots cost a turn: a root of N skills (default 1000, each
//! SKILL.md about 2 KB) is scanned once, then checked for changes with nothing changed, and
//! with one skill edited. Prints the wall time of a check and the SKILL.md files it read.
//!
//! Run it with `cargo run -p odyssey-server --release --example skill_rescan [N]`.

use std::error::Error;
use std::time::{Duration, Instant};

use odyssey_runtime::skills::ServerSkills;

/// Checks timed per case, averaged.
const CHECKS: u32 = 50;

fn main() -> Result<(), Box<dyn Error>> {
    let count: usize = std::env::args()
        .nth(1)
        .map(|n| n.parse())
        .transpose()?
        .unwrap_or(1000);
    let root = tempfile::tempdir()?;
    let body = "Step.\n".repeat(330);
    for i in 0..count {
        let dir = root.path().join(format!("skill-{i}"));
        std::fs::create_dir_all(&dir)?;
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: skill-{i}\ndescription: Does task {i}.\n---\n{body}"),
        )?;
    }
    let skills = ServerSkills::new(vec![root.path().to_path_buf()], Duration::ZERO);

    let started = Instant::now();
    let found = skills.current().len();
    report("first scan", started.elapsed(), skills.files_read(), found);

    // Stamps younger than a couple of seconds are not trusted (coarse timestamps); wait
    // until the files are old enough, as they are in steady state.
    std::thread::sleep(Duration::from_millis(2500));
    skills.current();

    let read_before = skills.files_read();
    let started = Instant::now();
    for _ in 0..CHECKS {
        skills.current();
    }
    report(
        "check, nothing changed",
        started.elapsed() / CHECKS,
        (skills.files_read() - read_before) / u64::from(CHECKS),
        found,
    );

    let edited = root.path().join("skill-0/SKILL.md");
    let read_before = skills.files_read();
    let mut total = Duration::ZERO;
    for i in 0..CHECKS {
        std::fs::write(&edited, format!("---\ndescription: Edit {i}.\n---\n{body}"))?;
        let started = Instant::now();
        skills.current();
        total += started.elapsed();
    }
    report(
        "check, one skill edited",
        total / CHECKS,
        (skills.files_read() - read_before) / u64::from(CHECKS),
        found,
    );
    Ok(())
}

fn report(case: &str, took: Duration, reads: u64, skills: usize) {
    println!("{case:<24} {skills} skills  {took:>10.3?} per check  SKILL.md files read: {reads}");
}
