use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use uuid::Uuid;

use super::*;

/// Whether this process can mount overlays; under CI (which runs as root) it must.
pub(super) fn can_mount(dir: &Path) -> bool {
    match probe(&dir.join("probe")) {
        Ok(()) => true,
        Err(e) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("overlays cannot be mounted under CI: {e}")
        }
        Err(e) => {
            eprintln!("skipped: overlays cannot be mounted here ({e})");
            false
        }
    }
}

/// Unmounts its folders when dropped, so a failed test leaves no mount behind.
pub(super) struct Mounts(pub(super) Vec<PathBuf>);

impl Drop for Mounts {
    fn drop(&mut self) {
        for target in &self.0 {
            let _ = unmount_overlay(target);
        }
    }
}

pub(super) struct Fixture {
    pub(super) store: OverlayStore,
    sandbox: PathBuf,
    _mounts: Mounts,
    _home: tempfile::TempDir,
}

impl Fixture {
    pub(super) fn new() -> Option<Self> {
        let home = tempfile::tempdir().expect("tempdir");
        if !can_mount(home.path()) {
            return None;
        }
        Some(Self {
            store: OverlayStore::new(home.path().join("overlay")),
            sandbox: home.path().join("sandbox"),
            _mounts: Mounts(Vec::new()),
            _home: home,
        })
    }

    /// The `data/` folder of `session`'s cell, created, and unmounted at the end.
    pub(super) fn data(&mut self, session: Uuid) -> PathBuf {
        let data = self.sandbox.join(session.to_string()).join("data");
        fs::create_dir_all(&data).expect("mkdir data");
        self._mounts.0.push(data.clone());
        data
    }

    /// A folder of the test's own, outside the store and the cells.
    pub(super) fn home(&self) -> &Path {
        self._home.path()
    }
}

pub(super) fn read(path: impl AsRef<Path>) -> String {
    fs::read_to_string(path).expect("read")
}

pub(super) fn sh(dir: &Path, script: &str) {
    let status = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .status()
        .expect("sh");
    assert!(status.success(), "{script}");
}

#[test]
fn a_turn_end_makes_the_writes_a_layer_and_a_rewind_mounts_a_kept_turn_again() {
    let Some(mut fx) = Fixture::new() else {
        return;
    };
    let session = Uuid::now_v7();
    let data = fx.data(session);
    fx.store.mount(session, &data, None, 0o755).expect("mount");
    assert!(is_mount_point(&data));
    fs::create_dir(data.join("src")).expect("mkdir");
    fs::write(data.join("src/a.txt"), "one\n").expect("write");
    let (t1, t2) = (Uuid::now_v7(), Uuid::now_v7());
    let first = fx
        .store
        .commit(session, &data, 1, t1, 10)
        .expect("commit 1");
    first.sync().expect("sync");
    let layer = first.layer.expect("a layer");
    assert_eq!(read(layer.join("src/a.txt")), "one\n");
    assert_eq!(read(data.join("src/a.txt")), "one\n");
    assert!(
        fs::read_dir(fx.store.upper(session))
            .expect("upper")
            .next()
            .is_none(),
        "the next turn starts with an empty upper folder"
    );

    sh(
        &data,
        "printf 'two\\n' >> src/a.txt && rm -r src && echo b > b.txt",
    );
    fx.store
        .commit(session, &data, 2, t2, 10)
        .expect("commit 2");
    assert_eq!(fx.store.stack(session).expect("stack").current.len(), 2);
    assert!(!data.join("src").exists());
    assert_eq!(
        read(layer.join("src/a.txt")),
        "one\n",
        "a layer is never written"
    );

    fs::write(data.join("c.txt"), "uncommitted").expect("write");
    fx.store.rewind(session, t1, &data).expect("rewind");
    assert_eq!(read(data.join("src/a.txt")), "one\n");
    assert!(!data.join("b.txt").exists());
    assert!(!data.join("c.txt").exists());
    fx.store.rewind(session, t2, &data).expect("rewind forward");
    assert_eq!(read(data.join("b.txt")), "b\n");
}

#[test]
fn a_turn_that_wrote_nothing_adds_no_layer() {
    let Some(mut fx) = Fixture::new() else {
        return;
    };
    let session = Uuid::now_v7();
    let data = fx.data(session);
    fx.store.mount(session, &data, None, 0o755).expect("mount");
    fs::write(data.join("a"), "a").expect("write");
    fx.store
        .commit(session, &data, 1, Uuid::now_v7(), 10)
        .expect("commit 1");
    let quiet = fx
        .store
        .commit(session, &data, 2, Uuid::now_v7(), 10)
        .expect("commit 2");
    assert!(quiet.layer.is_none());
    let stack = fx.store.stack(session).expect("stack");
    assert_eq!(stack.current.len(), 1);
    assert_eq!(stack.turns.len(), 2);
    assert_eq!(stack.turns[0].layers, stack.turns[1].layers);
}

