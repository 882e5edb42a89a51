//! Forking a session from a turn's end, rewinding one to a turn's end, and what a turn
//! changed in the workspace: all read from the workspace snapshots recorded at turn ends
//! (see `crate::snapshot`) and the session's log.

use std::collections::HashSet;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use uuid::Uuid;

use super::OdysseyRuntime;
use crate::error::{Result, RuntimeError};
use crate::events::{Event, EventPayload, SessionRewound, now_ms};
use crate::sandbox::CellPaths;
use crate::session::{ForkOrigin, SessionHandle, SessionInfo, SessionRecord, TurnEndRef};
use crate::snapshot::{Manifest, SnapshotError, SnapshotStore, TurnChanges};

/// The prefix of a fork's cell while it is built, beside the cells.
pub(crate) const FORK_STAGING: &str = ".fork";
/// The prefix of a rewound workspace while it is built, in its cell.
const REWIND_STAGING: &str = ".rewind";

/// Removes what a crash left of forks or rewinds being built in `dir` (names starting
/// with `prefix-`): nothing there was ever visible.
///
/// `older_than`: only those not changed for that long (the folder is shared with other
/// servers, one of which may be building one now).
pub(crate) fn remove_staging(dir: &Path, prefix: &str, older_than: Option<std::time::Duration>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = format!("{prefix}-");
    let old_enough = |entry: &std::fs::DirEntry| {
        older_than.is_none_or(|age| {
            entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|elapsed| elapsed > age)
        })
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix)
            && old_enough(&entry)
            && let Err(e) = crate::sandbox::remove_tree(&entry.path())
        {
            tracing::warn!(path = %entry.path().display(), error = %e, "cannot remove a half-built workspace");
        }
    }
}

/// Where a fork starts: after a turn (numbered from 1), or at the sequence of a turn's
/// end (its `turn_completed`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForkPoint {
    AfterTurn(u64),
    AtSequence(u64),
}

/// What a rewind did.
#[derive(Clone, Debug)]
pub struct Rewound {
    pub session: SessionInfo,
    /// The `session_rewound` event recording it.
    pub event: Arc<Event>,
}

/// Sessions being rewound: a turn submitted meanwhile is refused.
#[derive(Debug, Default)]
pub(crate) struct Rewinding(Mutex<HashSet<Uuid>>);

impl Rewinding {
    /// Runs `then` under the lock, unless the session is being rewound.
    pub(crate) fn unless_rewinding<T>(
        &self,
        session_id: Uuid,
        then: impl FnOnce() -> T,
    ) -> Result<T> {
        let rewinding = crate::sync::lock(&self.0);
        if rewinding.contains(&session_id) {
            return Err(RuntimeError::FailedPrecondition(format!(
                "session {session_id} is being rewound; submit the turn once the rewind is done"
            )));
        }
        Ok(then())
    }
}

/// Marks a session rewound until dropped.
struct RewindGuard<'a> {
    set: &'a Rewinding,
    session_id: Uuid,
}

impl Drop for RewindGuard<'_> {
    fn drop(&mut self) {
        crate::sync::lock(&self.set.0).remove(&self.session_id);
    }
}

impl OdysseyRuntime {
    /// Where the copies snapshots of the session `id` (whose folder in this server's
    /// home is `dir`) are kept: in that folder with the file store; with a store other
    /// servers share, on the workspace root they all mount, so whichever runs a turn
    /// records it where any other reads it (see [`SnapshotStore::on_workspace_root`]).
    pub(crate) fn snapshots_of(&self, id: Uuid, dir: &Path) -> SnapshotStore {
        if self.shares_store() {
            SnapshotStore::on_workspace_root(&self.inner.config.sandbox_dir(), id)
        } else {
            SnapshotStore::of_session(dir)
        }
    }

