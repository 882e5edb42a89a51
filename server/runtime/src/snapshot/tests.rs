use std::fs;
use std::io::Write;
use std::path::Path;

use uuid::Uuid;

use super::*;

fn settings() -> SnapshotSettings {
    SnapshotSettings::default()
}

fn recorded(outcome: SnapshotOutcome) -> TakenSnapshot {
    match outcome {
        SnapshotOutcome::Recorded(taken) => taken,
        SnapshotOutcome::Skipped(reason) => panic!("skipped: {reason}"),
    }
}

fn workspace(root: &Path) -> std::path::PathBuf {
    let data = root.join("data");
    fs::create_dir_all(data.join("dir")).expect("mkdir");
    fs::write(data.join("a.txt"), "one\ntwo\n").expect("write");
    fs::write(data.join("dir/b.txt"), "bee\n").expect("write");
    fs::write(data.join("blob.bin"), [0u8, 1, 2, 3]).expect("write");
    std::os::unix::fs::symlink("a.txt", data.join("link")).expect("link");
    data
}

#[test]
fn a_turn_snapshot_reads_only_what_changed_and_restores_what_was_there() {
    let home = tempfile::tempdir().expect("tempdir");
    let data = workspace(home.path());
    let store = SnapshotStore::of_session(&home.path().join("session"));
    let (t1, t2) = (Uuid::now_v7(), Uuid::now_v7());
    let first = recorded(store.record(&data, 1, t1, &settings()).expect("record 1"));
    assert_eq!(first.hashed_files, 3);
    assert_eq!(first.entries, 5);

    // An in-place append (the way a shell's `>>` writes) and a removal.
    fs::OpenOptions::new()
        .append(true)
        .open(data.join("a.txt"))
        .and_then(|mut f| f.write_all(b"three\n"))
        .expect("append");
    fs::remove_file(data.join("dir/b.txt")).expect("rm");
    fs::write(data.join("new.txt"), "fresh\n").expect("write");
    let second = recorded(store.record(&data, 2, t2, &settings()).expect("record 2"));
    assert_eq!(
        second.hashed_files, 2,
        "only the appended and the new file are read"
    );

    let restored = home.path().join("restored");
    let manifest = store.manifest(1, t1).expect("manifest 1");
    store.restore(&manifest, &restored, None).expect("restore");
    assert_eq!(
        fs::read_to_string(restored.join("a.txt")).expect("a"),
        "one\ntwo\n"
    );
    assert_eq!(
        fs::read_to_string(restored.join("dir/b.txt")).expect("b"),
        "bee\n"
    );
    assert!(!restored.join("new.txt").exists());
    assert_eq!(
        fs::read_link(restored.join("link")).expect("link"),
        Path::new("a.txt")
    );

    // Writing into what was restored changes no snapshot.
    fs::OpenOptions::new()
        .append(true)
        .open(restored.join("a.txt"))
        .and_then(|mut f| f.write_all(b"scribble\n"))
        .expect("append");
    let again = home.path().join("again");
    store
        .restore(&manifest, &again, None)
        .expect("restore again");
    assert_eq!(
        fs::read_to_string(again.join("a.txt")).expect("a"),
        "one\ntwo\n"
    );

    let after = store.manifest(2, t2).expect("manifest 2");
    let (changes, truncated) = changes(&manifest, &after, store.objects());
    assert!(!truncated);
    let summary: Vec<(String, ChangeKind)> =
        changes.iter().map(|c| (c.path.clone(), c.change)).collect();
    assert_eq!(
        summary,
        [
            ("a.txt".to_owned(), ChangeKind::Changed),
            ("dir/b.txt".to_owned(), ChangeKind::Removed),
            ("new.txt".to_owned(), ChangeKind::Added),
        ]
    );
    assert!(changes[0].unified_diff.contains("--- a/a.txt"));
    assert!(changes[0].unified_diff.contains("+three"));
    assert!(changes[1].unified_diff.contains("-bee"));
}

#[test]
fn a_link_out_of_the_workspace_is_recorded_as_a_link_never_followed() {
    let home = tempfile::tempdir().expect("tempdir");
    let data = home.path().join("data");
    fs::create_dir_all(&data).expect("mkdir");
    fs::write(home.path().join("secret"), "outside").expect("write");
    std::os::unix::fs::symlink(home.path().join("secret"), data.join("escape")).expect("link");
    std::os::unix::fs::symlink(home.path(), data.join("up")).expect("link");
    let store = SnapshotStore::of_session(&home.path().join("session"));
    let turn = Uuid::now_v7();
    let taken = recorded(store.record(&data, 1, turn, &settings()).expect("record"));
    assert_eq!(taken.hashed_files, 0, "nothing outside was read");
    let manifest = store.manifest(1, turn).expect("manifest");
    assert!(matches!(
        manifest.entries.get("escape"),
        Some(Node::Symlink { .. })
    ));
    assert!(matches!(
        manifest.entries.get("up"),
        Some(Node::Symlink { .. })
    ));
    assert_eq!(manifest.entries.len(), 2);
}

