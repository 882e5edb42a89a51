//! What a turn changed, read from its own layer against the tree beneath it, with the
//! same answer (and the same bounds and order) as the copies give from two manifests.
//!
//! A turn's own layer holds what it wrote: a regular file there is added or changed
//! (changed when the tree beneath has it and its mode or bytes differ: a file copied up
//! only for its times is no change), a whiteout removes a name, an opaque folder hides
//! everything beneath it that it does not hold itself. The tree beneath is the stack of
//! layers the turn started from, read through a view mounted nowhere ([`super::view`]):
//! one mount, then one lookup per path, however deep the stack.

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsStr;
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Dir, Stat};
use uuid::Uuid;

use super::layers::OverlayStore;
use super::tree::{self, Kind};
use super::view::detached_view;
use crate::snapshot::diff::{
    CHANGE_OVERHEAD, MAX_ANSWER_BYTES, MAX_DIFF_INPUT, MAX_FILE_DIFF, MAX_TOTAL_DIFF, bounded,
    unified,
};
use crate::snapshot::{ChangeKind, FileChange, MAX_CHANGES, NodeKind, SnapshotError, TurnChanges};

/// Entries of a layer and of the tree beneath it one answer looks at; past it the answer
/// is cut (`truncated`), whatever a sandboxed process left in its workspace.
const MAX_VISITS: usize = 1_000_000;
/// Bytes of files of equal length one answer compares to tell whether a file copied up
/// changed; past it such a file counts as changed (it was at least rewritten).
const MAX_COMPARE_BYTES: u64 = 256 << 20;
/// Bytes of files one answer reads to make diffs (files that turn out binary make no
/// diff, so the diff bound alone does not bound the reading); later files get none
/// (`diff_truncated`).
const MAX_READ_BYTES: u64 = 64 << 20;

impl OverlayStore {
    /// The files turn `turn_id` of `session` added, changed or removed, with a unified
    /// diff of each text file (bounded as the copies bound it, in path order): the same
    /// answer `GetTurnChanges` gives from the copies, read from the layer the turn wrote.
    /// A turn that wrote nothing changed nothing; a turn no longer kept is
    /// [`SnapshotError::NoLayers`].
    pub fn turn_changes(&self, session: Uuid, turn_id: Uuid) -> Result<TurnChanges, SnapshotError> {
        // No layer is collected while it is read.
        let _store = self.lock_store()?;
        let stack = self.stack(session)?;
        let kept = stack
            .of_turn(turn_id)
            .ok_or(SnapshotError::NoLayers { turn_id })?;
        let base = kept.base_in(&stack).ok_or_else(|| SnapshotError::Skipped {
            turn: kept.turn,
            reason: "the layers it started from were not recorded, so its changes are \
                         unknown"
                .into(),
        })?;
        let mut answer = TurnChanges {
            turn: kept.turn,
            turn_id,
            base_turn: kept.base_turn,
            changes: Vec::new(),
            truncated: false,
        };
        let (beneath, own) = kept.layers.split_at(base);
        let layer = match own {
            [] => return Ok(answer),
            [layer] => self.layer(layer),
            _ => {
                return Err(SnapshotError::Corrupt {
                    path: self.root().join("sessions").join(session.to_string()),
                    message: format!("turn {} names more than one layer of its own", kept.turn),
                });
            }
        };
        let layer_root =
            tree::open_root(&layer).map_err(|e| SnapshotError::io("opening", &layer, e))?;
        let below = if beneath.is_empty() {
            None
        } else {
            let mut lowers: Vec<PathBuf> = beneath.iter().rev().map(|id| self.layer(id)).collect();
            lowers.push(self.base());
            Some(detached_view(&lowers)?)
        };
        let mut scan = Scan {
            layer: &layer_root,
            beneath: below.as_ref(),
            found: BTreeMap::new(),
            visits: 0,
            compared: 0,
            truncated: false,
        };
        scan.scan()
            .map_err(|e| SnapshotError::io("reading the changes of", &layer, e))?;
        let (changes, truncated) = scan.answer();
        answer.changes = changes;
        answer.truncated = truncated;
        Ok(answer)
    }
}

