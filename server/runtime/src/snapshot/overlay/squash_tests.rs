//! Squashing and retention by bytes, on real mounts.

use std::fs;

use uuid::Uuid;

use super::changes_tests::deep_tree;
use super::tests::{Fixture, read, sh};
use super::*;
use crate::snapshot::ChangeKind;

/// The layers in the store's `layers/` folder.
fn layer_count(fx: &Fixture) -> usize {
    fs::read_dir(fx.home().join("overlay/layers"))
        .expect("layers")
        .count()
}

#[test]
fn a_workspace_of_140_writing_turns_stays_below_the_cap_when_squashed_after_each_turn() {
    let Some(mut fx) = Fixture::new() else {
        return;
    };
    let session = Uuid::now_v7();
    let data = fx.data(session);
    fx.store.mount(session, &data, None, 0o755).expect("mount");
    let mut ids = Vec::new();
    let mut squashes = 0;
    for turn in 1..=140u64 {
        fs::write(data.join(format!("f{turn}")), format!("{turn}\n")).expect("write");
        if turn == 2 {
            fs::write(data.join("gone"), "soon removed").expect("write");
        }
        if turn == 3 {
            fs::remove_file(data.join("gone")).expect("rm");
        }
        let id = Uuid::now_v7();
        ids.push(id);
        fx.store
            .commit(session, &data, turn, id, 30)
            .expect("commit")
            .sync()
            .expect("sync");
        // What the server does after a turn's end, off its path.
        if fx.store.needs_squash(session).expect("stack") {
            let done = fx.store.squash(session).expect("squash").expect("squashed");
            assert_eq!(done.replaced, SQUASH_AT + 1 - SQUASH_KEEPS);
            squashes += 1;
        }
        let stack = fx.store.stack(session).expect("stack");
        assert!(
            stack.current.len() <= SQUASH_AT,
            "turn {turn}: {}",
            stack.current.len()
        );
    }
    assert!(squashes >= 2, "{squashes}");
    for turn in 1..=140 {
        assert_eq!(read(data.join(format!("f{turn}"))), format!("{turn}\n"));
    }
    assert!(
        !data.join("gone").exists(),
        "a whiteout squashed still hides the file"
    );
    let stack = fx.store.stack(session).expect("stack");
    let bottom = fx.store.layer(&stack.current[0]);
    assert!(
        !bottom.join("gone").exists(),
        "the squashed layer holds the merged view"
    );
    assert_eq!(read(bottom.join("f1")), "1\n");

    // A fork from a recent turn, and the changes of kept turns, old and recent.
    let fork = Uuid::now_v7();
    let fork_data = fx.data(fork);
    fx.store
        .fork(session, ids[129], fork, &fork_data)
        .expect("fork");
    assert_eq!(read(fork_data.join("f130")), "130\n");
    assert_eq!(read(fork_data.join("f1")), "1\n");
    assert!(!fork_data.join("f131").exists());
    assert!(!fork_data.join("gone").exists());
    for n in [111usize, 139] {
        let changes = fx.store.turn_changes(session, ids[n]).expect("changes");
        assert_eq!(changes.changes.len(), 1, "{changes:?}");
        assert_eq!(changes.changes[0].path, format!("f{}", n + 1));
        assert_eq!(changes.changes[0].change, ChangeKind::Added);
    }

    // The layers the squashes replaced go once no kept turn names them.
    fx.store.collect_garbage().expect("gc");
    assert!(layer_count(&fx) <= SQUASH_AT + 30, "{}", layer_count(&fx));
    fx.store.rewind(session, ids[115], &data).expect("rewind");
    assert_eq!(read(data.join("f116")), "116\n");
    assert!(!data.join("f117").exists());
}

