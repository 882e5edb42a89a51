//! Which mechanism each session's workspace uses on this server, and the overlay mounts
//! this process made.
//!
//! The mechanism is chosen once, at start (`snapshots.mechanism`): `auto` takes overlay
//! layers when [`overlay::probe`] mounts one under `<home>/overlay`, copies elsewhere. A
//! session keeps the mechanism its workspace was made with: it is an overlay session when
//! `<home>/overlay/sessions/<id>/` exists (created when its workspace is first mounted),
//! a copies session otherwise. A session whose workspace already holds files or copies
//! snapshots (made before the server switched) stays a copies session, and an overlay
//! session is served as long as the server can mount, whatever new sessions get.
//!
//! Workspaces are mounted lazily, when a session's cell is prepared (its first turn,
//! command or tool call since the server started): a start costs nothing per session on
//! disk. A mount a killed server left on `data/` is replaced then; the upper folder, and
//! so what an interrupted turn wrote, is kept.
//!
//! The mounts live in the process's mount namespace. `odysseyd` enters one of its own at
//! start (as root; see `odyssey_sandbox::host::enter_own_mount_namespace`), so its mounts
//! never reach the host and vanish with it: a server killed with `kill -9` leaves nothing
//! mounted, and its home can be removed. The price: from the host, a session's
//! `<home>/sandbox/<id>/data` shows nothing of an overlay workspace; what it holds is
//! under `<home>/overlay/` (layers and upper folders). An embedded runtime (which cannot
//! unshare a process that may already run threads) mounts in its process's namespace,
//! and a mount a killed process left there is replaced when its session is next used.
//! Every mount this process made is unmounted at shutdown, and when the runtime is
//! dropped.

use std::collections::HashMap;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use uuid::Uuid;

use super::overlay::{self, OverlayStore, UnsyncedLayer};
use super::settings::{MechanismChoice, SnapshotMechanism, SnapshotSettings};
use super::{SNAPSHOTS_DIR, SnapshotError, TurnChanges};
use crate::error::{Result, RuntimeError};

/// The folder of layers and per-session stacks, under the home (outside every cell).
pub const OVERLAY_DIR: &str = "overlay";
const SESSIONS_DIR: &str = "sessions";

/// The mode of a workspace's root folder (a cell's `data/` has the same).
const WORKSPACE_MODE: u32 = 0o700;

/// The mechanism of new sessions, and the overlay mounts of this process.
#[derive(Debug)]
pub struct Workspaces {
    mechanism: SnapshotMechanism,
    /// What the operator asked for: under `auto`, a session whose agent runs stdio MCP
    /// servers gets copies (see [`Workspaces::prepare`]).
    choice: MechanismChoice,
    reason: String,
    root: PathBuf,
    /// The layers, when this server can mount them; else why not.
    store: std::result::Result<OverlayStore, String>,
    /// The workspaces this process mounted, by session: a session is mounted once, and
    /// every mount change holds this lock (mounts take milliseconds).
    mounted: Mutex<HashMap<Uuid, PathBuf>>,
}

