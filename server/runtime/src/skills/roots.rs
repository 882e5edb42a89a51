//! The operator's skill roots, scanned once and then kept up to date cheaply.
//!
//! A check costs one `stat` per root and one per skill: a root is listed again only when
//! its folder changed (a skill added, removed or renamed), and a SKILL.md is read again
//! only when its own stamp changed. Checks run at most once per `interval` however many
//! turns start, so with N skills the cost is N stats per interval, not N file reads per
//! turn. Everyone shares the result as one `Arc`, rebuilt only when something changed.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use super::server_skill::ServerSkill;
use super::stamp::{Seen, Stamp};

/// The skills of every skill root, as of the last check.
pub struct ServerSkills {
    interval: Duration,
    state: Mutex<State>,
    /// SKILL.md files read so far: what the change detection saves is visible here.
    reads: AtomicU64,
}

struct State {
    checked_at: Option<Instant>,
    roots: Vec<Root>,
    current: Arc<[ServerSkill]>,
}

/// One root and what was last seen in it.
struct Root {
    path: PathBuf,
    /// The root folder when it was last listed; `None` before the first listing.
    listed: Option<Seen>,
    /// Skill folders by name.
    skills: BTreeMap<String, Cached>,
    /// The root is unreadable and the log already says so.
    reported: bool,
}

struct Cached {
    /// SKILL.md when it was last read; `None` before the first read.
    seen: Option<Seen>,
    skill: ServerSkill,
}

impl ServerSkills {
    /// Skills of `roots` (earlier roots win a name clash), checked for changes at most once
    /// per `interval` (zero: at every use). Nothing is read until first used.
    pub fn new(roots: Vec<PathBuf>, interval: Duration) -> Self {
        let roots = roots
            .into_iter()
            .map(|path| Root {
                path,
                listed: None,
                skills: BTreeMap::new(),
                reported: false,
            })
            .collect();
        Self {
            interval,
            state: Mutex::new(State {
                checked_at: None,
                roots,
                current: Arc::from(Vec::new()),
            }),
            reads: AtomicU64::new(0),
        }
    }

    /// The skills of every root, checked for changes first when the interval has passed.
    /// Does file-system work: call it from a blocking thread.
    pub fn current(&self) -> Arc<[ServerSkill]> {
        let mut state = self.lock();
        let due = state
            .checked_at
            .is_none_or(|at| at.elapsed() >= self.interval);
        if due {
            self.check(&mut state, SystemTime::now());
        }
        state.current.clone()
    }

    /// Checks every root now, as if the clock read `now`, whatever the interval.
    #[cfg(test)]
    pub(crate) fn check_now(&self, now: SystemTime) -> Arc<[ServerSkill]> {
        let mut state = self.lock();
        self.check(&mut state, now);
        state.current.clone()
    }

    /// How many SKILL.md files have been read since the start.
    pub fn files_read(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is a cache: one left half-updated by a panic is refreshed by the next
        // check, so a poisoned lock is still usable.
        crate::sync::lock(&self.state)
    }

    fn check(&self, state: &mut State, now: SystemTime) {
        let mut changed = false;
        for root in &mut state.roots {
            changed |= root.refresh(now, &self.reads);
        }
        state.checked_at = Some(Instant::now());
        if changed {
            state.current = merge(&state.roots);
        }
    }
}

impl Root {
    /// Brings this root up to date; whether anything changed.
    fn refresh(&mut self, now: SystemTime, reads: &AtomicU64) -> bool {
        let stamp = match fs::metadata(&self.path) {
            Ok(meta) if meta.is_dir() => Stamp::of(&meta),
            Ok(_) => return self.vanish("is not a folder"),
            Err(e) => return self.vanish(&e.to_string()),
        };
        let mut changed = false;
        if self.listed.is_none_or(|seen| seen.is_stale(Some(stamp))) {
            match list_folders(&self.path) {
                Ok(names) => {
                    changed |= self.relist(names);
                    self.listed = Some(Seen::new(Some(stamp), now));
                    self.reported = false;
                }
                Err(e) => return self.vanish(&e.to_string()),
            }
        }
        for (name, cached) in &mut self.skills {
            changed |= cached.refresh(&self.path, name, now, reads);
        }
        changed
    }

    /// Keeps the skills still there, adds the new ones (read by the caller's refresh).
    fn relist(&mut self, names: Vec<String>) -> bool {
        let before = self.skills.len();
        self.skills.retain(|name, _| names.contains(name));
        let mut changed = self.skills.len() != before;
        for name in names {
            self.skills.entry(name.clone()).or_insert_with(|| {
                changed = true;
                Cached {
                    seen: None,
                    skill: ServerSkill::unread(&self.path, &name),
                }
            });
        }
        changed
    }

    /// The root cannot be read: it offers no skills until it can.
    fn vanish(&mut self, why: &str) -> bool {
        if !self.reported {
            tracing::warn!(root = %self.path.display(), problem = why, "cannot read a skill root");
            self.reported = true;
        }
        let had = !self.skills.is_empty();
        self.skills.clear();
        self.listed = None;
        had
    }
}

impl Cached {
    fn refresh(&mut self, root: &Path, name: &str, now: SystemTime, reads: &AtomicU64) -> bool {
        let stamp = fs::metadata(&self.skill.file)
            .ok()
            .filter(fs::Metadata::is_file)
            .map(|m| Stamp::of(&m));
        if self.seen.is_some_and(|seen| !seen.is_stale(stamp)) {
            return false;
        }
        reads.fetch_add(1, Ordering::Relaxed);
        let skill = ServerSkill::read(root, name);
        self.seen = Some(Seen::new(stamp, now));
        let changed = skill != self.skill;
        self.skill = skill;
        changed
    }
}

/// The names of the folders in `root` (links to folders included: the root is the
/// operator's), sorted, hidden ones left out.
fn list_folders(root: &Path) -> std::io::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in fs::read_dir(root)? {
        let entry = entry?;
        let Ok(name) = entry.file_name().into_string() else {
            tracing::warn!(root = %root.display(), "a skill folder's name is not UTF-8; skipped");
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        if fs::metadata(entry.path()).is_ok_and(|m| m.is_dir()) {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// Every root's skills in order; a name already taken by an earlier root is kept but
/// marked unusable.
fn merge(roots: &[Root]) -> Arc<[ServerSkill]> {
    let mut taken = std::collections::HashSet::new();
    let mut out = Vec::new();
    for root in roots {
        for cached in root.skills.values() {
            let skill = &cached.skill;
            if skill.usable && !taken.insert(skill.name.clone()) {
                out.push(skill.shadowed("an earlier skill root"));
            } else {
                out.push(skill.clone());
            }
        }
    }
    Arc::from(out)
}