#[test]
fn a_turn_end_at_the_cap_squashes_rather_than_refuses() {
    let Some(mut fx) = Fixture::new() else {
        return;
    };
    let session = Uuid::now_v7();
    let data = fx.data(session);
    fx.store.mount(session, &data, None, 0o755).expect("mount");
    for turn in 1..=(MAX_LOWER_LAYERS as u64 + 2) {
        fs::write(data.join(format!("f{turn}")), format!("{turn}\n")).expect("write");
        fx.store
            .commit(session, &data, turn, Uuid::now_v7(), 1000)
            .expect("a turn end is never refused for the cap");
    }
    let stack = fx.store.stack(session).expect("stack");
    assert!(stack.current.len() < MAX_LOWER_LAYERS);
    assert_eq!(stack.turns.len(), MAX_LOWER_LAYERS + 2);
    for turn in 1..=(MAX_LOWER_LAYERS + 2) {
        assert_eq!(read(data.join(format!("f{turn}"))), format!("{turn}\n"));
    }
    // Every kept turn can still be rewound to: those that wrote a merged layer keep it.
    let first = stack.turns[0].turn_id;
    fx.store.rewind(session, first, &data).expect("rewind");
    assert_eq!(read(data.join("f1")), "1\n");
    assert!(!data.join("f2").exists());
}

#[test]
fn a_squash_copies_links_sparse_files_and_deep_trees_without_following_or_filling_them() {
    let Some(mut fx) = Fixture::new() else {
        return;
    };
    let session = Uuid::now_v7();
    let data = fx.data(session);
    fx.store.mount(session, &data, None, 0o755).expect("mount");
    sh(
        &data,
        "ln -s /etc/passwd passwd && mkfifo fifo && truncate -s 1T sparse \
         && printf data >> sparse && mkdir d && rm -r d && mkdir d && echo in > d/x \
         && chmod 4755 d/x",
    );
    deep_tree(&data, 300, b"bottom\n");
    for turn in 1..=(SQUASH_AT as u64 + 1) {
        if turn > 1 {
            fs::write(data.join(format!("f{turn}")), "x").expect("write");
        }
        fx.store
            .commit(session, &data, turn, Uuid::now_v7(), 1)
            .expect("commit");
    }
    let done = fx.store.squash(session).expect("squash").expect("squashed");
    assert_eq!(done.left_out, 1, "the FIFO");
    let layer = fx.store.layer(&done.layer);
    let link = fs::symlink_metadata(layer.join("passwd")).expect("link");
    assert!(link.file_type().is_symlink());
    assert_eq!(
        fs::read_link(layer.join("passwd")).expect("target"),
        std::path::Path::new("/etc/passwd")
    );
    let sparse = fs::metadata(layer.join("sparse")).expect("sparse");
    assert_eq!(sparse.len(), (1 << 40) + 4);
    assert!(
        std::os::unix::fs::MetadataExt::blocks(&sparse) < 1024,
        "a sparse file stays sparse"
    );
    let x = fs::metadata(layer.join("d/x")).expect("x");
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&x.permissions()) & 0o7777,
        0o755
    );
    // The next turn's end mounts the squashed stack; the workspace reads the same.
    fx.store
        .commit(session, &data, 100, Uuid::now_v7(), 1)
        .expect("commit");
    assert_eq!(
        fx.store.stack(session).expect("stack").current[0],
        done.layer
    );
    assert_eq!(read(data.join("d/x")), "in\n");
    let mut deep = data.clone();
    for i in 0..300 {
        deep.push(format!("d{i:018}"));
        if deep.as_os_str().len() > 3500 {
            break;
        }
    }
    assert!(deep.is_dir(), "the deep tree was copied");
    assert!(
        fs::read_to_string("/etc/passwd").is_ok_and(|p| !p.is_empty()),
        "nothing outside was touched"
    );
}

