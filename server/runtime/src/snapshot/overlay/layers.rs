//! The layers of every session, and each session's stack of them.
//!
//! A layer is the upper folder of one turn, moved aside at the turn's end: it is never
//! written again, only mounted read-only beneath a session's workspace, so many sessions
//! (a fork and its source) share it. A layer is kept while any session's stack names it,
//! for its running workspace or a kept turn; [`OverlayStore::collect_garbage`] removes the
//! others, off the turn path.
//!
//! Retention: only the `max_turns` newest kept turns, and while the layers a session's
//! kept turns and workspace use hold more than `max_bytes`, fewer (never the newest).
//! Each layer's size is measured once, when it is made, and recorded in the stack, so
//! retention never walks a layer. The order of writers is in [`super::lock`].

use std::collections::{BTreeMap, HashSet};
use std::os::fd::OwnedFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::lock;
use super::mount::{
    MAX_LOWER_LAYERS, OverlaySpec, mount_overlay, unmount_overlay, unmount_overlay_strict,
};
use super::tree;
use crate::snapshot::SnapshotError;

const LAYERS_DIR: &str = "layers";
const SESSIONS_DIR: &str = "sessions";
/// The empty layer at the bottom of every stack (an overlay needs one lower layer).
const BASE_DIR: &str = "base";
const UPPER_DIR: &str = "upper";
const WORK_DIR: &str = "work";
const STACK_FILE: &str = "stack.json";
const LOCK_FILE: &str = "lock";
/// Layers being built by a squash, not yet named by any stack.
pub(super) const STAGING_DIR: &str = "staging";
/// Layers the collector took out of `layers/`, removed once it lets go of the store.
const TRASH_DIR: &str = "trash";

/// One session's layers: those beneath its running workspace, and those of each kept
/// turn's end. Layers are named by id, bottom first.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stack {
    pub current: Vec<String>,
    pub turns: Vec<TurnLayers>,
    /// The layers the workspace is mounted on when they differ from `current` (a squash
    /// replaced some of them while it was mounted): kept until the next mount.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mounted: Vec<String>,
    /// Bytes each layer occupies on disk, measured once when it was made.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sizes: BTreeMap<String, u64>,
    /// The turn whose end the workspace started from (0 for a fresh workspace).
    #[serde(default)]
    pub at_turn: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnLayers {
    pub turn: u64,
    pub turn_id: Uuid,
    pub layers: Vec<String>,
    /// How many of `layers`, bottom first, the turn started from; the others hold what
    /// it wrote. `None` in stacks recorded before this was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<usize>,
    /// The turn whose end the workspace was at when this turn started (0: fresh).
    #[serde(default)]
    pub base_turn: u64,
}

impl Stack {
    pub(super) fn of_turn(&self, turn_id: Uuid) -> Option<&TurnLayers> {
        self.turns.iter().find(|t| t.turn_id == turn_id)
    }

    /// Every layer the stack names: its workspace's, the mounted ones, its kept turns'.
    pub(super) fn used(&self) -> HashSet<&str> {
        self.current
            .iter()
            .chain(&self.mounted)
            .chain(self.turns.iter().flat_map(|t| &t.layers))
            .map(String::as_str)
            .collect()
    }

    /// Bytes of the layers the stack names, each counted once.
    pub fn used_bytes(&self) -> u64 {
        self.used()
            .into_iter()
            .map(|id| self.sizes.get(id).copied().unwrap_or(0))
            .fold(0, u64::saturating_add)
    }

    /// Drops the oldest kept turns past `max_turns`, then while the layers named hold
    /// more than `max_bytes`; never the newest. Sizes of layers no longer named go.
    fn retain(&mut self, max_turns: usize, max_bytes: u64) {
        let excess = self.turns.len().saturating_sub(max_turns.max(1));
        self.turns.drain(..excess);
        while self.turns.len() > 1 && self.used_bytes() > max_bytes {
            self.turns.remove(0);
        }
        let used: HashSet<String> = self.used().into_iter().map(str::to_owned).collect();
        self.sizes.retain(|id, _| used.contains(id));
    }
}