    /// Removes the snapshots of the deleted session `id` from the workspace root (with
    /// the file store they go with its session folder).
    pub(crate) async fn remove_shared_snapshots(&self, id: Uuid) -> Result<()> {
        if !self.shares_store() {
            return Ok(());
        }
        let store = SnapshotStore::on_workspace_root(&self.inner.config.sandbox_dir(), id);
        tokio::task::spawn_blocking(move || {
            crate::sandbox::remove_tree(store.root()).map_err(|e| {
                RuntimeError::storage(
                    format!("remove {}", store.root().display()),
                    std::io::Error::other(e),
                )
            })
        })
        .await
        .map_err(|e| RuntimeError::storage("delete snapshots", std::io::Error::other(e)))?
    }

    /// Reads into this server's copy of the session what other servers sharing the store
    /// wrote, so a turn one of them ended just now is found here.
    async fn caught_up(&self, id: Uuid) -> Result<Arc<SessionHandle>> {
        let session = self.inner.sessions.get(id).await?;
        if self.shares_store() {
            session.catch_up().await?;
        }
        Ok(session)
    }

    /// Creates a session whose history is `source`'s up to the end of the turn `at`
    /// names and whose workspace is what `source`'s held then. The source is untouched.
    pub async fn fork_session(&self, source_id: Uuid, at: ForkPoint) -> Result<SessionInfo> {
        self.ensure_running()?;
        let source = self.caught_up(source_id).await?;
        let end = fork_point(&source, at)?;
        if self.inner.workspaces.is_overlay(source_id) {
            return self.fork_overlay(&source, end).await;
        }
        let store = self.snapshots_of(source_id, source.dir());
        let manifest = read_manifest(&store, end).await?;
        let fork_id = Uuid::now_v7();
        let record = SessionRecord {
            id: fork_id,
            created_at_ms: now_ms(),
            forked: Some(ForkOrigin {
                session_id: source_id,
                turn: end.turn,
                turn_id: end.turn_id,
                sequence: end.sequence,
            }),
            ..source.record().clone()
        };
        let prefix: Vec<Uuid> = source
            .turn_ends_until(end.sequence)
            .iter()
            .map(|e| e.turn_id)
            .collect();
        let sandbox_root = self.inner.config.sandbox_dir();
        let owner = self.inner.sandbox.sandbox_owner();
        // On a shared workspace root the fork's snapshots are in place before the fork
        // exists in the store, so no server sees the fork without them.
        let shared = self
            .shares_store()
            .then(|| SnapshotStore::on_workspace_root(&sandbox_root, fork_id));
        let sessions = self.clone();
        let source_handle = source.clone();
        tokio::task::spawn_blocking(move || -> Result<()> {
            let events = source_handle.events_until(end.sequence)?;
            let cell = CellPaths::under(sandbox_root.join(fork_id.to_string()));
            let head = build_cell(&sandbox_root, &cell, &store, &manifest, owner)?;
            let populate = |own: &SnapshotStore| -> Result<()> {
                own.adopt(&store, &prefix)?;
                own.set_head(&head)?;
                Ok(())
            };
            let created = match &shared {
                Some(own) => populate(own).and_then(|()| {
                    sessions
                        .inner
                        .sessions
                        .create_fork(record, events, |_| Ok(()))
                }),
                None => sessions.inner.sessions.create_fork(record, events, |dir| {
                    populate(&SnapshotStore::of_session(dir))
                }),
            };
            if created.is_err() {
                let _ = crate::sandbox::remove_tree(&cell.root);
                if let Some(own) = &shared {
                    let _ = crate::sandbox::remove_tree(own.root());
                }
            }
            created
        })
        .await
        .map_err(|e| RuntimeError::storage("fork session", std::io::Error::other(e)))??;
        tracing::info!(session = %fork_id, source = %source_id, turn = end.turn, "session forked");
        self.get_session(fork_id).await
    }

