//! Session cells: `<home>/sandbox/<session>/` with `app/` (the bundle, read-only), `data/`
//! (the workspace), `cache/`, `tmp/` and `runs/<exec_id>/`.
//!
//! Preparing is idempotent: a second turn reuses the cell, and `app/` is staged again only
//! when the bundle's digest differs from the one recorded beside it. When the server runs
//! as root the writable folders belong to the sandbox user, since that is who writes them.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use uuid::Uuid;

use rustix::fs::OFlags;

use super::beneath::{self, BeneathDir, Kind};
use super::error::SandboxError;
use super::types::CellPaths;
use crate::bundle::InstalledBundle;

/// The digest of the staged bundle, kept in the cell root.
pub const APP_DIGEST_FILE: &str = ".app-digest";
/// The install record of a bundle folder: server bookkeeping, not part of the app.
const BUNDLE_RECORD_FILE: &str = ".odyssey-bundle.json";

/// Where a cell's `app/` comes from.
#[derive(Clone, Copy, Debug)]
pub struct AppSource<'a> {
    /// The installed bundle's folder.
    pub root: &'a Path,
    /// Its content digest: `app/` is restaged when it changes.
    pub digest: &'a str,
}

impl<'a> From<&'a InstalledBundle> for AppSource<'a> {
    fn from(bundle: &'a InstalledBundle) -> Self {
        Self {
            root: &bundle.root,
            digest: &bundle.id.digest,
        }
    }
}

/// Creates (or reuses) the cell of `session_id` under `sandbox_root`.
pub(crate) fn prepare(
    sandbox_root: &Path,
    session_id: Uuid,
    app: AppSource<'_>,
    owner: Option<(u32, u32)>,
) -> Result<CellPaths, SandboxError> {
    create_dir(sandbox_root, 0o700)?;
    let cell = CellPaths::under(sandbox_root.join(session_id.to_string()));
    create_dir(&cell.root, 0o700)?;
    // `runs/` stays the server's: only the server creates a run's folder in it, so no
    // process of the session can plant something there under a future run's name.
    create_dir(&cell.runs, 0o700)?;
    if owner.is_some() {
        // A cell made by an earlier version handed `runs/` over too.
        hand_over(
            &cell.runs,
            rustix::process::geteuid().as_raw(),
            rustix::process::getegid().as_raw(),
        )?;
    }
    for dir in [&cell.data, &cell.cache, &cell.tmp] {
        create_dir(dir, 0o700)?;
        if let Some((uid, gid)) = owner {
            hand_over(dir, uid, gid)?;
        }
    }
    stage_app(&cell, app)?;
    Ok(cell)
}

/// Creates `runs/<exec_id>/` for one process: a new folder (an existing one is refused),
/// handed to the sandbox user when the server is root.
pub(crate) fn prepare_run_dir(
    cell: &CellPaths,
    exec_id: &str,
    owner: Option<(u32, u32)>,
) -> Result<PathBuf, SandboxError> {
    let dir = cell.run_dir(exec_id);
    fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|e| SandboxError::io(format!("creating {}", dir.display()), e))?;
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::lchown(&dir, Some(uid), Some(gid))
            .map_err(|e| SandboxError::io(format!("handing {} to uid {uid}", dir.display()), e))?;
    }
    Ok(dir)
}

/// Removes the cell and everything in it (the read-only `app/` included).
pub(crate) fn remove(cell: &CellPaths) -> Result<(), SandboxError> {
    remove_tree(&cell.root)
}

/// Gives `dir` to the sandbox user unless it has it already: a cell is prepared for every
/// turn, and changing an owner, even to the same one, is a metadata write.
fn hand_over(dir: &Path, uid: u32, gid: u32) -> Result<(), SandboxError> {
    use std::os::unix::fs::MetadataExt;
    let owned = fs::symlink_metadata(dir).is_ok_and(|m| m.uid() == uid && m.gid() == gid);
    if owned {
        return Ok(());
    }
    std::os::unix::fs::lchown(dir, Some(uid), Some(gid))
        .map_err(|e| SandboxError::io(format!("handing {} to uid {uid}", dir.display()), e))
}

