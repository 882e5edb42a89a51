//! The layers of every session, and each session's stack of them.
//!
//! A layer is the upper folder of one turn, moved aside at the turn's end: it is never
//! written again, only mounted read-only beneath a session's workspace, so many sessions
//! (a fork and its source) share it. A layer is kept while any session's stack names it,
//! for its running workspace or a kept turn; [`OverlayStore::collect_garbage`] removes the
//! others, off the turn path.

use std::collections::HashSet;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::mount::{
    MAX_LOWER_LAYERS, OverlaySpec, mount_overlay, unmount_overlay, unmount_overlay_strict,
};
use crate::snapshot::SnapshotError;

const LAYERS_DIR: &str = "layers";
const SESSIONS_DIR: &str = "sessions";
/// The empty layer at the bottom of every stack (an overlay needs one lower layer).
const BASE_DIR: &str = "base";
const UPPER_DIR: &str = "upper";
const WORK_DIR: &str = "work";
const STACK_FILE: &str = "stack.json";

/// One session's layers: those beneath its running workspace, and those of each kept
/// turn's end. Layers are named by id, bottom first.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stack {
    pub current: Vec<String>,
    pub turns: Vec<TurnLayers>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnLayers {
    pub turn: u64,
    pub turn_id: Uuid,
    pub layers: Vec<String>,
}

impl Stack {
    fn of_turn(&self, turn_id: Uuid) -> Option<&TurnLayers> {
        self.turns.iter().find(|t| t.turn_id == turn_id)
    }
}

/// What a turn's end committed, still to be synced (a turn syncs it while its end is
/// synced, not before).
#[derive(Debug)]
pub struct UnsyncedLayer {
    /// The new layer, when the turn wrote anything.
    pub layer: Option<PathBuf>,
    /// The stack naming it, and its folder.
    stack: PathBuf,
}

impl UnsyncedLayer {
    /// Puts the layer's files and folders on stable storage, then the stack naming it:
    /// its cost follows what the turn wrote, not the workspace.
    pub fn sync(&self) -> Result<(), SnapshotError> {
        if let Some(layer) = &self.layer {
            sync_tree(layer)?;
        }
        std::fs::File::open(&self.stack)
            .and_then(|f| f.sync_data())
            .map_err(|e| SnapshotError::io("syncing", &self.stack, e))?;
        if let Some(dir) = self.stack.parent() {
            sync_dir(dir);
        }
        Ok(())
    }
}

/// The layers and stacks under one folder (`<home>/overlay`), outside every sandbox cell.
#[derive(Clone, Debug)]
pub struct OverlayStore {
    root: PathBuf,
}

impl OverlayStore {
    pub fn new(root: PathBuf) -> Self {
        Self { root }
    }

    fn layer(&self, id: &str) -> PathBuf {
        self.root.join(LAYERS_DIR).join(id)
    }

    fn base(&self) -> PathBuf {
        self.root.join(BASE_DIR)
    }

    fn session_dir(&self, session: Uuid) -> PathBuf {
        self.root.join(SESSIONS_DIR).join(session.to_string())
    }

    /// The running turn's writes of `session`.
    pub fn upper(&self, session: Uuid) -> PathBuf {
        self.session_dir(session).join(UPPER_DIR)
    }

    fn work(&self, session: Uuid) -> PathBuf {
        self.session_dir(session).join(WORK_DIR)
    }

    /// The stack of `session`; an empty one for a session that has none yet.
    pub fn stack(&self, session: Uuid) -> Result<Stack, SnapshotError> {
        let path = self.session_dir(session).join(STACK_FILE);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| SnapshotError::Corrupt {
                path,
                message: e.to_string(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Stack::default()),
            Err(e) => Err(SnapshotError::io("reading", path, e)),
        }
    }

    /// Replaces the stack of `session`, durably (a new file renamed over the old).
    fn set_stack(&self, session: Uuid, stack: &Stack) -> Result<(), SnapshotError> {
        let path = self.set_stack_unsynced(session, stack)?;
        std::fs::File::open(&path)
            .and_then(|f| f.sync_data())
            .map_err(|e| SnapshotError::io("syncing", &path, e))?;
        sync_dir(&self.session_dir(session));
        Ok(())
    }

