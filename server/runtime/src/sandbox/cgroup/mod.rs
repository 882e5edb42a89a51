//! One control group per session: every process of a session's cell runs in it, so the
//! session's memory and process count are limited for all of its processes together,
//! whatever they are and however many commands started them.
//!
//! Session groups live beneath the server's own cgroup ([`discover`]), in a folder per
//! server home, `odyssey-<tag>/<session>` (the tag is a digest of the home's sandbox
//! folder, so servers sharing a cgroup never touch each other's groups). A group is made
//! when its cell first runs a process and removed with the cell; the groups a previous
//! server left behind are removed at startup, after its leftover processes were killed,
//! and a sandbox that is dropped removes the groups it made.
//!
//! A process enters its group between `fork` and `exec` (see
//! [`super::process::spawn`]): the server opens the group's membership file beforehand and
//! the child writes `0` (itself) to it, so it is counted before it can fork. On v1 that
//! file is `tasks`, which moves one thread: the child has only the one, and moving the
//! calling thread alone spares the kernel's global threadgroup lock, whose every write
//! waits for an RCU grace period (about 7 ms per hierarchy here, measured, against 0.1 ms).
//! v2 has no such file across resource domains, so there it is `cgroup.procs` (a hierarchy
//! mounted with `favordynmods` makes that cheap too).
//!
//! cgroupfs is not visible inside the sandbox and its folders belong to the server, so no
//! sandboxed process can change these paths: plain path-based calls are safe here.

mod discover;

use std::collections::HashSet;
use std::fs;
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::error::SandboxError;
use discover::{Hierarchy, discovered};

/// How long removing a group waits for its killed processes to exit.
const EMPTY_WAIT: Duration = Duration::from_secs(5);
const EMPTY_POLL: Duration = Duration::from_millis(10);

/// A cgroup hierarchy's version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CgroupVersion {
    V1,
    V2,
}

impl CgroupVersion {
    pub fn number(self) -> u32 {
        match self {
            Self::V1 => 1,
            Self::V2 => 2,
        }
    }
}

/// The controllers session groups use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Controller {
    Memory,
    Pids,
}

impl Controller {
    fn name(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Pids => "pids",
        }
    }
}

/// The names of the controllers that are there.
pub(crate) fn controller_names(memory: bool, pids: bool) -> Vec<&'static str> {
    [(memory, Controller::Memory), (pids, Controller::Pids)]
        .into_iter()
        .filter(|(has, _)| *has)
        .map(|(_, c)| c.name())
        .collect()
}

/// What one session's group is held to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GroupLimits {
    /// Bytes of memory (and no swap) for the whole session; `None`: unlimited.
    pub memory_bytes: Option<u64>,
    /// Processes and threads of the whole session.
    pub processes: u64,
}

/// The session groups of one sandbox.
#[derive(Debug)]
pub(crate) struct SessionCgroups {
    hierarchies: Vec<Hierarchy>,
    notes: Vec<String>,
    /// The groups made since start, as (sandbox root, session), removed on drop.
    made: Mutex<HashSet<(PathBuf, String)>>,
}

impl SessionCgroups {
    /// The host's usable hierarchies, or none when `enabled` is false (the operator's
    /// `sandbox.cgroups = false`).
    pub(crate) fn new(enabled: bool) -> Self {
        let found = discovered();
        Self {
            hierarchies: if enabled {
                found.hierarchies.clone()
            } else {
                Vec::new()
            },
            notes: if enabled {
                found.notes.clone()
            } else {
                vec!["per-session cgroups are turned off (sandbox.cgroups = false)".to_owned()]
            },
            made: Mutex::default(),
        }
    }

    /// The version of the hierarchy that limits sessions' `controller`, if any does.
    pub(crate) fn version_of(&self, controller: Controller) -> Option<CgroupVersion> {
        self.hierarchy_with(controller).map(|h| h.version)
    }

    /// Why a hierarchy the host has is not used.
    pub(crate) fn notes(&self) -> &[String] {
        &self.notes
    }