fn create_dir(path: &Path, mode: u32) -> Result<(), SandboxError> {
    match fs::DirBuilder::new()
        .recursive(true)
        .mode(mode)
        .create(path)
    {
        Ok(()) => Ok(()),
        Err(e) => Err(SandboxError::io(format!("creating {}", path.display()), e)),
    }
}

/// Stages the bundle as `app/` unless the recorded digest says it is already there.
fn stage_app(cell: &CellPaths, app: AppSource<'_>) -> Result<(), SandboxError> {
    let marker = cell.root.join(APP_DIGEST_FILE);
    let staged = fs::read_to_string(&marker).ok();
    if staged.as_deref() == Some(app.digest) && cell.app.is_dir() {
        return Ok(());
    }
    let stamp = unique_stamp();
    let staging = cell.root.join(format!(".app-staging-{stamp}"));
    copy_tree(app.root, &staging, true).map_err(|e| {
        SandboxError::io(
            format!("staging {} into {}", app.root.display(), staging.display()),
            e,
        )
    })?;
    make_read_only(&staging)
        .map_err(|e| SandboxError::io(format!("making {} read-only", staging.display()), e))?;
    if cell.app.exists() {
        let old = cell.root.join(format!(".app-old-{stamp}"));
        fs::rename(&cell.app, &old)
            .map_err(|e| SandboxError::io(format!("retiring {}", cell.app.display()), e))?;
        remove_tree(&old)?;
    }
    fs::rename(&staging, &cell.app)
        .map_err(|e| SandboxError::io(format!("installing {}", cell.app.display()), e))?;
    let marker_tmp = cell.root.join(format!("{APP_DIGEST_FILE}.{stamp}"));
    fs::write(&marker_tmp, app.digest)
        .and_then(|()| fs::rename(&marker_tmp, &marker))
        .map_err(|e| SandboxError::io(format!("writing {}", marker.display()), e))
}

fn unique_stamp() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("{}-{nanos}", std::process::id())
}

/// Copies regular files and folders; symlinks are skipped (an installed bundle has none,
/// and one would be a way to point `app/` elsewhere).
fn copy_tree(from: &Path, to: &Path, top: bool) -> io::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if top && name == BUNDLE_RECORD_FILE {
            continue;
        }
        let kind = entry.file_type()?;
        let target = to.join(&name);
        if kind.is_dir() {
            copy_tree(&entry.path(), &target, false)?;
        } else if kind.is_file() {
            fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// Files 0444 (0555 when executable), folders 0555.
fn make_read_only(dir: &Path) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let path = entry.path();
        if kind.is_dir() {
            make_read_only(&path)?;
        } else if kind.is_file() {
            let mode = entry.metadata()?.permissions().mode();
            let new = if mode & 0o111 != 0 { 0o555 } else { 0o444 };
            fs::set_permissions(&path, fs::Permissions::from_mode(new))?;
        }
    }
    fs::set_permissions(dir, fs::Permissions::from_mode(0o555))
}

/// Removes a tree. A first attempt usually succeeds (root needs no permission bits);
/// when it does not, folders that lack write access for their owner (a read-only `app/`,
/// a folder a command locked) get it back, and the removal is tried again.
pub(crate) fn remove_tree(path: &Path) -> Result<(), SandboxError> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(SandboxError::io(format!("reading {}", path.display()), e)),
        Ok(_) => {}
    }
    // std's `remove_dir_all` works by descriptor and never follows a link.
    if fs::remove_dir_all(path).is_ok() {
        return Ok(());
    }
    if let Ok(root) = BeneathDir::open(path) {
        unlock_dirs(&root);
    }
    fs::remove_dir_all(path)
        .map_err(|e| SandboxError::io(format!("removing {}", path.display()), e))
}

