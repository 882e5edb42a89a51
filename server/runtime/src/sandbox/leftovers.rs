//! Process groups that outlive the server.
//!
//! Every sandboxed process group is recorded while it runs as
//! `<sandbox root>/.running/<exec_id>`, holding its pgid and the start time of its leader
//! (from `/proc/<pid>/stat`). A server that crashed leaves records behind; the next one
//! kills those groups at startup. The start time is what makes this safe: a pid reused by
//! an unrelated process has another start time and is never signalled.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::error::SandboxError;

/// The folder of running-group records inside the sandbox root.
pub const RUNNING_DIR: &str = ".running";
/// How long `kill_leftovers` waits for a killed group to disappear.
const REAP_WAIT: Duration = Duration::from_secs(2);
const REAP_POLL: Duration = Duration::from_millis(20);

/// What `kill_leftovers` found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeftoverReport {
    /// Groups still running from a previous server, now killed.
    pub killed: Vec<String>,
    /// Records whose group had already ended (or whose pid now belongs to another process).
    pub stale: usize,
}

/// The record of one running group; removed when dropped.
#[derive(Debug)]
pub(crate) struct GroupRecord {
    path: PathBuf,
}

impl GroupRecord {
    /// Records group `pgid` (whose leader is the process `pgid`) under `exec_id`.
    pub(crate) fn create(
        sandbox_root: &Path,
        exec_id: &str,
        pgid: i32,
    ) -> Result<Self, SandboxError> {
        let dir = sandbox_root.join(RUNNING_DIR);
        create_private_dir(&dir)?;
        let start = start_time(pgid).ok_or_else(|| {
            SandboxError::io(
                format!("reading the start time of process {pgid}"),
                io::Error::from(io::ErrorKind::NotFound),
            )
        })?;
        let path = dir.join(exec_id);
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| match e.kind() {
                io::ErrorKind::AlreadyExists => SandboxError::AlreadyRunning {
                    exec_id: exec_id.to_owned(),
                },
                _ => SandboxError::io(format!("recording {}", path.display()), e),
            })?;
        let record = Self { path };
        file.write_all(format!("{pgid} {start}\n").as_bytes())
            .map_err(|e| SandboxError::io(format!("recording {}", record.path.display()), e))?;
        Ok(record)
    }
}

impl Drop for GroupRecord {
    fn drop(&mut self) {
        if let Err(e) = fs::remove_file(&self.path)
            && e.kind() != io::ErrorKind::NotFound
        {
            tracing::warn!(path = %self.path.display(), error = %e, "removing a process record");
        }
    }
}

fn create_private_dir(dir: &Path) -> Result<(), SandboxError> {
    use std::os::unix::fs::DirBuilderExt;
    match fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Ok(()) => Ok(()),
        Err(e) => Err(SandboxError::io(format!("creating {}", dir.display()), e)),
    }
}

/// Kills the process groups recorded under `sandbox_root` by a previous server, waits for
/// them to go away, and clears the records.
pub async fn kill_leftovers(sandbox_root: &Path) -> Result<LeftoverReport, SandboxError> {
    let dir = sandbox_root.join(RUNNING_DIR);
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(LeftoverReport::default()),
        Err(e) => return Err(SandboxError::io(format!("listing {}", dir.display()), e)),
    };
    let mut report = LeftoverReport::default();
    let mut killed_groups = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| SandboxError::io(format!("listing {}", dir.display()), e))?;
        let path = entry.path();
        let record = fs::read_to_string(&path)
            .ok()
            .and_then(|text| parse_record(&text));
        match record {
            Some((pgid, start)) if group_is_ours(pgid, start) => {
                // The group was verified to be ours.
                if let Some(group) = rustix::process::Pid::from_raw(pgid) {
                    let _ =
                        rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
                }
                killed_groups.push(pgid);
                report
                    .killed
                    .push(entry.file_name().to_string_lossy().into_owned());
            }
            _ => report.stale += 1,
        }
        if let Err(e) = fs::remove_file(&path) {
            tracing::warn!(path = %path.display(), error = %e, "removing a leftover record");
        }
    }
    let deadline = tokio::time::Instant::now() + REAP_WAIT;
    while killed_groups
        .iter()
        .any(|&pgid| !group_members(pgid).is_empty())
        && tokio::time::Instant::now() < deadline
    {
        tokio::time::sleep(REAP_POLL).await;
    }
    for pgid in killed_groups {
        let alive = group_members(pgid);
        if !alive.is_empty() {
            tracing::warn!(
                pgid,
                ?alive,
                "leftover sandbox processes did not exit after SIGKILL"
            );
        }
    }
    Ok(report)
}

