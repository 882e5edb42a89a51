//! The open-turn journal: which sessions had a turn in flight, so that startup repairs
//! exactly those and reads no other session.
//!
//! One append-only file, `sessions/.open-turns`, of lines `+<id>` (a turn of the session
//! started) and `-<id>` (its end is durable in the session's log); a session is open when
//! its last line is `+`. A turn costs two short appends, where a marker file per turn
//! cost creating and removing an inode (on ext4 the larger part of a turn's CPU time
//! under load). The file is rewritten with only the open sessions once it grows. Like the
//! markers before it, the journal is not synced: it only speeds repair up, since a
//! session is also repaired whenever it is first opened. For the same reason a home that
//! cannot be written at startup (read-only, full) does not stop the server: the journal
//! is read, and written again from the first turn that can write.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use uuid::Uuid;

use crate::error::{Result, RuntimeError};

pub(crate) const JOURNAL_FILE: &str = ".open-turns";

/// The folder of one marker file per open session that older servers kept; read once at
/// startup and folded into the journal.
const LEGACY_DIR: &str = ".open";

/// Lines beyond which the journal is rewritten (when most of them are settled).
const COMPACT_LINES: usize = 4096;

pub(crate) struct Journal {
    path: PathBuf,
    state: Mutex<State>,
}

struct State {
    /// `None` while the journal could not be rewritten (a read-only or full home): the
    /// next record rewrites it whole instead of appending.
    file: Option<File>,
    /// Sessions whose last line is `+`.
    open: HashSet<Uuid>,
    lines: usize,
}