impl TurnLayers {
    /// How many of its layers the turn started from: recorded, or for an older record
    /// the stack of the kept turn before it when its layers begin with that one's.
    pub(super) fn base_in(&self, stack: &Stack) -> Option<usize> {
        if let Some(base) = self.base {
            return (base <= self.layers.len()).then_some(base);
        }
        let at = stack.turns.iter().position(|t| t.turn_id == self.turn_id)?;
        let before = at.checked_sub(1).map(|i| &stack.turns[i])?;
        self.layers
            .starts_with(&before.layers)
            .then_some(before.layers.len())
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
    /// Puts the layer's files and folders and the stack naming it on stable storage: its
    /// cost follows what the turn wrote, not the workspace. The flushes run at once, as
    /// the turn's end in the log is flushed beside them: the turn end is published only
    /// once all are done, and a crash before that may leave the stack naming a layer
    /// whose newest files are not all on disk, as it may leave the log's turn end.
    pub fn sync(&self) -> Result<(), SnapshotError> {
        if let Some(layer) = &self.layer {
            return sync_tree(layer, Some(&self.stack));
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

    pub(super) fn root(&self) -> &Path {
        &self.root
    }

    pub(super) fn layer(&self, id: &str) -> PathBuf {
        self.root.join(LAYERS_DIR).join(id)
    }

    pub(super) fn base(&self) -> PathBuf {
        self.root.join(BASE_DIR)
    }

    fn session_dir(&self, session: Uuid) -> PathBuf {
        self.root.join(SESSIONS_DIR).join(session.to_string())
    }

    /// Holds `session`'s stack for one read-change-replace.
    pub(super) fn lock_session(&self, session: Uuid) -> Result<lock::Held, SnapshotError> {
        lock::exclusive(&self.session_dir(session).join(LOCK_FILE))
    }

    /// Keeps the collector away while a layer or a stack naming layers is published.
    pub(super) fn lock_store(&self) -> Result<lock::Held, SnapshotError> {
        lock::shared(&self.root.join(LOCK_FILE))
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
    pub(super) fn set_stack(&self, session: Uuid, stack: &Stack) -> Result<(), SnapshotError> {
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
        self.commit_retaining(session, data, turn, turn_id, max_turns, u64::MAX)
    }

    /// Ends a turn as [`OverlayStore::commit`] does, and keeps only as many of the newest
    /// turns as fit in `max_bytes` (the bytes of the layers the kept turns and the
    /// workspace use, each layer once; the newest turn always stays), as the copies do
    /// with `SnapshotSettings::max_bytes`. The new layer is measured here, once: its cost
    /// follows what the turn wrote.
    ///
    /// A workspace already stacking [`MAX_LOWER_LAYERS`] layers is squashed here first,
    /// on the turn's path, rather than the turn refused: that happens only when the
    /// squash meant to run after turn ends ([`OverlayStore::squash`]) did not.
    pub fn commit_retaining(
        &self,
        session: Uuid,
        data: &Path,
        turn: u64,
        turn_id: Uuid,
        max_turns: usize,
        max_bytes: u64,
    ) -> Result<UnsyncedLayer, SnapshotError> {
        let _session = self.lock_session(session)?;
        // Taken before the workspace is unmounted, so failing to take it leaves it be.
        let _store = self.lock_store()?;
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
            let squashed = self.squash_held(session).and_then(|_| self.stack(session));
            match squashed {
                Ok(now) if now.current.len() < MAX_LOWER_LAYERS => stack = now,
                Ok(_) | Err(_) => {
                    self.mount_stack(session, &stack.current, data)?;
                    return Err(SnapshotError::io(
                        "adding a layer to",
                        data,
                        std::io::Error::other(match squashed {
                            Err(e) => format!(
                                "the workspace already stacks {MAX_LOWER_LAYERS} layers and \
                                 squashing them failed: {e}"
                            ),
                            Ok(_) => {
                                format!("the workspace already stacks {MAX_LOWER_LAYERS} layers")
                            }
                        }),
                    ));
                }
            }
        }
        let base = stack.current.len();
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
            // Past the rename the turn's writes are only reachable through the stack:
            // a layer that cannot be measured counts as empty rather than lose them.
            let size = layer_size(&path).unwrap_or_else(|e| {
                tracing::warn!(error = %e, "cannot measure a workspace layer; retention counts it empty");
                0
            });
            stack.sizes.insert(id.clone(), size);
            stack.current.push(id);
            layer = Some(path);
        }
        stack.turns.push(TurnLayers {
            turn,
            turn_id,
            layers: stack.current.clone(),
            base: Some(base),
            base_turn: stack.at_turn,
        });
        stack.at_turn = turn;
        stack.mounted.clear();
        stack.retain(max_turns, max_bytes);
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
        let _store = self.lock_store()?;
        let from = self.stack(source)?;
        let at = from
            .turns
            .iter()
            .position(|t| t.turn_id == turn_id)
            .ok_or(SnapshotError::NoLayers { turn_id })?;
        let mut stack = Stack {
            current: from.turns[at].layers.clone(),
            turns: from.turns[..=at].to_vec(),
            mounted: Vec::new(),
            sizes: from.sizes.clone(),
            at_turn: from.turns[at].turn,
        };
        stack.retain(usize::MAX, u64::MAX);
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
        let _session = self.lock_session(session)?;
        let mut stack = self.stack(session)?;
        let (layers, at_turn) = stack
            .of_turn(turn_id)
            .map(|t| (t.layers.clone(), t.turn))
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
        stack.mounted.clear();
        stack.at_turn = at_turn;
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

    /// Removes the layers no session's stack names (running workspace, mounted layers
    /// or kept turn), and what a squash that did not finish left; answers how many
    /// layers. A stack that cannot be read keeps every layer. The decision is taken
    /// alone with the store (no layer is published meanwhile) and only moves the garbage
    /// aside; removing it comes after, without holding anyone up.
    pub fn collect_garbage(&self) -> Result<usize, SnapshotError> {
        let sessions = self.root.join(SESSIONS_DIR);
        if !sessions.exists() {
            return Ok(0);
        }
        let trash = self.root.join(TRASH_DIR);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&trash)
            .map_err(|e| SnapshotError::io("creating", &trash, e))?;
        let moved = {
            let _store = lock::exclusive(&self.root.join(LOCK_FILE))?;
            let mut used = HashSet::new();
            for entry in std::fs::read_dir(&sessions)
                .map_err(|e| SnapshotError::io("listing", &sessions, e))?
                .flatten()
            {
                let Ok(session) = entry.file_name().to_string_lossy().parse::<Uuid>() else {
                    continue;
                };
                let stack = self.stack(session)?;
                used.extend(stack.used().into_iter().map(str::to_owned));
            }
            let layers = self.root.join(LAYERS_DIR);
            let mut moved = 0;
            let listing = match std::fs::read_dir(&layers) {
                Ok(listing) => listing,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
                Err(e) => return Err(SnapshotError::io("listing", &layers, e)),
            };
            for entry in listing.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if !used.contains(&name) {
                    let aside = trash.join(format!("{name}-{:016x}", rand::random::<u64>()));
                    match std::fs::rename(entry.path(), &aside) {
                        Ok(()) => moved += 1,
                        Err(e) => {
                            tracing::warn!(path = %entry.path().display(), error = %e, "cannot remove a workspace layer");
                        }
                    }
                }
            }
            moved
        };
        self.collect_staging();
        if let Ok(listing) = std::fs::read_dir(&trash) {
            for entry in listing.flatten() {
                remove_all(&entry.path());
            }
        }
        Ok(moved)
    }

    /// Removes the layers squashes were building when their process died (a layer being
    /// built is locked by its builder).
    fn collect_staging(&self) {
        let staging = self.root.join(STAGING_DIR);
        let Ok(listing) = std::fs::read_dir(&staging) else {
            return;
        };
        for entry in listing.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|x| x == "lock") {
                // A lock whose layer is gone (its builder died after moving it).
                if !path.with_extension("").exists()
                    && let Ok(Some(_held)) = lock::try_exclusive(&path)
                {
                    let _ = std::fs::remove_file(&path);
                }
                continue;
            }
            let lock_path = path.with_extension("lock");
            match lock::try_exclusive(&lock_path) {
                Ok(Some(_held)) => {
                    remove_all(&path);
                    let _ = std::fs::remove_file(&lock_path);
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "cannot check a squashed layer being built"),
            }
        }
    }
}

