//! One session's snapshots: recording a turn's end, finding a turn's manifest, restoring
//! it into a folder, sharing a session's snapshots with its fork, and retention.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use uuid::Uuid;

use super::error::SnapshotError;
use super::manifest::Manifest;
use super::materialize::materialize;
use super::objects::ObjectStore;
use super::settings::SnapshotSettings;
use super::walk::{WalkLimits, Walked, walk};
use super::{SHARED_SNAPSHOTS_DIR, SNAPSHOTS_DIR};
use crate::events::now_ms;

const TURNS_DIR: &str = "turns";
const OBJECTS_DIR: &str = "objects";
const HEAD_FILE: &str = "head.json";
/// An estimate of the object store's bytes (an upper bound), so retention by bytes does
/// not list the store at every turn.
const USAGE_FILE: &str = "usage";

/// What recording a turn's end did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SnapshotOutcome {
    Recorded(TakenSnapshot),
    /// The workspace was past the limits: nothing was recorded, and why.
    Skipped(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TakenSnapshot {
    /// Entries of the workspace.
    pub entries: usize,
    /// Files read because they were new or changed, and their bytes.
    pub hashed_files: u64,
    pub hashed_bytes: u64,
}

/// A snapshot written but not yet on stable storage: its new objects, its manifest and
/// the manifest's folder entry still to be synced.
#[derive(Debug)]
pub struct UnsyncedSnapshot {
    objects: ObjectStore,
    fresh_objects: Vec<PathBuf>,
    manifest: PathBuf,
    turns_dir: PathBuf,
}

impl UnsyncedSnapshot {
    /// Makes the snapshot durable: the objects first, then the manifest naming them.
    pub fn sync(self) -> Result<(), SnapshotError> {
        self.objects.sync(&self.fresh_objects)?;
        std::fs::File::open(&self.manifest)
            .and_then(|f| f.sync_data())
            .map_err(|e| SnapshotError::io("syncing", &self.manifest, e))?;
        sync_dir(&self.turns_dir);
        Ok(())
    }
}

#[derive(Clone, Debug)]
pub struct SnapshotStore {
    root: PathBuf,
    objects: ObjectStore,
}

impl SnapshotStore {
    /// The snapshots of the session whose folder is `session_dir`.
    pub fn of_session(session_dir: &Path) -> Self {
        Self::at(session_dir.join(SNAPSHOTS_DIR))
    }

    /// The snapshots of session `session` on the workspace root `workspace_root`, which
    /// every server sharing the store mounts: `<workspace_root>/.snapshots/<session>/`.
    /// The folder is named by the id alone (a UUID the server made: hex digits and
    /// dashes), so nothing a client sends takes part in the path.
    pub fn on_workspace_root(workspace_root: &Path, session: Uuid) -> Self {
        Self::at(
            workspace_root
                .join(SHARED_SNAPSHOTS_DIR)
                .join(session.hyphenated().to_string()),
        )
    }

    fn at(root: PathBuf) -> Self {
        Self {
            objects: ObjectStore::new(root.join(OBJECTS_DIR)),
            root,
        }
    }

    /// The folder holding this store's objects, manifests and head.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn turns_dir(&self) -> PathBuf {
        self.root.join(TURNS_DIR)
    }

    fn turn_path(&self, turn: u64, turn_id: Uuid) -> PathBuf {
        self.turns_dir().join(format!("{turn:08}-{turn_id}.json"))
    }

    pub(crate) fn objects(&self) -> &ObjectStore {
        &self.objects
    }

    /// The manifest the workspace matched when it was last recorded or restored; a fresh
    /// workspace's when there is none.
    pub fn head(&self) -> Manifest {
        let path = self.root.join(HEAD_FILE);
        if !path.exists() {
            return Manifest::default();
        }
        Manifest::read(&path).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "cannot read the workspace's last snapshot; the next one reads every file");
            Manifest {
                skipped: Some("the previous snapshot is unreadable".into()),
                ..Manifest::default()
            }
        })
    }

    pub fn set_head(&self, head: &Manifest) -> Result<(), SnapshotError> {
        self.ensure_dirs()?;
        head.write(&self.root.join(HEAD_FILE))
    }

    /// Makes the turn manifest at `path` the head: a second name for the same file (a
    /// manifest is never written in place, only replaced), else a copy.
    fn link_head(&self, path: &Path, manifest: &Manifest) -> Result<(), SnapshotError> {
        let head = self.root.join(HEAD_FILE);
        let tmp = self
            .root
            .join(format!("{HEAD_FILE}.tmp-{:016x}", rand::random::<u64>()));
        let linked = std::fs::hard_link(path, &tmp).and_then(|()| std::fs::rename(&tmp, &head));
        if linked.is_err() {
            let _ = std::fs::remove_file(&tmp);
            return self.set_head(manifest);
        }
        Ok(())
    }

    /// Creates the store's folders, private to the server (they may lie on a workspace
    /// root apart from its home).
    fn ensure_dirs(&self) -> Result<(), SnapshotError> {
        let turns = self.turns_dir();
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&turns)
            .map_err(|e| SnapshotError::io("creating", &turns, e))
    }

    /// Records the workspace at `data` as it is at the end of turn `turn` (`turn_id`),
    /// durably.
    pub fn record(
        &self,
        data: &Path,
        turn: u64,
        turn_id: Uuid,
        settings: &SnapshotSettings,
    ) -> Result<SnapshotOutcome, SnapshotError> {
        let (outcome, unsynced) = self.record_unsynced(data, turn, turn_id, settings)?;
        unsynced.sync()?;
        Ok(outcome)
    }

    /// Records the workspace as [`SnapshotStore::record`] does, leaving its syncs to the
    /// caller: a turn syncs them while its end is synced, not before.
    pub fn record_unsynced(
        &self,
        data: &Path,
        turn: u64,
        turn_id: Uuid,
        settings: &SnapshotSettings,
    ) -> Result<(SnapshotOutcome, UnsyncedSnapshot), SnapshotError> {
        self.ensure_dirs()?;
        let head = self.head();
        let limits = WalkLimits {
            max_files: settings.max_workspace_files,
            max_bytes: settings.max_workspace_bytes,
        };
        let base = Manifest {
            turn_id: Some(turn_id),
            turn,
            parent: head.turn_id,
            parent_unknown: head.skipped.is_some(),
            created_at_ms: now_ms(),
            ..Manifest::default()
        };
        let mut fresh_objects = Vec::new();
        let (manifest, outcome) = match walk(data, &head, &self.objects, limits)? {
            Walked::Recorded {
                manifest,
                hashed_files,
                hashed_bytes,
                fresh,
            } => {
                fresh_objects = fresh;
                let taken = TakenSnapshot {
                    entries: manifest.entries.len(),
                    hashed_files,
                    hashed_bytes,
                };
                self.add_usage(hashed_bytes);
                let manifest = Manifest {
                    entries: manifest.entries,
                    left_out: manifest.left_out,
                    ..base
                };
                (manifest, SnapshotOutcome::Recorded(taken))
            }
            Walked::TooLarge(reason) => {
                let manifest = Manifest {
                    skipped: Some(reason.clone()),
                    ..base
                };
                (manifest, SnapshotOutcome::Skipped(reason))
            }
        };
        let path = self.turn_path(turn, turn_id);
        manifest.write_unsynced(&path)?;
        self.link_head(&path, &manifest)?;
        self.retain(settings);
        let unsynced = UnsyncedSnapshot {
            objects: self.objects.clone(),
            fresh_objects,
            manifest: path,
            turns_dir: self.turns_dir(),
        };
        Ok((outcome, unsynced))
    }

    /// The manifest of turn `turn` (`turn_id`), if it was recorded and kept.
    pub fn manifest(&self, turn: u64, turn_id: Uuid) -> Result<Manifest, SnapshotError> {
        let path = self.turn_path(turn, turn_id);
        let path = if path.exists() {
            path
        } else {
            self.find(turn_id).ok_or(SnapshotError::Missing { turn })?
        };
        let manifest = Manifest::read(&path)?;
        if let Some(reason) = manifest.skipped {
            return Err(SnapshotError::Skipped { turn, reason });
        }
        Ok(manifest)
    }

    /// The manifest of `turn_id` under whatever turn number it was recorded.
    fn find(&self, turn_id: Uuid) -> Option<PathBuf> {
        let suffix = format!("-{turn_id}.json");
        std::fs::read_dir(self.turns_dir())
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().ends_with(&suffix))
    }

    /// Whether a manifest of `turn_id` is kept (recorded or skipped).
    pub fn has(&self, turn_id: Uuid) -> bool {
        self.find(turn_id).is_some()
    }

    /// Builds `target` (a new folder) from `manifest`; answers the manifest with the new
    /// files' stats.
    pub fn restore(
        &self,
        manifest: &Manifest,
        target: &Path,
        owner: Option<(u32, u32)>,
    ) -> Result<Manifest, SnapshotError> {
        materialize(manifest, &self.objects, target, owner)
    }

    /// Copies `source`'s manifests of `turn_ids` into this store, sharing their objects
    /// (hard links to files nobody writes). Manifests `source` no longer keeps are left
    /// out.
    pub fn adopt(&self, source: &SnapshotStore, turn_ids: &[Uuid]) -> Result<usize, SnapshotError> {
        self.ensure_dirs()?;
        let mut adopted = 0;
        for turn_id in turn_ids {
            let Some(path) = source.find(*turn_id) else {
                continue;
            };
            let manifest = Manifest::read(&path)?;
            for object in manifest.objects() {
                self.objects.adopt(&source.objects, object)?;
            }
            manifest.write(&self.turn_path(manifest.turn, *turn_id))?;
            adopted += 1;
        }
        let usage = read_usage(&source.root.join(USAGE_FILE));
        self.write_usage(usage);
        Ok(adopted)
    }

    fn add_usage(&self, bytes: u64) {
        if bytes == 0 {
            return;
        }
        let usage = read_usage(&self.root.join(USAGE_FILE));
        self.write_usage(usage.saturating_add(bytes));
    }

    fn write_usage(&self, bytes: u64) {
        let _ = std::fs::write(self.root.join(USAGE_FILE), bytes.to_string());
    }

    /// Drops the oldest turn snapshots past `max_turns` (down to nine tenths of it, so
    /// the sweep that follows runs once per many turns), then, while the objects hold more
    /// than `max_bytes`, more of the oldest (never the newest), and removes objects no
    /// kept manifest refers to. Best effort: a failure is logged, never a failed turn.
    fn retain(&self, settings: &SnapshotSettings) {
        let mut turns = self.turn_files();
        let usage = read_usage(&self.root.join(USAGE_FILE));
        let over_count = turns.len() > settings.max_turns;
        if !over_count && usage <= settings.max_bytes {
            return;
        }
        if over_count {
            let keep = (settings.max_turns * 9 / 10).max(1);
            let drop = turns.len().saturating_sub(keep);
            for path in turns.drain(..drop) {
                let _ = std::fs::remove_file(path);
            }
        }
        loop {
            let bytes = self.sweep(&turns);
            self.write_usage(bytes);
            if bytes <= settings.max_bytes || turns.len() <= 1 {
                return;
            }
            let _ = std::fs::remove_file(turns.remove(0));
        }
    }

    /// The kept turn manifests, oldest first.
    fn turn_files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(self.turns_dir())
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "json"))
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        files
    }

    /// Removes the objects that neither `kept` nor the head refer to; answers the bytes
    /// left.
    fn sweep(&self, kept: &[PathBuf]) -> u64 {
        let mut referenced = std::collections::HashSet::new();
        let mut manifests: Vec<Manifest> = Vec::new();
        for path in kept {
            match Manifest::read(path) {
                Ok(m) => manifests.push(m),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read a snapshot while sweeping; nothing is removed");
                    return 0;
                }
            }
        }
        manifests.push(self.head());
        for manifest in &manifests {
            referenced.extend(manifest.objects().map(str::to_owned));
        }
        let mut bytes = 0;
        match self.objects.list() {
            Ok(objects) => {
                for (id, len) in objects {
                    if referenced.contains(&id) {
                        bytes += len;
                    } else {
                        self.objects.remove(&id);
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot list the snapshot objects"),
        }
        bytes
    }
}

fn read_usage(path: &Path) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}