impl Journal {
    /// Opens the journal of the sessions folder `root`, with the sessions it shows open
    /// (those of an older server's marker files included).
    pub fn open(root: &Path) -> Result<Self> {
        let path = root.join(JOURNAL_FILE);
        let mut open = HashSet::new();
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                for line in text.lines() {
                    // A torn last line (a crash mid-append) reads as nothing.
                    let id = line.get(1..).and_then(|id| Uuid::parse_str(id).ok());
                    match (line.as_bytes().first(), id) {
                        (Some(b'+'), Some(id)) => {
                            open.insert(id);
                        }
                        (Some(b'-'), Some(id)) => {
                            open.remove(&id);
                        }
                        _ => {}
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(storage("read", &path, e)),
        }
        let legacy = root.join(LEGACY_DIR);
        if let Ok(entries) = std::fs::read_dir(&legacy) {
            open.extend(entries.filter_map(|e| {
                e.ok()?
                    .file_name()
                    .to_str()
                    .and_then(|n| Uuid::parse_str(n).ok())
            }));
        }
        let file = match rewrite(&path, &open) {
            Ok(file) => {
                if legacy.exists() {
                    std::fs::remove_dir_all(&legacy).map_err(|e| storage("remove", &legacy, e))?;
                }
                Some(file)
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot rewrite the open-turn journal; sessions can be read, turns wait for a writable home");
                None
            }
        };
        Ok(Self {
            path,
            state: Mutex::new(State {
                file,
                lines: open.len(),
                open,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }

    /// The sessions with a turn in flight.
    pub fn open_sessions(&self) -> Vec<Uuid> {
        let mut ids: Vec<Uuid> = self.lock().open.iter().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// Records that a turn of `id` started.
    pub fn start(&self, id: Uuid) -> Result<()> {
        let mut state = self.lock();
        if !state.open.insert(id) {
            return Ok(());
        }
        self.append(&mut state, b'+', id)
    }

    /// Records that the turn of `id` ended.
    pub fn end(&self, id: Uuid) -> Result<()> {
        let mut state = self.lock();
        if !state.open.remove(&id) {
            return Ok(());
        }
        self.append(&mut state, b'-', id)?;
        if state.lines > COMPACT_LINES && state.lines > 4 * state.open.len() {
            state.file = None;
            self.rewrite(&mut state)?;
        }
        Ok(())
    }

    /// Records `sign` for `id`, whose change `state.open` already holds: one line, or the
    /// whole journal when it has no file open.
    fn append(&self, state: &mut State, sign: u8, id: Uuid) -> Result<()> {
        let Some(file) = &mut state.file else {
            return self.rewrite(state);
        };
        let mut line = [0u8; 38];
        line[0] = sign;
        id.hyphenated().encode_lower(&mut line[1..37]);
        line[37] = b'\n';
        file.write_all(&line)
            .map_err(|e| storage("append to", &self.path, e))?;
        state.lines += 1;
        Ok(())
    }

    fn rewrite(&self, state: &mut State) -> Result<()> {
        state.file = Some(rewrite(&self.path, &state.open)?);
        state.lines = state.open.len();
        Ok(())
    }
}

/// Replaces the journal with one `+` line per open session (a temporary file renamed over
/// it, so a crash leaves the old journal or the new one) and opens it for appending.
fn rewrite(path: &Path, open: &HashSet<Uuid>) -> Result<File> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| storage("write", path, e))?;
    let mut text = String::with_capacity(open.len() * 38);
    for id in open {
        text.push('+');
        text.push_str(&id.to_string());
        text.push('\n');
    }
    tmp.write_all(text.as_bytes())
        .map_err(|e| storage("write", path, e))?;
    tmp.persist(path)
        .map_err(|e| storage("replace", path, e.error))?;
    OpenOptions::new()
        .append(true)
        .open(path)
        .map_err(|e| storage("open", path, e))
}

fn storage(what: &str, path: &Path, e: std::io::Error) -> RuntimeError {
    RuntimeError::storage(format!("{what} {}", path.display()), e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_sessions_survive_a_restart_and_ended_ones_do_not() {
        let dir = tempfile::tempdir().expect("dir");
        let (a, b, c) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        {
            let journal = Journal::open(dir.path()).expect("open");
            for id in [a, b, c] {
                journal.start(id).expect("start");
            }
            journal.start(a).expect("a second start is one record");
            journal.end(b).expect("end");
            journal.end(b).expect("a second end is nothing");
        }
        // A crash mid-append leaves a torn line.
        let mut file = OpenOptions::new()
            .append(true)
            .open(dir.path().join(JOURNAL_FILE))
            .expect("journal");
        file.write_all(b"-0190").expect("torn");
        let journal = Journal::open(dir.path()).expect("reopen");
        let mut expected = vec![a, c];
        expected.sort_unstable();
        assert_eq!(journal.open_sessions(), expected);
        let text = std::fs::read_to_string(dir.path().join(JOURNAL_FILE)).expect("read");
        assert_eq!(text.lines().count(), 2, "rewritten at startup: {text}");
    }

    #[test]
    fn an_older_servers_markers_are_folded_in_and_removed() {
        let dir = tempfile::tempdir().expect("dir");
        let id = Uuid::now_v7();
        std::fs::create_dir(dir.path().join(LEGACY_DIR)).expect("legacy dir");
        std::fs::write(dir.path().join(LEGACY_DIR).join(id.to_string()), "").expect("marker");
        let journal = Journal::open(dir.path()).expect("open");
        assert_eq!(journal.open_sessions(), vec![id]);
        assert!(!dir.path().join(LEGACY_DIR).exists());
        journal.end(id).expect("end");
        assert!(
            Journal::open(dir.path())
                .expect("reopen")
                .open_sessions()
                .is_empty()
        );
    }

    #[test]
    fn a_long_journal_is_compacted_to_the_open_sessions() {
        let dir = tempfile::tempdir().expect("dir");
        let journal = Journal::open(dir.path()).expect("open");
        let kept = Uuid::now_v7();
        journal.start(kept).expect("start");
        for _ in 0..COMPACT_LINES {
            let id = Uuid::now_v7();
            journal.start(id).expect("start");
            journal.end(id).expect("end");
        }
        let text = std::fs::read_to_string(dir.path().join(JOURNAL_FILE)).expect("read");
        assert!(
            text.lines().count() < COMPACT_LINES,
            "{} lines",
            text.lines().count()
        );
        assert_eq!(journal.open_sessions(), vec![kept]);
        assert_eq!(
            Journal::open(dir.path()).expect("reopen").open_sessions(),
            vec![kept]
        );
    }
}