/// Bytes the layer at `path` occupies on disk, each entry counted (no link followed).
pub(super) fn layer_size(path: &Path) -> Result<u64, SnapshotError> {
    let root = tree::open_root(path).map_err(|e| SnapshotError::io("opening", path, e))?;
    let mut bytes = rustix::fs::fstat(&root)
        .map(|s| tree::allocated(&s))
        .unwrap_or(0);
    tree::walk(&root, |_, _, stat| {
        bytes = bytes.saturating_add(tree::allocated(stat));
        Ok(true)
    })
    .map_err(|e| SnapshotError::io("measuring", path, e))?;
    Ok(bytes)
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

pub(super) fn remove_all(path: &Path) {
    if let Err(e) = std::fs::remove_dir_all(path)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(path = %path.display(), error = %e, "cannot remove a workspace layer");
    }
}

pub(super) fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Descriptors flushed together at most, and threads flushing them: bounded, so a layer
/// of many files neither runs out of descriptors nor starts a thread per file.
const FLUSH_BATCH: usize = 64;
const FLUSH_THREADS: usize = 8;

/// How a descriptor is flushed: a file's data (and the size that reaches it), or all of a
/// folder (its entries).
#[derive(Clone, Copy)]
enum Flush {
    Data,
    All,
}

/// Descriptors waiting to be flushed, flushed a batch at a time. The flushes of a batch
/// run at once: the file system commits concurrent flushes together, so a turn end that
/// wrote one file waits for about one flush, not one per file and folder.
#[derive(Default)]
struct Flushes {
    pending: Vec<(OwnedFd, Flush)>,
}