    /// Puts the session's conversation and workspace back to the end of turn `to_turn`.
    /// The log keeps everything: a `session_rewound` event records the rewind, and the
    /// turns after `to_turn` leave the model's history. Refused while a turn of the session
    /// is queued or running.
    pub async fn rewind_session(&self, id: Uuid, to_turn: u64) -> Result<Rewound> {
        self.ensure_running()?;
        let session = self.caught_up(id).await?;
        let end = turn_end(&session, to_turn, "to_turn")?;
        let _guard = {
            let mut rewinding = crate::sync::lock(&self.inner.rewinding.0);
            if rewinding.contains(&id) {
                return Err(RuntimeError::FailedPrecondition(format!(
                    "session {id} is already being rewound"
                )));
            }
            // A turn another server runs shows in the log, read just now.
            if !self.inner.executions.live_of_session(id).is_empty() || session.has_open_turn() {
                return Err(RuntimeError::FailedPrecondition(format!(
                    "a turn of session {id} is queued or running; wait for it to end (or \
                     cancel it), then rewind"
                )));
            }
            rewinding.insert(id);
            RewindGuard {
                set: &self.inner.rewinding,
                session_id: id,
            }
        };
        let cell = CellPaths::under(self.inner.config.sandbox_dir().join(id.to_string()));
        let owner = self.inner.sandbox.sandbox_owner();
        let entries = if self.inner.workspaces.is_overlay(id) {
            if cell.root.exists() {
                self.inner.sandbox.kill_cell_processes(&cell).await;
            }
            let workspaces = self.inner.workspaces.clone();
            tokio::task::spawn_blocking(move || {
                workspaces.rewind(id, (end.turn, end.turn_id), &cell.data, owner)?;
                Ok::<_, RuntimeError>(count_entries(&cell.data))
            })
            .await
            .map_err(|e| RuntimeError::storage("rewind workspace", std::io::Error::other(e)))??
        } else {
            let store = self.snapshots_of(id, session.dir());
            let manifest = read_manifest(&store, end).await?;
            if cell.root.exists() {
                self.inner.sandbox.kill_cell_processes(&cell).await;
            }
            let entries = manifest.entries.len() as u64;
            let restore = {
                let store = store.clone();
                let cell = cell.clone();
                tokio::task::spawn_blocking(move || {
                    replace_workspace(&cell, &store, &manifest, owner)
                })
            };
            restore.await.map_err(|e| {
                RuntimeError::storage("rewind workspace", std::io::Error::other(e))
            })??;
            entries
        };
        session.forget_cell_prepared();
        let history = {
            let session = session.clone();
            tokio::task::spawn_blocking(move || session.history_until(end.sequence))
                .await
                .map_err(|e| RuntimeError::storage("read history", std::io::Error::other(e)))??
        };
        let turns_left = session.stats().turn_count.saturating_sub(end.turn);
        let event = session
            .append_rewind(
                EventPayload::SessionRewound(SessionRewound {
                    to_turn: end.turn,
                    to_turn_id: end.turn_id,
                    to_sequence: end.sequence,
                    turns_left,
                    entries,
                }),
                history,
            )
            .await?;
        session.write_summary();
        tracing::info!(session = %id, turn = end.turn, "session rewound");
        Ok(Rewound {
            session: self.with_state(session.info()),
            event,
        })
    }

    /// The files turn `turn` added, changed or removed in the workspace, with a unified
    /// diff of each text file (bounded).
    pub async fn turn_changes(&self, id: Uuid, turn: u64) -> Result<TurnChanges> {
        let session = self.caught_up(id).await?;
        let end = turn_end(&session, turn, "turn")?;
        if self.inner.workspaces.is_overlay(id) {
            let workspaces = self.inner.workspaces.clone();
            return tokio::task::spawn_blocking(move || {
                workspaces.turn_changes(id, (end.turn, end.turn_id))
            })
            .await
            .map_err(|e| RuntimeError::storage("read turn changes", std::io::Error::other(e)))?;
        }
        let store = self.snapshots_of(id, session.dir());
        let after = read_manifest(&store, end).await?;
        if after.parent_unknown {
            return Err(RuntimeError::FailedPrecondition(format!(
                "the workspace at the start of turn {turn} was not recorded (an earlier \
                 snapshot was skipped), so its changes are unknown"
            )));
        }
        let base = match after.parent {
            None => None,
            Some(parent) => {
                let number = session.turn_number(parent).ok_or_else(|| {
                    RuntimeError::FailedPrecondition(format!(
                        "the turn turn {turn} started from is not in the session's log"
                    ))
                })?;
                Some((number, parent))
            }
        };
        tokio::task::spawn_blocking(move || {
            let before = match base {
                None => Manifest::default(),
                Some((number, parent)) => store.manifest(number, parent).map_err(|e| match e {
                    SnapshotError::Missing { .. } | SnapshotError::Skipped { .. } => {
                        RuntimeError::FailedPrecondition(format!(
                            "the snapshot turn {turn} started from (turn {number}) is no \
                             longer kept, so its changes are unknown"
                        ))
                    }
                    e => e.into(),
                })?,
            };
            let (changes, truncated) = crate::snapshot::changes(&before, &after, store.objects());
            Ok(TurnChanges {
                turn: end.turn,
                turn_id: end.turn_id,
                base_turn: base.map_or(0, |(number, _)| number),
                changes,
                truncated,
            })
        })
        .await
        .map_err(|e| RuntimeError::storage("turn changes", std::io::Error::other(e)))?
    }
}

