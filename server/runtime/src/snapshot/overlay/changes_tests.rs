//! `OverlayStore::turn_changes` on real mounts, held against the copies: the same turns
//! recorded both ways must give the same answer.

use uuid::Uuid;

use super::tests::{Fixture, sh};
use super::tree;
use crate::error::RuntimeError;
use crate::snapshot::{
    ChangeKind, FileChange, NodeKind, SnapshotError, SnapshotSettings, SnapshotStore, changes,
};

/// A session whose turns are recorded as layers and as copies.
struct Both {
    session: Uuid,
    data: std::path::PathBuf,
    copies: SnapshotStore,
    turns: Vec<Uuid>,
}

impl Both {
    fn new(fx: &mut Fixture) -> Self {
        let session = Uuid::now_v7();
        let data = fx.data(session);
        fx.store.mount(session, &data, None, 0o755).expect("mount");
        let copies = SnapshotStore::of_session(&fx.home().join("copies"));
        Self {
            session,
            data,
            copies,
            turns: Vec::new(),
        }
    }

    /// Runs `script` in the workspace as turn n+1 and ends it both ways.
    fn turn(&mut self, fx: &Fixture, script: &str, max_turns: usize) -> Uuid {
        let settings = SnapshotSettings {
            max_turns,
            ..SnapshotSettings::default()
        };
        if !script.is_empty() {
            sh(&self.data, script);
        }
        let id = Uuid::now_v7();
        let n = self.turns.len() as u64 + 1;
        self.copies
            .record(&self.data, n, id, &settings)
            .expect("copies");
        fx.store
            .commit(self.session, &self.data, n, id, max_turns)
            .expect("commit")
            .sync()
            .expect("sync");
        self.turns.push(id);
        id
    }

    /// What the copies say turn `n` (from 1) changed.
    fn copies_say(&self, n: usize) -> Vec<FileChange> {
        let after = self
            .copies
            .manifest(n as u64, self.turns[n - 1])
            .expect("manifest");
        let before = if n == 1 {
            crate::snapshot::Manifest::default()
        } else {
            self.copies
                .manifest(n as u64 - 1, self.turns[n - 2])
                .expect("manifest")
        };
        let (found, truncated) = changes(&before, &after, self.copies.objects());
        assert!(!truncated);
        found
    }
}

fn summary(found: &[FileChange]) -> Vec<(String, ChangeKind, NodeKind)> {
    found
        .iter()
        .map(|c| (c.path.clone(), c.change, c.kind))
        .collect()
}

#[test]
fn a_turn_s_changes_read_from_its_layer_are_those_the_copies_give() {
    let Some(mut fx) = Fixture::new() else {
        return;
    };
    let mut both = Both::new(&mut fx);
    both.turn(
        &fx,
        "mkdir src && printf 'one\\ntwo\\nthree\\n' > src/a.txt && echo keep > keep.txt \
         && mkdir -p tree/deep && echo x > tree/deep/x && echo y > tree/y \
         && ln -s src/a.txt link && echo old > old.txt && printf 'a\\000b' > bin.dat \
         && mkfifo pipe && echo same > same.txt",
        10,
    );
    // A change, a removal, a rename, a folder removed and made again (opaque in the
    // layer), a link changed and one added, a file copied up for its times only, a mode.
    let t2 = both.turn(
        &fx,
        "printf 'one\\nTWO\\nthree\\n' > src/a.txt && rm keep.txt && mv old.txt new.txt \
         && rm -r tree && mkdir tree && echo z > tree/z && ln -sfn keep.txt link \
         && ln -s new.txt link2 && touch bin.dat && chmod 600 same.txt \
         && printf 'a\\001b' > bin.dat",
        10,
    );
    let t3 = both.turn(&fx, "", 10);

    let layer = fx
        .store
        .stack(both.session)
        .expect("stack")
        .current
        .last()
        .cloned()
        .expect("a layer");
    let tree_dir =
        tree::open_root(&fx.store.layer(&layer).join("tree")).expect("the folder made again");
    assert!(
        tree::is_opaque(&tree_dir),
        "the folder made again hides what was beneath it"
    );

    let first = fx
        .store
        .turn_changes(both.session, both.turns[0])
        .expect("turn 1");
    assert_eq!(first.turn, 1);
    assert_eq!(first.base_turn, 0);
    assert_eq!(first.changes, both.copies_say(1));

    let second = fx.store.turn_changes(both.session, t2).expect("turn 2");
    assert_eq!(second.turn, 2);
    assert_eq!(second.base_turn, 1);
    assert!(!second.truncated);
    assert_eq!(
        summary(&second.changes),
        summary(&both.copies_say(2)),
        "{:#?}",
        second.changes
    );
    assert_eq!(second.changes, both.copies_say(2));
    let by_path = |p: &str| {
        second
            .changes
            .iter()
            .find(|c| c.path == p)
            .unwrap_or_else(|| panic!("{p} in {:#?}", second.changes))
    };
    let a = by_path("src/a.txt");
    assert_eq!(a.change, ChangeKind::Changed);
    assert!(
        a.unified_diff.contains("-two\n+TWO\n"),
        "{}",
        a.unified_diff
    );
    assert_eq!(by_path("keep.txt").change, ChangeKind::Removed);
    assert_eq!(by_path("old.txt").change, ChangeKind::Removed);
    assert_eq!(by_path("new.txt").change, ChangeKind::Added);
    assert_eq!(by_path("tree/deep/x").change, ChangeKind::Removed);
    assert_eq!(by_path("tree/deep").change, ChangeKind::Removed);
    assert_eq!(by_path("tree/z").change, ChangeKind::Added);
    assert_eq!(by_path("link").kind, NodeKind::Symlink);
    assert_eq!(by_path("link").change, ChangeKind::Changed);
    assert_eq!(by_path("same.txt").change, ChangeKind::Changed);
    assert!(by_path("bin.dat").binary);
    assert!(
        second
            .changes
            .iter()
            .all(|c| c.path != "tree" && c.path != "pipe")
    );

    let quiet = fx.store.turn_changes(both.session, t3).expect("turn 3");
    assert_eq!(quiet.base_turn, 2);
    assert!(quiet.changes.is_empty());
}