fn parse_record(text: &str) -> Option<(i32, u64)> {
    let mut parts = text.split_whitespace();
    let pgid = parts.next()?.parse::<i32>().ok().filter(|&p| p > 1)?;
    let start = parts.next()?.parse().ok()?;
    Some((pgid, start))
}

/// Whether group `pgid` still runs and is the one recorded.
///
/// If the leader still exists, its start time decides. If it is gone while processes of
/// group `pgid` remain, they are the recorded group's: the kernel does not hand out a pid
/// still in use as a process group id, so no new group `pgid` can exist beside them. Their
/// start times are still checked against the leader's as a second guard.
fn group_is_ours(pgid: i32, recorded_start: u64) -> bool {
    match stat_of(pgid) {
        Some(leader) => leader.start == recorded_start && leader.state != 'Z',
        None => {
            let members = group_members(pgid);
            !members.is_empty()
                && members
                    .iter()
                    .all(|&pid| stat_of(pid).is_some_and(|s| s.start >= recorded_start))
        }
    }
}

/// Live (non-zombie) processes whose process group is `pgid`.
fn group_members(pgid: i32) -> Vec<i32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| stat_of(pid).is_some_and(|s| s.pgrp == pgid && s.state != 'Z'))
        .collect()
}

/// The start time (clock ticks since boot) of process `pid`.
pub(crate) fn start_time(pid: i32) -> Option<u64> {
    stat_of(pid).map(|s| s.start)
}

struct ProcStat {
    state: char,
    pgrp: i32,
    start: u64,
}

fn stat_of(pid: i32) -> Option<ProcStat> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// Fields after the command name, which is in parentheses and may itself contain spaces
/// and parentheses (hence the last `)`): state is field 3, pgrp field 5, starttime 22.
fn parse_stat(text: &str) -> Option<ProcStat> {
    let after = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    Some(ProcStat {
        state: fields.first()?.chars().next()?,
        pgrp: fields.get(2)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_command_names_parse() {
        let line = "4242 (a) b (c)) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 \
                    987654 1000 100 18446744073709551615";
        let stat = parse_stat(line).expect("parses");
        assert_eq!(stat.state, 'S');
        assert_eq!(stat.pgrp, 4242);
        assert_eq!(stat.start, 987654);
    }

    #[test]
    fn records_parse_and_refuse_garbage() {
        assert_eq!(parse_record("123 456\n"), Some((123, 456)));
        assert_eq!(parse_record("1 456"), None);
        assert_eq!(parse_record("abc 1"), None);
        assert_eq!(parse_record(""), None);
    }

    #[test]
    fn our_own_process_reads_back() {
        let pid = i32::try_from(std::process::id()).expect("pid fits");
        let start = start_time(pid).expect("own stat");
        assert!(stat_of(pid).is_some_and(|s| s.start == start));
    }

    #[tokio::test]
    async fn records_of_reused_pids_are_only_cleared() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join(RUNNING_DIR);
        std::fs::create_dir_all(&dir).expect("mkdir");
        // Our own pid with a start time that is not ours: must not be signalled.
        let pid = std::process::id();
        std::fs::write(dir.join("reused"), format!("{pid} 1\n")).expect("write");
        std::fs::write(dir.join("garbage"), "nonsense").expect("write");
        let report = kill_leftovers(root.path()).await.expect("kill_leftovers");
        assert_eq!(report.killed, Vec::<String>::new());
        assert_eq!(report.stale, 2);
        assert_eq!(std::fs::read_dir(&dir).expect("list").count(), 0);
    }
}