/// Gives every folder under `root` its owner's full access. Each folder is reached from
/// `root` with no symbolic link allowed anywhere on the way, and changed through its own
/// descriptor, so a folder swapped for a link meanwhile is skipped, never followed.
fn unlock_dirs(root: &BeneathDir) {
    let mut pending = vec![PathBuf::new()];
    while let Some(rel) = pending.pop() {
        let Ok(dir) = root.open_without_links(&rel) else {
            continue;
        };
        // Best effort: if this fails, remove_dir_all reports the real error.
        let _ = beneath::grant_owner_all(&dir);
        let Ok(listing) = root.open_at(&rel, OFlags::RDONLY | OFlags::DIRECTORY) else {
            continue;
        };
        if let Ok((entries, _)) = BeneathDir::entries(&listing, usize::MAX) {
            pending.extend(
                entries
                    .into_iter()
                    .filter(|entry| entry.kind == Kind::Dir)
                    .map(|entry| rel.join(entry.name)),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(dir: &Path) -> PathBuf {
        let root = dir.join("bundle");
        fs::create_dir_all(root.join("skills/a")).expect("mkdir");
        fs::write(root.join("odyssey.yaml"), "name: x\n").expect("write");
        fs::write(root.join("skills/a/SKILL.md"), "# a\n").expect("write");
        fs::write(root.join(BUNDLE_RECORD_FILE), "{}").expect("write");
        root
    }

    #[test]
    fn prepare_is_idempotent_and_restages_on_a_new_digest() {
        let home = tempfile::tempdir().expect("tempdir");
        let source = bundle(home.path());
        let sandbox_root = home.path().join("sandbox");
        let session = Uuid::new_v4();
        let app = AppSource {
            root: &source,
            digest: "sha256:one",
        };
        let cell = prepare(&sandbox_root, session, app, None).expect("prepare");
        assert!(cell.data.is_dir() && cell.cache.is_dir() && cell.tmp.is_dir());
        assert!(cell.app.join("skills/a/SKILL.md").is_file());
        assert!(!cell.app.join(BUNDLE_RECORD_FILE).exists());
        let mode = fs::metadata(&cell.app).expect("app").permissions().mode();
        assert_eq!(mode & 0o777, 0o555);
        assert!(fs::write(cell.app.join("new"), "x").is_err() || is_root());

        // Same digest: the workspace and the staged app are left alone.
        fs::write(cell.data.join("work.txt"), "kept").expect("write");
        fs::write(source.join("odyssey.yaml"), "name: changed\n").expect("write");
        let again = prepare(&sandbox_root, session, app, None).expect("prepare again");
        assert_eq!(again, cell);
        assert_eq!(
            fs::read_to_string(cell.app.join("odyssey.yaml")).expect("read"),
            "name: x\n"
        );
        assert_eq!(
            fs::read_to_string(cell.data.join("work.txt")).expect("read"),
            "kept"
        );

        // New digest: app/ is restaged, the workspace survives.
        let app2 = AppSource {
            root: &source,
            digest: "sha256:two",
        };
        prepare(&sandbox_root, session, app2, None).expect("restage");
        assert_eq!(
            fs::read_to_string(cell.app.join("odyssey.yaml")).expect("read"),
            "name: changed\n"
        );
        assert_eq!(
            fs::read_to_string(cell.data.join("work.txt")).expect("read"),
            "kept"
        );
        let leftovers: Vec<_> = fs::read_dir(&cell.root)
            .expect("list")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".app-staging") || n.starts_with(".app-old"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");

        remove(&cell).expect("remove");
        assert!(!cell.root.exists());
        remove(&cell).expect("removing twice is fine");
    }

    fn is_root() -> bool {
        rustix::process::geteuid().is_root()
    }
}