#[test]
fn a_turn_no_longer_kept_has_the_error_the_copies_give() {
    let Some(mut fx) = Fixture::new() else {
        return;
    };
    let mut both = Both::new(&mut fx);
    let first = both.turn(&fx, "echo a > a", 2);
    both.turn(&fx, "echo b > b", 2);
    both.turn(&fx, "echo c > c", 2);
    let err = fx
        .store
        .turn_changes(both.session, first)
        .expect_err("turn 1 is not kept");
    assert!(matches!(err, SnapshotError::NoLayers { .. }), "{err}");
    assert!(matches!(
        RuntimeError::from(err),
        RuntimeError::FailedPrecondition(_)
    ));
    let copies = both
        .copies
        .manifest(1, first)
        .map(|_| ())
        .expect_err("retention by count drops it there too");
    assert!(matches!(
        RuntimeError::from(copies),
        RuntimeError::FailedPrecondition(_)
    ));
}

#[test]
fn a_rewound_session_s_turn_is_read_against_the_turn_it_started_from() {
    let Some(mut fx) = Fixture::new() else {
        return;
    };
    let mut both = Both::new(&mut fx);
    let t1 = both.turn(&fx, "echo one > a", 10);
    both.turn(&fx, "echo two > a && echo b > b", 10);
    fx.store
        .rewind(both.session, t1, &both.data)
        .expect("rewind");
    sh(&both.data, "echo three > a");
    let t3 = Uuid::now_v7();
    fx.store
        .commit(both.session, &both.data, 3, t3, 10)
        .expect("commit");
    let third = fx.store.turn_changes(both.session, t3).expect("turn 3");
    assert_eq!(third.base_turn, 1);
    assert_eq!(
        summary(&third.changes),
        [("a".into(), ChangeKind::Changed, NodeKind::File)]
    );
    assert!(third.changes[0].unified_diff.contains("-one\n+three\n"));
}

#[test]
fn links_fifos_sparse_files_and_deep_trees_left_in_a_workspace_are_read_safely() {
    let Some(mut fx) = Fixture::new() else {
        return;
    };
    let mut both = Both::new(&mut fx);
    both.turn(&fx, "echo secret > inside.txt", 10);
    // A path far longer than one lookup takes, made one folder at a time.
    let deep = (0..300)
        .map(|i| format!("d{i:018}"))
        .collect::<Vec<_>>()
        .join("/");
    deep_tree(&both.data, 300, b"bottom\n");
    let t2 = both.turn(
        &fx,
        "ln -s /etc/passwd passwd && ln -sfn /etc inside.txt && mkfifo fifo \
         && truncate -s 1T sparse",
        10,
    );
    assert!(deep.len() > 4096);
    let second = fx.store.turn_changes(both.session, t2).expect("turn 2");
    let by_path = |p: &str| second.changes.iter().find(|c| c.path == p);
    let passwd = by_path("passwd").expect("the link");
    assert_eq!(passwd.kind, NodeKind::Symlink);
    assert!(passwd.unified_diff.is_empty(), "a link is never followed");
    let inside = by_path("inside.txt").expect("the file made a link");
    assert_eq!(
        (inside.change, inside.kind),
        (ChangeKind::Changed, NodeKind::Symlink)
    );
    assert!(inside.unified_diff.is_empty());
    let sparse = by_path("sparse").expect("the sparse file");
    assert_eq!(sparse.size_after, 1 << 40);
    assert!(sparse.binary, "too large for a diff");
    assert!(
        by_path("fifo").is_none(),
        "a FIFO is left out, as the copies leave it"
    );
    let bottom = by_path(&format!("{deep}/f")).expect("the deepest file");
    assert!(bottom.unified_diff.contains("+bottom"));
}

/// Makes `depth` nested folders `d000…0`, `d000…1`, … in `root`, one beneath the other
/// (opened one by one, as no path that long can be looked up), with a file `f` holding
/// `bytes` at the bottom.
pub(super) fn deep_tree(root: &std::path::Path, depth: usize, bytes: &[u8]) {
    use rustix::fs::{Mode, OFlags};
    use std::io::Write;
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut dir = rustix::fs::open(root, flags, Mode::empty()).expect("open");
    for i in 0..depth {
        let name = format!("d{i:018}");
        rustix::fs::mkdirat(&dir, name.as_str(), Mode::from_raw_mode(0o755)).expect("mkdir");
        dir = rustix::fs::openat(&dir, name.as_str(), flags, Mode::empty()).expect("open");
    }
    let file = rustix::fs::openat(
        &dir,
        "f",
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .expect("create");
    std::fs::File::from(file).write_all(bytes).expect("write");
}