    fn hierarchy_with(&self, controller: Controller) -> Option<&Hierarchy> {
        self.hierarchies.iter().find(|h| h.has(controller))
    }

    fn made(&self) -> MutexGuard<'_, HashSet<(PathBuf, String)>> {
        crate::sync::lock(&self.made)
    }

    /// Makes (or reuses) the group of `session`, sets its limits, and opens the
    /// membership files (`tasks` on v1, `cgroup.procs` on v2) a new process writes itself
    /// into. Empty when no hierarchy is used.
    pub(crate) fn enter(
        &self,
        sandbox_root: &Path,
        session: &str,
        limits: GroupLimits,
    ) -> Result<Vec<OwnedFd>, SandboxError> {
        if self.hierarchies.is_empty() {
            return Ok(Vec::new());
        }
        check_name(session)?;
        self.made()
            .insert((sandbox_root.to_path_buf(), session.to_owned()));
        self.hierarchies
            .iter()
            .map(|h| enter_one(h, &group_dir(h, sandbox_root), session, limits))
            .collect()
    }

    /// The folders of `session`'s group that exist, one per hierarchy.
    pub(crate) fn dirs(&self, sandbox_root: &Path, session: &str) -> Vec<PathBuf> {
        self.hierarchies
            .iter()
            .map(|h| group_dir(h, sandbox_root).join(session))
            .filter(|dir| dir.is_dir())
            .collect()
    }

    /// Kills whatever still runs in `session`'s group and removes the group.
    pub(crate) async fn remove(
        &self,
        sandbox_root: &Path,
        session: &str,
    ) -> Result<(), SandboxError> {
        self.made()
            .remove(&(sandbox_root.to_path_buf(), session.to_owned()));
        for h in &self.hierarchies {
            let parent = group_dir(h, sandbox_root);
            remove_group(&parent.join(session)).await?;
            // The server's folder goes with its last group (busy otherwise: fine).
            let _ = fs::remove_dir(&parent);
        }
        Ok(())
    }

    /// Removes every group of `sandbox_root` left by a previous server (their processes
    /// killed first). Answers how many there were.
    pub(crate) async fn remove_stale(&self, sandbox_root: &Path) -> Result<usize, SandboxError> {
        let mut removed = HashSet::new();
        for h in &self.hierarchies {
            let parent = group_dir(h, sandbox_root);
            let entries = match fs::read_dir(&parent) {
                Ok(entries) => entries,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io_error("listing", &parent, e)),
            };
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    remove_group(&entry.path()).await?;
                    removed.insert(entry.file_name());
                }
            }
            let _ = fs::remove_dir(&parent);
        }
        Ok(removed.len())
    }
}

impl Drop for SessionCgroups {
    /// The server is going away and its processes with it (they die with their
    /// supervisor): remove the groups it made rather than leave them for the next start.
    fn drop(&mut self) {
        let made = std::mem::take(&mut *self.made());
        for (sandbox_root, session) in made {
            for h in &self.hierarchies {
                let parent = group_dir(h, &sandbox_root);
                let dir = parent.join(&session);
                let deadline = Instant::now() + Duration::from_secs(1);
                while dir.exists() && fs::remove_dir(&dir).is_err() && Instant::now() < deadline {
                    kill_members(&dir);
                    std::thread::sleep(EMPTY_POLL);
                }
                let _ = fs::remove_dir(&parent);
            }
        }
    }
}

/// `<base>/odyssey-<tag>`: the groups of one server home.
fn group_dir(h: &Hierarchy, sandbox_root: &Path) -> PathBuf {
    let digest = Sha256::digest(sandbox_root.as_os_str().as_encoded_bytes());
    h.base
        .join(format!("odyssey-{}", &hex::encode(digest)[..16]))
}

/// Session names are cell folder names (UUIDs): one plain path component.
fn check_name(session: &str) -> Result<(), SandboxError> {
    let plain = !session.is_empty()
        && session.len() <= 64
        && session
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-');
    if plain {
        Ok(())
    } else {
        Err(SandboxError::invalid(
            "cell",
            format!("`{session}` is not a session's cell"),
        ))
    }
}