#[test]
fn a_workspace_past_the_limits_is_skipped_and_said_so() {
    let home = tempfile::tempdir().expect("tempdir");
    let data = workspace(home.path());
    let store = SnapshotStore::of_session(&home.path().join("session"));
    let limits = SnapshotSettings {
        max_workspace_files: 2,
        ..settings()
    };
    let turn = Uuid::now_v7();
    let outcome = store.record(&data, 1, turn, &limits).expect("record");
    assert!(matches!(outcome, SnapshotOutcome::Skipped(ref why) if why.contains("more than 2")));
    assert!(matches!(
        store.manifest(1, turn),
        Err(SnapshotError::Skipped { turn: 1, .. })
    ));
    // The next snapshot knows the turn before it is unknown.
    let next = Uuid::now_v7();
    recorded(store.record(&data, 2, next, &settings()).expect("record"));
    assert!(store.manifest(2, next).expect("manifest").parent_unknown);
}

#[test]
fn retention_drops_the_oldest_turns_and_the_objects_only_they_held() {
    let home = tempfile::tempdir().expect("tempdir");
    let data = home.path().join("data");
    fs::create_dir_all(&data).expect("mkdir");
    let store = SnapshotStore::of_session(&home.path().join("session"));
    let limits = SnapshotSettings {
        max_turns: 3,
        ..settings()
    };
    let mut turns = Vec::new();
    for turn in 1..=4u64 {
        fs::write(data.join("f.txt"), format!("version {turn}\n")).expect("write");
        let id = Uuid::now_v7();
        recorded(store.record(&data, turn, id, &limits).expect("record"));
        turns.push(id);
    }
    // Past three, the store goes down to nine tenths of it (two).
    assert!(matches!(
        store.manifest(1, turns[0]),
        Err(SnapshotError::Missing { turn: 1 })
    ));
    assert!(matches!(
        store.manifest(2, turns[1]),
        Err(SnapshotError::Missing { turn: 2 })
    ));
    store.manifest(3, turns[2]).expect("turn 3 kept");
    store.manifest(4, turns[3]).expect("turn 4 kept");
    let objects = store.objects().list().expect("list");
    assert_eq!(objects.len(), 2, "{objects:?}");
}

/// On a workspace root servers share, a session's snapshots are in `.snapshots/<id>/`
/// beside the cells (never inside one), private to the server, and a store opened there
/// by another server finds what the first recorded.
#[test]
fn snapshots_on_a_workspace_root_lie_beside_the_cells_and_are_found_from_anywhere() {
    use std::os::unix::fs::PermissionsExt;
    let root = tempfile::tempdir().expect("tempdir");
    let session = Uuid::now_v7();
    let data = workspace(&root.path().join(session.to_string()));
    let turn = Uuid::now_v7();
    let store = SnapshotStore::on_workspace_root(root.path(), session);
    recorded(store.record(&data, 1, turn, &settings()).expect("record"));
    let folder = root
        .path()
        .join(SHARED_SNAPSHOTS_DIR)
        .join(session.to_string());
    assert_eq!(store.root(), folder);
    assert!(folder.join("turns").is_dir() && folder.join("objects").is_dir());
    for dir in [root.path().join(SHARED_SNAPSHOTS_DIR), folder] {
        let mode = fs::metadata(&dir).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{} is the server's alone", dir.display());
    }
    assert!(
        !root
            .path()
            .join(session.to_string())
            .join(SNAPSHOTS_DIR)
            .exists(),
        "nothing in the cell"
    );
    let elsewhere = SnapshotStore::on_workspace_root(root.path(), session);
    let manifest = elsewhere
        .manifest(1, turn)
        .expect("found by another opener");
    assert_eq!(manifest.entries.len(), 5);
}

/// With a store other servers share, `auto` means copies and `overlay` is refused: the
/// others read a session's snapshots from the workspace root.
#[test]
fn a_shared_store_snapshots_by_copies_and_refuses_overlay() {
    let home = tempfile::tempdir().expect("tempdir");
    let auto = Workspaces::open(home.path(), &settings(), true).expect("auto");
    assert_eq!(auto.mechanism(), SnapshotMechanism::Copies);
    assert!(auto.reason().contains("shared"), "{}", auto.reason());
    let overlay = SnapshotSettings {
        mechanism: MechanismChoice::Overlay,
        ..settings()
    };
    let refused = Workspaces::open(home.path(), &overlay, true).expect_err("overlay");
    assert!(
        refused.to_string().contains("snapshots.mechanism"),
        "{refused}"
    );
}