#[test]
fn a_write_in_a_fork_never_changes_its_source_or_a_layer() {
    let Some(mut fx) = Fixture::new() else {
        return;
    };
    let (source, fork) = (Uuid::now_v7(), Uuid::now_v7());
    let source_data = fx.data(source);
    let fork_data = fx.data(fork);
    fx.store
        .mount(source, &source_data, None, 0o755)
        .expect("mount");
    fs::write(source_data.join("log.txt"), "first\n").expect("write");
    fs::write(source_data.join("keep.txt"), "kept\n").expect("write");
    let t1 = Uuid::now_v7();
    let layer = fx
        .store
        .commit(source, &source_data, 1, t1, 10)
        .expect("commit")
        .layer
        .expect("a layer");
    fx.store.fork(source, t1, fork, &fork_data).expect("fork");
    assert_eq!(read(fork_data.join("log.txt")), "first\n");

    // In-place writes, the way a shell and a long-running process make them.
    sh(
        &fork_data,
        "printf 'fork\\n' >> log.txt && rm keep.txt && echo new > new.txt",
    );
    {
        use std::io::{Seek, Write};
        let mut file = fs::OpenOptions::new()
            .write(true)
            .open(fork_data.join("log.txt"))
            .expect("open");
        file.seek(std::io::SeekFrom::Start(0)).expect("seek");
        file.write_all(b"FIRST").expect("write in place");
    }
    assert_eq!(read(fork_data.join("log.txt")), "FIRST\nfork\n");
    assert_eq!(read(source_data.join("log.txt")), "first\n");
    assert_eq!(read(source_data.join("keep.txt")), "kept\n");
    assert!(!source_data.join("new.txt").exists());
    assert_eq!(read(layer.join("log.txt")), "first\n");
    assert_eq!(read(layer.join("keep.txt")), "kept\n");

    // And the other way: the source's next turn is not the fork's.
    sh(&source_data, "printf 'source\\n' >> log.txt");
    assert_eq!(read(fork_data.join("log.txt")), "FIRST\nfork\n");
    assert_eq!(read(layer.join("log.txt")), "first\n");
}

#[test]
fn layers_are_removed_once_no_session_names_them() {
    let Some(mut fx) = Fixture::new() else {
        return;
    };
    let (source, fork) = (Uuid::now_v7(), Uuid::now_v7());
    let source_data = fx.data(source);
    let fork_data = fx.data(fork);
    fx.store
        .mount(source, &source_data, None, 0o755)
        .expect("mount");
    fs::write(source_data.join("a"), "a").expect("write");
    let t1 = Uuid::now_v7();
    let shared = fx
        .store
        .commit(source, &source_data, 1, t1, 10)
        .expect("commit")
        .layer
        .expect("layer");
    fx.store.fork(source, t1, fork, &fork_data).expect("fork");
    fs::write(source_data.join("b"), "b").expect("write");
    let own = fx
        .store
        .commit(source, &source_data, 2, Uuid::now_v7(), 10)
        .expect("commit")
        .layer
        .expect("layer");

    fx.store
        .remove(source, &source_data)
        .expect("remove source");
    assert!(!is_mount_point(&source_data));
    assert_eq!(fx.store.collect_garbage().expect("gc"), 1);
    assert!(shared.exists(), "the fork still uses it");
    assert!(!own.exists());
    assert_eq!(read(fork_data.join("a")), "a");

    fx.store.remove(fork, &fork_data).expect("remove fork");
    assert_eq!(fx.store.collect_garbage().expect("gc"), 1);
    assert!(!shared.exists());
}

#[test]
fn a_mount_left_by_a_killed_server_is_replaced_and_the_turn_writes_are_kept() {
    let Some(mut fx) = Fixture::new() else {
        return;
    };
    let session = Uuid::now_v7();
    let data = fx.data(session);
    fx.store.mount(session, &data, None, 0o755).expect("mount");
    fs::write(data.join("a"), "a").expect("write");
    fx.store
        .commit(session, &data, 1, Uuid::now_v7(), 10)
        .expect("commit");
    fs::write(data.join("interrupted"), "half").expect("write");
    // A new server finds the mount still there.
    fx.store
        .mount(session, &data, None, 0o755)
        .expect("mount again");
    assert_eq!(read(data.join("a")), "a");
    assert_eq!(read(data.join("interrupted")), "half");
    assert_eq!(fx.store.stack(session).expect("stack").current.len(), 1);
}

#[test]
fn only_the_newest_turns_are_kept() {
    let Some(mut fx) = Fixture::new() else {
        return;
    };
    let session = Uuid::now_v7();
    let data = fx.data(session);
    fx.store.mount(session, &data, None, 0o755).expect("mount");
    let mut ids = Vec::new();
    for turn in 1..=4 {
        fs::write(data.join(format!("f{turn}")), "x").expect("write");
        let id = Uuid::now_v7();
        ids.push(id);
        fx.store
            .commit(session, &data, turn, id, 2)
            .expect("commit");
    }
    let stack = fx.store.stack(session).expect("stack");
    assert_eq!(
        stack.turns.iter().map(|t| t.turn).collect::<Vec<_>>(),
        [3, 4]
    );
    assert!(fx.store.rewind(session, ids[0], &data).is_err());
    fx.store.rewind(session, ids[2], &data).expect("rewind");
    assert!(data.join("f3").exists());
    assert!(!data.join("f4").exists());
}

#[test]
fn a_turn_end_is_refused_while_a_process_still_holds_the_workspace() {
    let Some(mut fx) = Fixture::new() else {
        return;
    };
    let session = Uuid::now_v7();
    let data = fx.data(session);
    fx.store.mount(session, &data, None, 0o755).expect("mount");
    fs::write(data.join("a"), "a").expect("write");
    let mut survivor = Command::new("sleep")
        .arg("30")
        .current_dir(&data)
        .spawn()
        .expect("sleep");
    let refused = fx.store.commit(session, &data, 1, Uuid::now_v7(), 10);
    let _ = survivor.kill();
    let _ = survivor.wait();
    assert!(refused.is_err(), "a busy workspace must not become a layer");
    assert!(is_mount_point(&data));
    assert_eq!(read(fx.store.upper(session).join("a")), "a");
    fx.store
        .commit(session, &data, 1, Uuid::now_v7(), 10)
        .expect("commit once free");
}