    /// Replaces the stack of `session` (a new file renamed over the old), leaving its
    /// sync to the caller; answers its path.
    fn set_stack_unsynced(&self, session: Uuid, stack: &Stack) -> Result<PathBuf, SnapshotError> {
        let dir = self.session_dir(session);
        let path = dir.join(STACK_FILE);
        let tmp = dir.join(format!("{STACK_FILE}.tmp-{:016x}", rand::random::<u64>()));
        let bytes = serde_json::to_vec(stack).map_err(|e| SnapshotError::Corrupt {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let written = (|| {
            use std::io::Write;
            let mut file = std::fs::File::create(&tmp)?;
            file.write_all(&bytes)?;
            std::fs::rename(&tmp, &path)
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(SnapshotError::io("writing", path, e));
        }
        Ok(path)
    }

    fn ensure_dirs(&self, session: Uuid) -> Result<(), SnapshotError> {
        for dir in [
            self.root.join(LAYERS_DIR),
            self.base(),
            self.session_dir(session),
        ] {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&dir)
                .map_err(|e| SnapshotError::io("creating", &dir, e))?;
        }
        let base = self.base();
        // The base is the root of a fresh workspace; its mode shows through nothing
        // (the upper folder's root gives the workspace's), but it must stay empty.
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| SnapshotError::io("setting the mode of", &base, e))
    }

    /// Mounts the workspace of `session` on `data` (an existing folder): its current
    /// layers beneath its upper folder, both created for a new session (the upper folder
    /// owned by `owner`, with `mode`). A mount left there (a server killed mid-turn) is
    /// replaced; the upper folder, and so what the interrupted turn wrote, is kept.
    pub fn mount(
        &self,
        session: Uuid,
        data: &Path,
        owner: Option<(u32, u32)>,
        mode: u32,
    ) -> Result<(), SnapshotError> {
        self.ensure_dirs(session)?;
        unmount_overlay(data)?;
        let upper = self.upper(session);
        if !upper.exists() {
            fresh_dir(&upper, owner, mode)?;
        }
        let stack = self.stack(session)?;
        self.mount_stack(session, &stack.current, data)
    }

    fn mount_stack(
        &self,
        session: Uuid,
        layers: &[String],
        data: &Path,
    ) -> Result<(), SnapshotError> {
        // A volatile mount leaves its mark in its work folder, which refuses the next
        // mount: each mount gets a fresh one.
        let work = self.work(session);
        if work.exists() {
            std::fs::remove_dir_all(&work).map_err(|e| SnapshotError::io("removing", &work, e))?;
        }
        fresh_dir(&work, None, 0o700)?;
        let mut lowers: Vec<PathBuf> = layers.iter().rev().map(|id| self.layer(id)).collect();
        lowers.push(self.base());
        mount_overlay(
            &OverlaySpec {
                lowers: &lowers,
                upper: &self.upper(session),
                work: &work,
            },
            data,
        )
    }

    /// Ends a turn of `session` (its processes killed): the workspace is unmounted, the
    /// running turn's writes become a layer (none when it wrote nothing), a fresh upper
    /// folder takes the next turn's, and the workspace is mounted again. Recorded as the
    /// layers of turn `turn` (`turn_id`); only the `max_turns` newest turns are kept.
    pub fn commit(
        &self,
        session: Uuid,
        data: &Path,
        turn: u64,
        turn_id: Uuid,
        max_turns: usize,
    ) -> Result<UnsyncedLayer, SnapshotError> {
        let mut stack = self.stack(session)?;
        let upper = self.upper(session);
        let root = std::fs::symlink_metadata(&upper)
            .map_err(|e| SnapshotError::io("reading", &upper, e))?;
        unmount_overlay_strict(data)?;
        let wrote = std::fs::read_dir(&upper)
            .map_err(|e| SnapshotError::io("reading", &upper, e))?
            .next()
            .is_some();
        let mut layer = None;
        if wrote && stack.current.len() >= MAX_LOWER_LAYERS {
            self.mount_stack(session, &stack.current, data)?;
            return Err(SnapshotError::io(
                "adding a layer to",
                data,
                std::io::Error::other(format!(
                    "the workspace already stacks {MAX_LOWER_LAYERS} layers"
                )),
            ));
        }
        if wrote {
            let id = Uuid::now_v7().to_string();
            let path = self.layer(&id);
            std::fs::rename(&upper, &path).map_err(|e| SnapshotError::io("moving", &upper, e))?;
            if let Err(e) = fresh_dir(&upper, Some((root.uid(), root.gid())), root.mode() & 0o7777)
            {
                // The writes go back where the next mount finds them.
                let _ = std::fs::remove_dir(&upper);
                let _ = std::fs::rename(&path, &upper);
                return Err(e);
            }
            stack.current.push(id);
            layer = Some(path);
        }
        stack.turns.push(TurnLayers {
            turn,
            turn_id,
            layers: stack.current.clone(),
        });
        let excess = stack.turns.len().saturating_sub(max_turns.max(1));
        stack.turns.drain(..excess);
        self.mount_stack(session, &stack.current, data)?;
        let stack = self.set_stack_unsynced(session, &stack)?;
        Ok(UnsyncedLayer { layer, stack })
    }

    /// The layers of `session` at the end of `turn_id`, if kept.
    pub fn turn_layers(&self, session: Uuid, turn_id: Uuid) -> Result<Vec<String>, SnapshotError> {
        let stack = self.stack(session)?;
        stack
            .of_turn(turn_id)
            .map(|t| t.layers.clone())
            .ok_or(SnapshotError::NoLayers { turn_id })
    }

    /// Gives `fork` the workspace `source` had at the end of `turn_id` (the same layers,
    /// shared) and mounts it on `data`. The fork's kept turns are the source's up to it.
    pub fn fork(
        &self,
        source: Uuid,
        turn_id: Uuid,
        fork: Uuid,
        data: &Path,
    ) -> Result<(), SnapshotError> {
        let from = self.stack(source)?;
        let at = from
            .turns
            .iter()
            .position(|t| t.turn_id == turn_id)
            .ok_or(SnapshotError::NoLayers { turn_id })?;
        let stack = Stack {
            current: from.turns[at].layers.clone(),
            turns: from.turns[..=at].to_vec(),
        };
        let root = std::fs::symlink_metadata(self.upper(source))
            .map_err(|e| SnapshotError::io("reading", self.upper(source), e))?;
        self.ensure_dirs(fork)?;
        fresh_dir(
            &self.upper(fork),
            Some((root.uid(), root.gid())),
            root.mode() & 0o7777,
        )?;
        self.set_stack(fork, &stack)?;
        self.mount_stack(fork, &stack.current, data)
    }

    /// Puts the workspace of `session` back to the end of `turn_id`: what was written
    /// since is dropped, the turn's layers are mounted. Kept turns after it stay kept.
    pub fn rewind(&self, session: Uuid, turn_id: Uuid, data: &Path) -> Result<(), SnapshotError> {
        let mut stack = self.stack(session)?;
        let layers = stack
            .of_turn(turn_id)
            .map(|t| t.layers.clone())
            .ok_or(SnapshotError::NoLayers { turn_id })?;
        let upper = self.upper(session);
        let root = std::fs::symlink_metadata(&upper)
            .map_err(|e| SnapshotError::io("reading", &upper, e))?;
        unmount_overlay(data)?;
        let dropped = self
            .session_dir(session)
            .join(format!(".dropped-{:016x}", rand::random::<u64>()));
        std::fs::rename(&upper, &dropped).map_err(|e| SnapshotError::io("moving", &upper, e))?;
        fresh_dir(&upper, Some((root.uid(), root.gid())), root.mode() & 0o7777)?;
        stack.current = layers;
        self.set_stack(session, &stack)?;
        self.mount_stack(session, &stack.current, data)?;
        remove_all(&dropped);
        Ok(())
    }

    /// Unmounts the workspace of `session` and removes its upper folder and stack; the
    /// layers no other session names go with the next [`OverlayStore::collect_garbage`].
    pub fn remove(&self, session: Uuid, data: &Path) -> Result<(), SnapshotError> {
        unmount_overlay(data)?;
        let dir = self.session_dir(session);
        if dir.exists() {
            remove_all(&dir);
        }
        Ok(())
    }

    /// Removes the layers no session's stack names (running workspace or kept turn);
    /// answers how many. A stack that cannot be read keeps every layer.
    pub fn collect_garbage(&self) -> Result<usize, SnapshotError> {
        let sessions = self.root.join(SESSIONS_DIR);
        let mut used = HashSet::new();
        let entries = match std::fs::read_dir(&sessions) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(SnapshotError::io("listing", sessions, e)),
        };
        for entry in entries.flatten() {
            let Ok(session) = entry.file_name().to_string_lossy().parse::<Uuid>() else {
                continue;
            };
            let stack = self.stack(session)?;
            used.extend(stack.current);
            used.extend(stack.turns.into_iter().flat_map(|t| t.layers));
        }
        let layers = self.root.join(LAYERS_DIR);
        let mut removed = 0;
        for entry in std::fs::read_dir(&layers)
            .map_err(|e| SnapshotError::io("listing", &layers, e))?
            .flatten()
        {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !used.contains(&name) {
                remove_all(&entry.path());
                removed += 1;
            }
        }
        Ok(removed)
    }
}

/// Creates `path` with `mode`, owned by `owner`.
fn fresh_dir(path: &Path, owner: Option<(u32, u32)>, mode: u32) -> Result<(), SnapshotError> {
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(path)
        .map_err(|e| SnapshotError::io("creating", path, e))?;
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::lchown(path, Some(uid), Some(gid))
            .map_err(|e| SnapshotError::io("setting the owner of", path, e))?;
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| SnapshotError::io("setting the mode of", path, e))
}

fn remove_all(path: &Path) {
    if let Err(e) = std::fs::remove_dir_all(path) {
        tracing::warn!(path = %path.display(), error = %e, "cannot remove a workspace layer");
    }
}

fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Syncs every regular file and folder of `root` (no link followed), then `root`'s parent.
fn sync_tree(root: &Path) -> Result<(), SnapshotError> {
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| SnapshotError::io("listing", &dir, e))?;
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() {
                let path = entry.path();
                std::fs::File::open(&path)
                    .and_then(|f| f.sync_data())
                    .map_err(|e| SnapshotError::io("syncing", &path, e))?;
            }
        }
        sync_dir(&dir);
    }
    if let Some(parent) = root.parent() {
        sync_dir(parent);
    }
    Ok(())
}