fn enter_one(
    h: &Hierarchy,
    parent: &Path,
    session: &str,
    limits: GroupLimits,
) -> Result<OwnedFd, SandboxError> {
    let dir = parent.join(session);
    // Twice: a session of the same server removed at this moment may take the parent
    // folder away between its creation and the group's.
    for attempt in 0..2 {
        make_dir(parent)?;
        if h.version == CgroupVersion::V2 {
            let enable: Vec<String> = controller_names(h.memory, h.pids)
                .iter()
                .map(|c| format!("+{c}"))
                .collect();
            let control = parent.join("cgroup.subtree_control");
            write_file(&control, &enable.join(" "))
                .map_err(|e| io_error("writing", &control, e))?;
        }
        match fs::create_dir(&dir) {
            Ok(()) => break,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => break,
            Err(e) if e.kind() == io::ErrorKind::NotFound && attempt == 0 => continue,
            Err(e) => return Err(io_error("creating", &dir, e)),
        }
    }
    if h.memory {
        set_memory(h.version, &dir, limits.memory_bytes)?;
    }
    if h.pids {
        set(&dir, "pids.max", &limits.processes.to_string())?;
    }
    let membership = dir.join(match h.version {
        CgroupVersion::V1 => "tasks",
        CgroupVersion::V2 => "cgroup.procs",
    });
    fs::OpenOptions::new()
        .write(true)
        .open(&membership)
        .map(OwnedFd::from)
        .map_err(|e| io_error("opening", &membership, e))
}

/// Sets the memory limit, and keeps swap from extending it.
fn set_memory(version: CgroupVersion, dir: &Path, bytes: Option<u64>) -> Result<(), SandboxError> {
    match version {
        CgroupVersion::V2 => {
            let value = bytes.map_or_else(|| "max".to_owned(), |b| b.to_string());
            set(dir, "memory.max", &value)?;
            set_if_present(dir, "memory.swap.max", "0")
        }
        CgroupVersion::V1 => {
            // memory+swap may never be below memory alone: raise it first, lower it last.
            let value = bytes.map_or_else(|| "-1".to_owned(), |b| b.to_string());
            let current = fs::read_to_string(dir.join("memory.limit_in_bytes"))
                .ok()
                .and_then(|t| t.trim().parse::<u64>().ok())
                .unwrap_or(u64::MAX);
            if bytes.is_none_or(|b| b >= current) {
                set_if_present(dir, "memory.memsw.limit_in_bytes", &value)?;
                set(dir, "memory.limit_in_bytes", &value)
            } else {
                set(dir, "memory.limit_in_bytes", &value)?;
                set_if_present(dir, "memory.memsw.limit_in_bytes", &value)
            }
        }
    }
}

fn set(dir: &Path, file: &str, value: &str) -> Result<(), SandboxError> {
    let path = dir.join(file);
    write_file(&path, value).map_err(|e| io_error(&format!("setting {value} in"), &path, e))
}

/// Swap accounting is optional in the kernel: no file, no swap to limit.
fn set_if_present(dir: &Path, file: &str, value: &str) -> Result<(), SandboxError> {
    if dir.join(file).exists() {
        set(dir, file, value)
    } else {
        Ok(())
    }
}

/// Writes `value` in one `write`, as cgroupfs expects.
pub(crate) fn write_file(path: &Path, value: &str) -> io::Result<()> {
    fs::OpenOptions::new()
        .write(true)
        .open(path)?
        .write_all(value.as_bytes())
}

fn make_dir(path: &Path) -> Result<(), SandboxError> {
    match fs::create_dir(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io_error("creating", path, e)),
    }
}