/// One change found, before its diff.
struct Found {
    change: ChangeKind,
    kind: NodeKind,
    size_before: u64,
    size_after: u64,
    /// Whether both sides are regular files (or absent): a diff is made then.
    diffable: bool,
}

struct Scan<'a> {
    layer: &'a OwnedFd,
    beneath: Option<&'a OwnedFd>,
    /// The first changes in path order, at most [`MAX_CHANGES`] + 1.
    found: BTreeMap<String, Found>,
    visits: usize,
    compared: u64,
    truncated: bool,
}

fn node_kind(kind: Kind) -> Option<NodeKind> {
    match kind {
        Kind::Dir => Some(NodeKind::Dir),
        Kind::File => Some(NodeKind::File),
        Kind::Symlink => Some(NodeKind::Symlink),
        Kind::Whiteout | Kind::Other => None,
    }
}

fn file_size(stat: &Stat) -> u64 {
    if Kind::of(stat) == Kind::File {
        u64::try_from(stat.st_size).unwrap_or(0)
    } else {
        0
    }
}

fn stat_at(dir: &OwnedFd, name: &OsStr) -> io::Result<Option<Stat>> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => Ok(Some(stat)),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

impl Scan<'_> {
    /// Counts one entry looked at; `false` once the answer is past [`MAX_VISITS`].
    fn visit(&mut self) -> bool {
        self.visits += 1;
        if self.visits > MAX_VISITS {
            self.truncated = true;
        }
        !self.truncated
    }

    fn note(&mut self, path: String, found: Found) {
        self.found.insert(path, found);
        if self.found.len() > MAX_CHANGES {
            self.found.pop_last();
            self.truncated = true;
        }
    }

    /// Walks the layer, folder by folder, with the same folder beneath it.
    fn scan(&mut self) -> io::Result<()> {
        let mut pending: Vec<(String, bool)> = vec![(String::new(), true)];
        while let Some((rel, look)) = pending.pop() {
            let dir = tree::open_dir(self.layer, Path::new(&rel))?;
            let below = match (look, self.beneath) {
                (true, Some(beneath)) => tree::open_dir(beneath, Path::new(&rel)).ok(),
                _ => None,
            };
            let opaque = !rel.is_empty() && tree::is_opaque(&dir);
            let mut held: HashSet<Vec<u8>> = HashSet::new();
            for entry in Dir::read_from(&dir)? {
                let entry = entry?;
                let raw = entry.file_name().to_bytes();
                if raw == b"." || raw == b".." {
                    continue;
                }
                if !self.visit() {
                    return Ok(());
                }
                if opaque {
                    held.insert(raw.to_vec());
                }
                let name = OsStr::from_bytes(raw);
                // The copies leave names that are not UTF-8 out; so does this.
                let Some(utf8) = name.to_str() else {
                    continue;
                };
                let path = tree::join(&rel, utf8);
                let Some(new) = stat_at(&dir, name)? else {
                    continue;
                };
                let old = match &below {
                    Some(below) => stat_at(below, name)?,
                    None => None,
                };
                let old_kind = old.as_ref().map(Kind::of).and_then(node_kind);
                let changed = |kind: NodeKind, diffable: bool| Found {
                    change: ChangeKind::Changed,
                    kind,
                    size_before: old.as_ref().map_or(0, file_size),
                    size_after: file_size(&new),
                    diffable,
                };
                let added = |kind: NodeKind| Found {
                    change: ChangeKind::Added,
                    kind,
                    size_before: 0,
                    size_after: file_size(&new),
                    diffable: kind == NodeKind::File,
                };
                match (Kind::of(&new), old_kind) {
                    (Kind::Whiteout | Kind::Other, _) => {
                        if let Some(old) = &old {
                            self.removed(path, old)?;
                        }
                    }
                    (Kind::Dir, None) => {
                        self.note(path.clone(), added(NodeKind::Dir));
                        pending.push((path, false));
                    }
                    (Kind::Dir, Some(NodeKind::Dir)) => {
                        let same = old.as_ref().map(tree::mode_of) == Some(tree::mode_of(&new));
                        if !same {
                            self.note(path.clone(), changed(NodeKind::Dir, false));
                        }
                        pending.push((path, true));
                    }
                    (Kind::Dir, Some(_)) => {
                        self.note(path.clone(), changed(NodeKind::Dir, false));
                        pending.push((path, false));
                    }
                    (Kind::File, None) => self.note(path, added(NodeKind::File)),
                    (Kind::File, Some(NodeKind::File)) => {
                        let differs = match (&old, &below) {
                            (Some(old), Some(below)) => {
                                tree::mode_of(old) != tree::mode_of(&new)
                                    || self.differs(&dir, below, name, &new, old)?
                            }
                            _ => true,
                        };
                        if differs {
                            self.note(path, changed(NodeKind::File, true));
                        }
                    }
                    (Kind::File, Some(other)) => {
                        self.note(path.clone(), changed(NodeKind::File, false));
                        if other == NodeKind::Dir {
                            self.removed_beneath(&path)?;
                        }
                    }
                    (Kind::Symlink, None) => self.note(path, added(NodeKind::Symlink)),
                    (Kind::Symlink, Some(NodeKind::Symlink)) => {
                        let target = |d: &OwnedFd| rustix::fs::readlinkat(d, name, Vec::new());
                        let same = match &below {
                            Some(below) => target(&dir)? == target(below)?,
                            None => false,
                        };
                        if !same {
                            self.note(path, changed(NodeKind::Symlink, false));
                        }
                    }
                    (Kind::Symlink, Some(other)) => {
                        self.note(path.clone(), changed(NodeKind::Symlink, false));
                        if other == NodeKind::Dir {
                            self.removed_beneath(&path)?;
                        }
                    }
                }
            }
            if let (true, Some(below)) = (opaque, &below) {
                for entry in Dir::read_from(below)? {
                    let entry = entry?;
                    let raw = entry.file_name().to_bytes();
                    if raw == b"." || raw == b".." || held.contains(raw) {
                        continue;
                    }
                    if !self.visit() {
                        return Ok(());
                    }
                    let name = OsStr::from_bytes(raw);
                    let Some(utf8) = name.to_str() else {
                        continue;
                    };
                    if let Some(old) = stat_at(below, name)? {
                        self.removed(tree::join(&rel, utf8), &old)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Notes `path` (`old` beneath) removed, and everything beneath it for a folder.
    fn removed(&mut self, path: String, old: &Stat) -> io::Result<()> {
        let Some(kind) = node_kind(Kind::of(old)) else {
            return Ok(());
        };
        self.note(
            path.clone(),
            Found {
                change: ChangeKind::Removed,
                kind,
                size_before: file_size(old),
                size_after: 0,
                diffable: kind == NodeKind::File,
            },
        );
        if kind == NodeKind::Dir {
            self.removed_beneath(&path)?;
        }
        Ok(())
    }

    /// Notes every entry beneath the folder `path` of the tree beneath as removed.
    fn removed_beneath(&mut self, path: &str) -> io::Result<()> {
        let Some(beneath) = self.beneath else {
            return Ok(());
        };
        let mut pending = vec![path.to_owned()];
        while let Some(rel) = pending.pop() {
            let Ok(dir) = tree::open_dir(beneath, Path::new(&rel)) else {
                continue;
            };
            for entry in Dir::read_from(&dir)? {
                let entry = entry?;
                let raw = entry.file_name().to_bytes();
                if raw == b"." || raw == b".." {
                    continue;
                }
                if !self.visit() {
                    return Ok(());
                }
                let Some(utf8) = OsStr::from_bytes(raw).to_str() else {
                    continue;
                };
                let Some(old) = stat_at(&dir, OsStr::from_bytes(raw))? else {
                    continue;
                };
                let Some(kind) = node_kind(Kind::of(&old)) else {
                    continue;
                };
                let child = tree::join(&rel, utf8);
                self.note(
                    child.clone(),
                    Found {
                        change: ChangeKind::Removed,
                        kind,
                        size_before: file_size(&old),
                        size_after: 0,
                        diffable: kind == NodeKind::File,
                    },
                );
                if kind == NodeKind::Dir {
                    pending.push(child);
                }
            }
        }
        Ok(())
    }

    /// Whether the file `name` of the layer folder `dir` holds other bytes than the one
    /// of the folder `below` (both regular files, of the stats given).
    fn differs(
        &mut self,
        dir: &OwnedFd,
        below: &OwnedFd,
        name: &OsStr,
        new: &Stat,
        old: &Stat,
    ) -> io::Result<bool> {
        if new.st_size != old.st_size {
            return Ok(true);
        }
        let size = u64::try_from(new.st_size).unwrap_or(0);
        if self.compared.saturating_add(size) > MAX_COMPARE_BYTES {
            return Ok(true);
        }
        let (Ok((mut a, _)), Ok((mut b, _))) = (
            tree::open_child_file(dir, name),
            tree::open_child_file(below, name),
        ) else {
            return Ok(true);
        };
        self.compared += size;
        let (mut x, mut y) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
        let mut left = size;
        while left > 0 {
            let n = usize::try_from(left.min(x.len() as u64)).unwrap_or(x.len());
            a.read_exact(&mut x[..n])?;
            b.read_exact(&mut y[..n])?;
            if x[..n] != y[..n] {
                return Ok(true);
            }
            left -= n as u64;
        }
        Ok(false)
    }

    /// The changes in path order with their diffs, bounded as the copies bound them.
    fn answer(self) -> (Vec<FileChange>, bool) {
        let mut out = Vec::new();
        let (mut diff_bytes, mut answer_bytes) = (0usize, 0usize);
        let mut read_bytes = 0u64;
        let mut truncated = self.truncated;
        for (path, found) in self.found {
            answer_bytes += path.len() + CHANGE_OVERHEAD;
            if out.len() == MAX_CHANGES || answer_bytes > MAX_ANSWER_BYTES - MAX_TOTAL_DIFF {
                truncated = true;
                break;
            }
            let mut entry = FileChange {
                path,
                change: found.change,
                kind: found.kind,
                size_before: found.size_before,
                size_after: found.size_after,
                binary: false,
                unified_diff: String::new(),
                diff_truncated: false,
            };
            if found.diffable {
                // A side larger than a diff is made for is never read.
                let side = |size: u64| if size > MAX_DIFF_INPUT { 0 } else { size };
                let reading = side(found.size_before) + side(found.size_after);
                if diff_bytes >= MAX_TOTAL_DIFF || read_bytes + reading > MAX_READ_BYTES {
                    entry.diff_truncated = true;
                } else {
                    read_bytes += reading;
                    let rel = Path::new(&entry.path);
                    let old = match found.change {
                        ChangeKind::Added => Some(String::new()),
                        _ => self.beneath.and_then(|b| text_of(b, rel)),
                    };
                    let new = match found.change {
                        ChangeKind::Removed => Some(String::new()),
                        _ => text_of(self.layer, rel),
                    };
                    match (old, new) {
                        (Some(a), Some(b)) => {
                            let diff = unified(&entry.path, &a, &b);
                            let (diff, cut) =
                                bounded(diff, MAX_FILE_DIFF.min(MAX_TOTAL_DIFF - diff_bytes));
                            diff_bytes += diff.len();
                            entry.unified_diff = diff;
                            entry.diff_truncated = cut;
                        }
                        _ => entry.binary = true,
                    }
                }
            }
            out.push(entry);
        }
        (out, truncated)
    }
}

/// The text of the regular file `rel` beneath `root`; `None` when it is not UTF-8 text,
/// is larger than a diff is made for, or cannot be read as a regular file.
fn text_of(root: &OwnedFd, rel: &Path) -> Option<String> {
    let (file, stat) = tree::open_file(root, rel).ok()?;
    if u64::try_from(stat.st_size).unwrap_or(u64::MAX) > MAX_DIFF_INPUT {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(MAX_DIFF_INPUT + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > MAX_DIFF_INPUT || bytes.contains(&0) {
        return None;
    }
    String::from_utf8(bytes).ok()
}