impl OdysseyRuntime {
    /// [`OdysseyRuntime::fork_session`] of an overlay session: the fork's workspace is
    /// the source's layers at that turn's end (shared, never copied) beneath an upper
    /// folder of its own.
    async fn fork_overlay(
        &self,
        source: &Arc<SessionHandle>,
        end: TurnEndRef,
    ) -> Result<SessionInfo> {
        let source_id = source.id();
        let fork_id = Uuid::now_v7();
        let record = SessionRecord {
            id: fork_id,
            created_at_ms: now_ms(),
            forked: Some(ForkOrigin {
                session_id: source_id,
                turn: end.turn,
                turn_id: end.turn_id,
                sequence: end.sequence,
            }),
            ..source.record().clone()
        };
        let cell = CellPaths::under(self.inner.config.sandbox_dir().join(fork_id.to_string()));
        let owner = self.inner.sandbox.sandbox_owner();
        let runtime = self.clone();
        let source = source.clone();
        tokio::task::spawn_blocking(move || -> Result<()> {
            let events = source.events_until(end.sequence)?;
            let workspaces = &runtime.inner.workspaces;
            let created = workspaces
                .fork(
                    source_id,
                    (end.turn, end.turn_id),
                    fork_id,
                    &cell.data,
                    owner,
                )
                .and_then(|()| {
                    runtime
                        .inner
                        .sessions
                        .create_fork(record, events, |_| Ok(()))
                });
            if created.is_err() {
                let _ = workspaces.remove(fork_id, &cell.data);
                let _ = crate::sandbox::remove_tree(&cell.root);
            }
            created
        })
        .await
        .map_err(|e| RuntimeError::storage("fork session", std::io::Error::other(e)))??;
        tracing::info!(session = %fork_id, source = %source_id, turn = end.turn, "session forked");
        self.get_session(fork_id).await
    }
}

/// Entries (files, folders, links) beneath `root`, no link followed.
fn count_entries(root: &Path) -> u64 {
    let mut count = 0;
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            count += 1;
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                pending.push(entry.path());
            }
        }
    }
    count
}

/// The turn end `at` names: INVALID_ARGUMENT for a turn the log does not have, or a
/// sequence that is not a turn's end.
fn fork_point(source: &SessionHandle, at: ForkPoint) -> Result<TurnEndRef> {
    match at {
        ForkPoint::AfterTurn(turn) => turn_end(source, turn, "after_turn"),
        ForkPoint::AtSequence(sequence) => source.turn_ending_at(sequence).ok_or_else(|| {
            RuntimeError::invalid(
                "at_sequence",
                format!(
                    "{sequence} is not the sequence of a turn's end (a turn_completed event) \
                     in session {}",
                    source.id()
                ),
            )
        }),
    }
}

fn turn_end(session: &SessionHandle, turn: u64, field: &str) -> Result<TurnEndRef> {
    if turn == 0 {
        return Err(RuntimeError::invalid(field, "turns are numbered from 1"));
    }
    session.turn_end(turn).ok_or_else(|| {
        RuntimeError::invalid(
            field,
            format!(
                "session {} has {} ended turn(s); there is no turn {turn}",
                session.id(),
                session.stats().turn_count
            ),
        )
    })
}