impl Workspaces {
    /// Chooses the mechanism of new sessions under `home`: an error (naming the reason)
    /// only when `overlay` is asked for and cannot be mounted, or the store is `shared`
    /// with other servers. Those read a session's snapshots from the workspace root they
    /// all mount, which only copies are kept on (overlay layers live under one server's
    /// home and are mounted in its own mount namespace): `auto` then means copies.
    pub fn open(home: &Path, settings: &SnapshotSettings, shared: bool) -> Result<Self> {
        if shared {
            if settings.enabled && settings.mechanism == MechanismChoice::Overlay {
                return Err(RuntimeError::invalid(
                    "snapshots.mechanism",
                    "is \"overlay\", but the store is shared with other servers, which \
                     could not see a session's overlay layers; use \"copies\" or \"auto\"",
                ));
            }
            if settings.mechanism == MechanismChoice::Auto {
                let copies = SnapshotSettings {
                    mechanism: MechanismChoice::Copies,
                    ..settings.clone()
                };
                let mut workspaces = Self::open(home, &copies, false)?;
                if settings.enabled {
                    workspaces.reason =
                        "the store is shared with other servers, which read snapshots from \
                         the workspace root"
                            .to_owned();
                }
                return Ok(workspaces);
            }
        }
        let root = home.join(OVERLAY_DIR);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&root)
            .map_err(|e| RuntimeError::storage(format!("create {}", root.display()), e))?;
        let has_sessions = std::fs::read_dir(root.join(SESSIONS_DIR))
            .is_ok_and(|mut entries| entries.next().is_some());
        let wanted = settings.enabled && settings.mechanism != MechanismChoice::Copies;
        let probed = if wanted || has_sessions {
            overlay::probe(&root).map_err(|e| e.to_string())
        } else {
            Err("overlays were not tried".to_owned())
        };
        let (mechanism, reason) = match (settings.enabled, settings.mechanism, &probed) {
            (false, _, _) => (
                SnapshotMechanism::Copies,
                "snapshots are off (snapshots.enabled = false)".to_owned(),
            ),
            (true, MechanismChoice::Copies, _) => (
                SnapshotMechanism::Copies,
                "snapshots.mechanism is \"copies\"".to_owned(),
            ),
            (true, MechanismChoice::Overlay, Err(why)) => {
                return Err(RuntimeError::invalid(
                    "snapshots.mechanism",
                    format!(
                        "is \"overlay\", but this server cannot mount an overlay under {}: {why}",
                        root.display()
                    ),
                ));
            }
            (true, MechanismChoice::Overlay, Ok(())) => (
                SnapshotMechanism::Overlay,
                "snapshots.mechanism is \"overlay\"".to_owned(),
            ),
            (true, MechanismChoice::Auto, Ok(())) => (
                SnapshotMechanism::Overlay,
                format!("an overlay mounts under {}", root.display()),
            ),
            (true, MechanismChoice::Auto, Err(why)) => (
                SnapshotMechanism::Copies,
                format!("no overlay mounts under {}: {why}", root.display()),
            ),
        };
        Ok(Self {
            mechanism,
            choice: settings.mechanism,
            reason,
            store: probed.map(|()| OverlayStore::new(root.clone())),
            root,
            mounted: Mutex::new(HashMap::new()),
        })
    }

    /// The mechanism new sessions get.
    pub fn mechanism(&self) -> SnapshotMechanism {
        self.mechanism
    }

    /// Why that mechanism (for the log line at start).
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// Whether the workspace of `session` is an overlay.
    pub fn is_overlay(&self, session: Uuid) -> bool {
        self.root
            .join(SESSIONS_DIR)
            .join(session.to_string())
            .is_dir()
    }

    fn store(&self, session: Uuid) -> Result<&OverlayStore> {
        self.store.as_ref().map_err(|why| {
            RuntimeError::FailedPrecondition(format!(
                "the workspace of session {session} is made of overlay layers, which this \
                 server cannot mount ({why})"
            ))
        })
    }

    /// Mounts the workspace of `session` on `data` (its cell's `data/`, just prepared)
    /// unless this process did already: an overlay session's, or, with `new_in` (the
    /// session's folder), a new session's when new sessions get overlays. Copies
    /// snapshots in that folder, or files in `data`, keep a session a copies session; a
    /// sub-agent working in another session's workspace passes no `new_in` (it has no
    /// layers of its own).
    ///
    /// `runs_servers` says the session's agent runs stdio MCP servers. Those stay up
    /// across a session's turns on copies; an overlay turn end must stop them (a process
    /// still in the workspace would keep the old mount and write into the new layer). So
    /// under `snapshots.mechanism = "auto"` such a session gets copies, and only an
    /// operator asking for `overlay` trades the servers' state for layers. Blocking.
    pub fn prepare(
        &self,
        session: Uuid,
        data: &Path,
        owner: Option<(u32, u32)>,
        new_in: Option<&Path>,
        runs_servers: bool,
    ) -> Result<()> {
        let mut mounted = crate::sync::lock(&self.mounted);
        if mounted.contains_key(&session) {
            return Ok(());
        }
        let overlay = self.is_overlay(session)
            || (self.mechanism == SnapshotMechanism::Overlay
                && !(runs_servers && self.choice == MechanismChoice::Auto)
                && new_in.is_some_and(|dir| !dir.join(SNAPSHOTS_DIR).exists())
                && is_empty_dir(data));
        if !overlay {
            return Ok(());
        }
        let store = self.store(session)?;
        mount_point(data, owner)?;
        store.mount(session, data, owner, WORKSPACE_MODE)?;
        mounted.insert(session, data.to_path_buf());
        Ok(())
    }

    /// Ends a turn of the overlay session `session` (its processes killed): its writes
    /// become the layer of turn `turn`; the session keeps its newest `max_turns` turns
    /// whose layers fit in `max_bytes`. Blocking.
    pub fn commit(
        &self,
        session: Uuid,
        data: &Path,
        turn: u64,
        turn_id: Uuid,
        (max_turns, max_bytes): (usize, u64),
        owner: Option<(u32, u32)>,
    ) -> Result<UnsyncedLayer> {
        let mut mounted = crate::sync::lock(&self.mounted);
        let store = self.store(session)?;
        if let std::collections::hash_map::Entry::Vacant(entry) = mounted.entry(session) {
            // A turn that ended before its cell was prepared: its workspace is mounted
            // first (what an interrupted turn left in the upper folder is committed).
            mount_point(data, owner)?;
            store.mount(session, data, owner, WORKSPACE_MODE)?;
            entry.insert(data.to_path_buf());
        }
        Ok(store.commit_retaining(session, data, turn, turn_id, max_turns, max_bytes)?)
    }

    /// Merges the oldest layers of the overlay session `session` into one when its
    /// workspace stacks too many (see [`OverlayStore::squash`]), then removes the layers
    /// no session names any more. Its cost follows the size of the merged tree, so it
    /// runs after a turn's end, off its path; the workspace stays mounted meanwhile.
    /// Blocking.
    pub fn squash_if_needed(&self, session: Uuid) -> Result<()> {
        let store = self.store(session)?;
        if !store.needs_squash(session)? {
            return Ok(());
        }
        if let Some(squashed) = store.squash(session)? {
            tracing::debug!(session = %session, ?squashed, "workspace layers squashed");
            self.collect_garbage()?;
        }
        Ok(())
    }

    /// The files turn `turn` (number, id) of the overlay session `session` added,
    /// changed or removed, read from the turn's own layer against the layers beneath it.
    /// Blocking.
    pub fn turn_changes(&self, session: Uuid, (turn, turn_id): (u64, Uuid)) -> Result<TurnChanges> {
        let store = self.store(session)?;
        store
            .turn_changes(session, turn_id)
            .map_err(|e| no_longer_kept(e, turn))
    }

    /// Gives the new session `fork` the workspace the overlay session `source` had at the
    /// end of `turn` (number, id; its layers, shared), mounted on `data`. Blocking.
    pub fn fork(
        &self,
        source: Uuid,
        (turn, turn_id): (u64, Uuid),
        fork: Uuid,
        data: &Path,
        owner: Option<(u32, u32)>,
    ) -> Result<()> {
        let mut mounted = crate::sync::lock(&self.mounted);
        let store = self.store(source)?;
        mount_point(data, owner)?;
        store
            .fork(source, turn_id, fork, data)
            .map_err(|e| no_longer_kept(e, turn))?;
        mounted.insert(fork, data.to_path_buf());
        Ok(())
    }

    /// Puts the workspace of the overlay session `session` back to the end of `turn`
    /// (number, id), mounted on `data`. Blocking.
    pub fn rewind(
        &self,
        session: Uuid,
        (turn, turn_id): (u64, Uuid),
        data: &Path,
        owner: Option<(u32, u32)>,
    ) -> Result<()> {
        let mut mounted = crate::sync::lock(&self.mounted);
        let store = self.store(session)?;
        mount_point(data, owner)?;
        store
            .rewind(session, turn_id, data)
            .map_err(|e| no_longer_kept(e, turn))?;
        mounted.insert(session, data.to_path_buf());
        Ok(())
    }

    /// Unmounts the workspace of `session` and removes its upper folder and stack (its
    /// processes killed). Its layers go with the next [`Workspaces::collect_garbage`].
    /// Blocking.
    pub fn remove(&self, session: Uuid, data: &Path) -> Result<()> {
        let mut mounted = crate::sync::lock(&self.mounted);
        mounted.remove(&session);
        if !self.is_overlay(session) {
            return Ok(());
        }
        match &self.store {
            Ok(store) => Ok(store.remove(session, data)?),
            // Nothing here was ever mounted: the folders can go all the same.
            Err(_) => OverlayStore::new(self.root.clone())
                .remove(session, data)
                .map_err(RuntimeError::from),
        }
    }

    /// Removes the layers no session names any more; answers how many. Holds the mount
    /// lock, so no turn's end, fork or rewind is between making a layer and naming it.
    /// Blocking.
    pub fn collect_garbage(&self) -> std::result::Result<usize, SnapshotError> {
        let _mounted = crate::sync::lock(&self.mounted);
        match &self.store {
            Ok(store) => store.collect_garbage(),
            Err(_) => Ok(0),
        }
    }

    /// Unmounts every workspace this process mounted (the server is stopping). A mount
    /// still in use is detached. Blocking.
    pub fn unmount_all(&self) {
        let mut mounted = crate::sync::lock(&self.mounted);
        for (session, data) in mounted.drain() {
            if let Err(e) = overlay::unmount_overlay(&data) {
                tracing::warn!(session = %session, error = %e, "cannot unmount a workspace");
            }
        }
    }

    /// Whether `session` is an overlay session this process has not mounted yet (its
    /// `data/` shows nothing of it until then).
    pub fn awaits_mount(&self, session: Uuid) -> bool {
        self.is_overlay(session) && !crate::sync::lock(&self.mounted).contains_key(&session)
    }

    /// How many workspaces this process has mounted now.
    pub fn mounted(&self) -> usize {
        crate::sync::lock(&self.mounted).len()
    }
}

impl Drop for Workspaces {
    fn drop(&mut self) {
        self.unmount_all();
    }
}

/// A turn whose layers were dropped (past `snapshots.max_turns`), said with its number.
fn no_longer_kept(e: SnapshotError, turn: u64) -> RuntimeError {
    match e {
        SnapshotError::NoLayers { .. } => RuntimeError::FailedPrecondition(format!(
            "the workspace at the end of turn {turn} is no longer kept (a session keeps \
             the newest snapshots.max_turns turns)"
        )),
        e => e.into(),
    }
}

fn is_empty_dir(path: &Path) -> bool {
    std::fs::read_dir(path).is_ok_and(|mut entries| entries.next().is_none())
}

/// Creates the folder a workspace is mounted on (and its cell's root) when missing.
fn mount_point(data: &Path, owner: Option<(u32, u32)>) -> Result<()> {
    if data.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(WORKSPACE_MODE)
        .create(data)
        .map_err(|e| RuntimeError::storage(format!("create {}", data.display()), e))?;
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::lchown(data, Some(uid), Some(gid))
            .map_err(|e| RuntimeError::storage(format!("hand over {}", data.display()), e))?;
    }
    Ok(())
}