impl Flushes {
    fn add(&mut self, fd: OwnedFd, how: Flush) -> std::io::Result<()> {
        self.pending.push((fd, how));
        if self.pending.len() >= FLUSH_BATCH {
            self.flush()?;
        }
        Ok(())
    }

    fn add_path(&mut self, path: &Path, how: Flush) -> std::io::Result<()> {
        let file = std::fs::File::open(path)?;
        self.add(OwnedFd::from(file), how)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let batch = std::mem::take(&mut self.pending);
        let per_thread = batch.len().div_ceil(FLUSH_THREADS).max(1);
        std::thread::scope(|scope| {
            let mut running = Vec::new();
            for part in batch.chunks(per_thread) {
                running.push(std::thread::Builder::new().spawn_scoped(scope, move || {
                    part.iter().try_for_each(|(fd, how)| match how {
                        Flush::Data => rustix::fs::fdatasync(fd),
                        Flush::All => rustix::fs::fsync(fd),
                    })
                })?);
            }
            running
                .into_iter()
                .try_for_each(|thread| match thread.join() {
                    Ok(flushed) => flushed.map_err(std::io::Error::from),
                    Err(_) => Err(std::io::Error::other("a flush stopped")),
                })
        })
    }
}

/// Syncs every regular file and folder of `root` (no link followed, no FIFO opened),
/// `root`'s parent, and `also` (files, then their folder), the flushes of a batch at once.
pub(super) fn sync_tree(root: &Path, also: Option<&Path>) -> Result<(), SnapshotError> {
    let mut flushes = Flushes::default();
    let fd = tree::open_root(root).map_err(|e| SnapshotError::io("opening", root, e))?;
    tree::walk(&fd, |dir, name, stat| {
        match tree::Kind::of(stat) {
            tree::Kind::File => {
                let file = tree::open_child_file(dir, name)?.0;
                flushes.add(OwnedFd::from(file), Flush::Data)?;
            }
            tree::Kind::Dir => {
                let child = rustix::fs::openat(
                    dir,
                    name,
                    rustix::fs::OFlags::RDONLY
                        | rustix::fs::OFlags::DIRECTORY
                        | rustix::fs::OFlags::NOFOLLOW
                        | rustix::fs::OFlags::CLOEXEC,
                    rustix::fs::Mode::empty(),
                )?;
                flushes.add(child, Flush::All)?;
            }
            _ => {}
        }
        Ok(true)
    })
    .map_err(|e| SnapshotError::io("syncing", root, e))?;
    flushes
        .add(fd, Flush::All)
        .map_err(|e| SnapshotError::io("syncing", root, e))?;
    if let Some(parent) = root.parent() {
        flushes
            .add_path(parent, Flush::All)
            .map_err(|e| SnapshotError::io("syncing", parent, e))?;
    }
    if let Some(file) = also {
        flushes
            .add_path(file, Flush::Data)
            .map_err(|e| SnapshotError::io("syncing", file, e))?;
        if let Some(dir) = file.parent() {
            flushes
                .add_path(dir, Flush::All)
                .map_err(|e| SnapshotError::io("syncing", dir, e))?;
        }
    }
    flushes
        .flush()
        .map_err(|e| SnapshotError::io("syncing", root, e))
}