async fn read_manifest(store: &SnapshotStore, end: TurnEndRef) -> Result<Manifest> {
    let store = store.clone();
    tokio::task::spawn_blocking(move || store.manifest(end.turn, end.turn_id))
        .await
        .map_err(|e| RuntimeError::storage("read snapshot", std::io::Error::other(e)))?
        .map_err(RuntimeError::from)
}

/// Materializes a fork's cell (only `data/`; the first turn prepares the rest) in a
/// staging folder beside the cells, then renames it into place. Answers the head
/// manifest of its workspace.
fn build_cell(
    sandbox_root: &Path,
    cell: &CellPaths,
    store: &SnapshotStore,
    manifest: &Manifest,
    owner: Option<(u32, u32)>,
) -> Result<Manifest> {
    let create = |dir: &Path| {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| RuntimeError::storage(format!("create {}", dir.display()), e))
    };
    create(sandbox_root)?;
    let staging = staging_path(sandbox_root, FORK_STAGING);
    create(&staging)?;
    let built = store
        .restore(manifest, &CellPaths::under(staging.clone()).data, owner)
        .map_err(RuntimeError::from)
        .and_then(|head| {
            std::fs::rename(&staging, &cell.root)
                .map_err(|e| RuntimeError::storage(format!("create {}", cell.root.display()), e))?;
            Ok(head)
        });
    if built.is_err() {
        let _ = crate::sandbox::remove_tree(&staging);
    }
    built
}

/// Replaces the cell's `data/` with `manifest`'s workspace: built beside it, swapped in
/// with one atomic exchange, the old tree removed after.
fn replace_workspace(
    cell: &CellPaths,
    store: &SnapshotStore,
    manifest: &Manifest,
    owner: Option<(u32, u32)>,
) -> Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&cell.root)
        .map_err(|e| RuntimeError::storage(format!("create {}", cell.root.display()), e))?;
    remove_staging(&cell.root, REWIND_STAGING, None);
    let staging = staging_path(&cell.root, REWIND_STAGING);
    let mut head = match store.restore(manifest, &staging, owner) {
        Ok(head) => head,
        Err(e) => {
            let _ = crate::sandbox::remove_tree(&staging);
            return Err(e.into());
        }
    };
    let swapped = if cell.data.exists() {
        rustix::fs::renameat_with(
            rustix::fs::CWD,
            &staging,
            rustix::fs::CWD,
            &cell.data,
            rustix::fs::RenameFlags::EXCHANGE,
        )
        .map_err(std::io::Error::from)
    } else {
        std::fs::rename(&staging, &cell.data)
    };
    if let Err(e) = swapped {
        let _ = crate::sandbox::remove_tree(&staging);
        return Err(RuntimeError::storage(
            format!("replace {}", cell.data.display()),
            e,
        ));
    }
    if let Err(e) = crate::sandbox::remove_tree(&staging) {
        tracing::warn!(error = %e, "cannot remove the workspace a rewind replaced");
    }
    head.turn_id = manifest.turn_id;
    store.set_head(&head).map_err(RuntimeError::from)
}

fn staging_path(dir: &Path, prefix: &str) -> PathBuf {
    dir.join(format!("{prefix}-{:016x}", rand::random::<u64>()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_built_workspaces_are_removed_and_nothing_else() {
        let dir = tempfile::tempdir().expect("tempdir");
        let half = dir.path().join(format!("{FORK_STAGING}-0123"));
        std::fs::create_dir_all(half.join("data/deep")).expect("mkdir");
        std::fs::write(half.join("data/deep/f"), "x").expect("write");
        let cell = dir.path().join("01936f3e-5a10-7c3b-9d2e-4f1a2b3c4d5e");
        std::fs::create_dir_all(&cell).expect("mkdir");
        remove_staging(dir.path(), FORK_STAGING, None);
        assert!(!half.exists());
        assert!(cell.is_dir());
    }
}
