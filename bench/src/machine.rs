//! The machine a report was measured on, and how busy it was.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::stats::Summary;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Machine {
    pub cpu: String,
    /// Logical CPUs this process may run on.
    pub cores: usize,
    pub kernel: String,
    pub memory_mib: u64,
    /// The filesystem of the temporary homes (from `/proc/mounts`).
    pub tmp_filesystem: String,
}

impl Machine {
    pub fn probe(tmp: &Path) -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .and_then(|rest| rest.split_once(':'))
            .map_or_else(|| "unknown".to_owned(), |(_, name)| name.trim().to_owned());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory_kib = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
        Self {
            cpu,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map_or_else(|_| "unknown".to_owned(), |k| k.trim().to_owned()),
            memory_mib: memory_kib / 1024,
            tmp_filesystem: filesystem_of(tmp),
        }
    }
}

/// The 1, 5 and 15 minute load averages.
pub fn load_average() -> [f64; 3] {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut fields = text.split_whitespace().map(|f| f.parse().unwrap_or(0.0));
    [
        fields.next().unwrap_or(0.0),
        fields.next().unwrap_or(0.0),
        fields.next().unwrap_or(0.0),
    ]
}

/// `type (device) at mount point` of the mount holding `path`: the longest mount point
/// that is a prefix of it.
pub fn filesystem_of(path: &Path) -> String {
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    mounts
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (device, at, kind) = (fields.next()?, fields.next()?, fields.next()?);
            path.starts_with(at)
                .then(|| (at.len(), format!("{kind} ({device}) at {at}")))
        })
        .max_by_key(|(len, _)| *len)
        .map_or_else(|| "unknown".to_owned(), |(_, fs)| fs)
}

/// `fdatasync` after a 256-byte append in `dir`, `rounds` times, in ms.
pub fn fdatasync_latency(dir: &Path, rounds: usize) -> Option<Summary> {
    let mut file = tempfile::tempfile_in(dir).ok()?;
    let line = [b'x'; 256];
    let mut times: Vec<Duration> = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        file.write_all(&line).ok()?;
        let started = Instant::now();
        file.sync_data().ok()?;
        times.push(started.elapsed());
    }
    Summary::of_millis(&times)
}

/// Starting `/bin/true` and waiting for it, `rounds` times, in ms.
pub fn process_start(rounds: usize) -> Option<Summary> {
    let mut times: Vec<Duration> = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        let status = std::process::Command::new("/bin/true").status().ok()?;
        times.push(started.elapsed());
        if !status.success() {
            return None;
        }
    }
    Summary::of_millis(&times)
}