/// Kills every process in the group at `dir`, waits until it is empty, and removes it.
async fn remove_group(dir: &Path) -> Result<(), SandboxError> {
    if !dir.exists() {
        return Ok(());
    }
    let deadline = tokio::time::Instant::now() + EMPTY_WAIT;
    loop {
        match fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) if tokio::time::Instant::now() >= deadline => {
                return Err(io_error("removing", dir, e));
            }
            Err(_) => {}
        }
        // Killed again each round: a process may still have forked meanwhile.
        kill_members(dir);
        tokio::time::sleep(EMPTY_POLL).await;
    }
}

/// SIGKILLs every process of the group at `dir`. v2 has `cgroup.kill` for that; otherwise
/// each member is signalled through a pidfd opened before checking it is still in the
/// group, so a pid reused by an unrelated process meanwhile is never signalled.
fn kill_members(dir: &Path) {
    if write_file(&dir.join("cgroup.kill"), "1").is_ok() {
        return;
    }
    let Ok(listed) = fs::read_to_string(dir.join("cgroup.procs")) else {
        return;
    };
    let Some(relative) = cgroup_path_in_proc(dir) else {
        return;
    };
    for pid in listed.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
        let Some(pid) = rustix::process::Pid::from_raw(pid) else {
            continue;
        };
        let Ok(pidfd) = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty())
        else {
            continue;
        };
        let still_ours = fs::read_to_string(format!("/proc/{}/cgroup", pid.as_raw_nonzero()))
            .is_ok_and(|text| text.lines().any(|line| line.ends_with(&relative)));
        if still_ours {
            let _ = rustix::process::pidfd_send_signal(&pidfd, rustix::process::Signal::KILL);
        }
    }
}

/// How `/proc/<pid>/cgroup` names the group at `dir`: `:/<path below the mount>`. The
/// groups' names are unique (a digest and a session id), so the tail identifies them.
fn cgroup_path_in_proc(dir: &Path) -> Option<String> {
    let session = dir.file_name()?.to_str()?;
    let server = dir.parent()?.file_name()?.to_str()?;
    Some(format!("/{server}/{session}"))
}

fn io_error(action: &str, path: &Path, source: io::Error) -> SandboxError {
    SandboxError::io(format!("{action} cgroup {}", path.display()), source)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A v2 hierarchy with `memory` and `pids` cannot be had on a v1 host, where the tests
    /// run against real groups: here the files a v2 group consists of are laid out in a
    /// plain folder, and the group is entered as it would be on cgroupfs.
    #[test]
    fn a_v2_group_gets_its_limits_and_its_parent_the_controllers() {
        let base = tempfile::tempdir().expect("tempdir");
        let h = Hierarchy {
            version: CgroupVersion::V2,
            base: base.path().to_path_buf(),
            memory: true,
            pids: true,
        };
        let parent = group_dir(&h, Path::new("/srv/odyssey/sandbox"));
        let dir = parent.join("0190a7b2-aaaa-7bbb-8ccc-0123456789ab");
        fs::create_dir_all(&dir).expect("mkdir");
        fs::write(parent.join("cgroup.subtree_control"), "").expect("write");
        for file in ["memory.max", "memory.swap.max", "pids.max", "cgroup.procs"] {
            fs::write(dir.join(file), "").expect("write");
        }
        let limits = GroupLimits {
            memory_bytes: Some(128 << 20),
            processes: 64,
        };
        let session = dir.file_name().and_then(|n| n.to_str()).expect("name");
        enter_one(&h, &parent, session, limits).expect("enter");
        let read = |path: PathBuf| fs::read_to_string(path).expect("read");
        assert_eq!(read(parent.join("cgroup.subtree_control")), "+memory +pids");
        assert_eq!(read(dir.join("memory.max")), "134217728");
        assert_eq!(read(dir.join("memory.swap.max")), "0");
        assert_eq!(read(dir.join("pids.max")), "64");
        assert!(
            parent
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("odyssey-") && n.len() == 24)
        );
    }

    #[test]
    fn only_plain_session_names_make_groups() {
        assert!(check_name("0190a7b2-aaaa-7bbb-8ccc-0123456789ab").is_ok());
        for bad in ["", "..", "a/b", "a b", &"x".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