#[test]
fn the_oldest_turns_go_while_the_layers_of_a_session_hold_more_than_max_bytes() {
    let Some(mut fx) = Fixture::new() else {
        return;
    };
    let session = Uuid::now_v7();
    let data = fx.data(session);
    fx.store.mount(session, &data, None, 0o755).expect("mount");
    let mib = vec![7u8; 1 << 20];
    let (t1, t2, t3) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    fs::write(data.join("a"), &mib).expect("write");
    fx.store
        .commit_retaining(session, &data, 1, t1, 100, 10 << 20)
        .expect("commit");
    fs::write(data.join("b"), &mib).expect("write");
    fx.store
        .commit_retaining(session, &data, 2, t2, 100, 10 << 20)
        .expect("commit");
    let stack = fx.store.stack(session).expect("stack");
    assert_eq!(stack.sizes.len(), 2);
    assert!(
        stack.sizes.values().all(|s| *s >= 1 << 20),
        "{:?}",
        stack.sizes
    );
    let two_layers = stack.used_bytes();

    // Turn 2's layer is then used by turn 2 alone: it goes with turn 2.
    fx.store.rewind(session, t1, &data).expect("rewind");
    fs::write(data.join("c"), &mib).expect("write");
    fx.store
        .commit_retaining(session, &data, 3, t3, 100, two_layers + (1 << 19))
        .expect("commit");
    let stack = fx.store.stack(session).expect("stack");
    assert_eq!(
        stack.turns.iter().map(|t| t.turn).collect::<Vec<_>>(),
        [3],
        "the oldest went first, until the layers fit"
    );
    assert!(stack.used_bytes() <= two_layers + (1 << 19));
    assert_eq!(fx.store.collect_garbage().expect("gc"), 1);
    assert!(fx.store.rewind(session, t2, &data).is_err());
    assert_eq!(fs::read(data.join("c")).expect("c"), mib);

    // The newest turn stays, however large.
    fs::write(data.join("d"), &mib).expect("write");
    let t4 = Uuid::now_v7();
    fx.store
        .commit_retaining(session, &data, 4, t4, 100, 1)
        .expect("commit");
    let stack = fx.store.stack(session).expect("stack");
    assert_eq!(stack.turns.len(), 1);
    assert_eq!(stack.turns[0].turn_id, t4);
}

#[test]
fn turn_ends_and_the_collector_running_during_a_squash_lose_nothing() {
    let Some(mut fx) = Fixture::new() else {
        return;
    };
    let session = Uuid::now_v7();
    let data = fx.data(session);
    fx.store.mount(session, &data, None, 0o755).expect("mount");
    // Enough bytes beneath for the squash to take a while.
    let chunk = vec![1u8; 256 * 1024];
    for turn in 1..=(SQUASH_AT as u64 + 1) {
        fs::write(data.join(format!("f{turn}")), &chunk).expect("write");
        fx.store
            .commit(session, &data, turn, Uuid::now_v7(), 1000)
            .expect("commit");
    }
    let store = fx.store.clone();
    let squash = std::thread::spawn(move || store.squash(session));
    let store = fx.store.clone();
    let collector = std::thread::spawn(move || {
        for _ in 0..20 {
            store.collect_garbage().expect("gc");
        }
    });
    let first_new = SQUASH_AT as u64 + 2;
    for turn in first_new..first_new + 10 {
        fs::write(data.join(format!("f{turn}")), format!("{turn}")).expect("write");
        fx.store
            .commit(session, &data, turn, Uuid::now_v7(), 1000)
            .expect("commit");
    }
    let squashed = squash.join().expect("squash thread").expect("squash");
    collector.join().expect("collector thread");
    fx.store.collect_garbage().expect("gc");
    let stack = fx.store.stack(session).expect("stack");
    if let Some(done) = &squashed {
        assert_eq!(stack.current[0], done.layer);
    }
    assert_eq!(stack.turns.len(), SQUASH_AT + 11);
    // Remounted from the stack as it is now: every turn's file is there.
    fx.store
        .commit(session, &data, 999, Uuid::now_v7(), 1000)
        .expect("commit");
    for turn in 1..first_new + 10 {
        assert!(data.join(format!("f{turn}")).is_file(), "f{turn}");
    }
    for kept in &stack.turns {
        for layer in &kept.layers {
            assert!(
                fx.store.layer(layer).is_dir(),
                "turn {} lost {layer}",
                kept.turn
            );
        }
    }
}

#[test]
fn what_an_interrupted_squash_left_is_collected_but_a_running_one_is_not() {
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
    let staging = fx.home().join("overlay").join(super::layers::STAGING_DIR);
    let (dead, running) = (staging.join("dead"), staging.join("running"));
    for dir in [&dead, &running] {
        fs::create_dir_all(dir.join("sub")).expect("mkdir");
        fs::write(dir.join("sub/file"), "half").expect("write");
    }
    let _builder = super::lock::exclusive(&running.with_extension("lock")).expect("lock");
    // A layer moved into place whose stack was never written.
    let orphan = fx.store.layer(&Uuid::now_v7().to_string());
    fs::create_dir(&orphan).expect("mkdir");
    assert_eq!(fx.store.collect_garbage().expect("gc"), 1);
    assert!(!orphan.exists());
    assert!(!dead.exists());
    assert!(running.join("sub/file").is_file());
    assert_eq!(read(data.join("a")), "a");
}
