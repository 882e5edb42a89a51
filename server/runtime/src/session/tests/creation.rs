//! Sessions created without syncs (a sub-agent's): durable with their first sync, and
//! what a crash before it leaves behind.

use uuid::Uuid;

use super::{record, store, turn_started};
use crate::ErrorKind;

fn session_dir(dir: &tempfile::TempDir, id: Uuid) -> std::path::PathBuf {
    dir.path().join("sessions").join(id.to_string())
}

#[tokio::test]
async fn a_session_created_without_syncs_is_made_durable_by_its_first_sync() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = store(&dir);
    let created = store
        .create_deferred(record())
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!created.creation_is_durable(), "nothing synced yet");
    let plain = store.create(record()).unwrap_or_else(|e| panic!("{e}"));
    assert!(plain.creation_is_durable());

    created
        .append(Some(Uuid::now_v7()), turn_started())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        created.creation_is_durable(),
        "a durability point of the session makes its creation durable with it"
    );

    // An explicit sync with nothing in the log makes it durable too.
    let early = store
        .create_deferred(record())
        .unwrap_or_else(|e| panic!("{e}"));
    early.sync().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(early.creation_is_durable());

    let id = created.id();
    drop((created, plain, early));
    let store = super::store(&dir);
    let reopened = store.get(id).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(reopened.record().id, id);
    assert_eq!(
        reopened.last_sequence(),
        2,
        "its turn's start, and the end that opening it recorded for that turn"
    );
}

#[test]
fn outside_a_runtime_the_first_sync_makes_the_creation_durable_too() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = store(&dir);
    let handle = store
        .create_deferred(record())
        .unwrap_or_else(|e| panic!("{e}"));
    handle
        .append_now(Some(Uuid::now_v7()), turn_started())
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(handle.creation_is_durable());
}

/// A power loss after a session's folder was renamed into place but before its record's
/// data reached the disk leaves an empty record and an empty log: nothing of it was ever
/// durable, so it is cleared, not quarantined. With a log that holds events it is still
/// quarantined: something in it may matter.
#[tokio::test]
async fn a_session_whose_record_never_reached_the_disk_is_cleared_not_quarantined() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (cut, logged) = {
        let store = store(&dir);
        let cut = store
            .create_deferred(record())
            .unwrap_or_else(|e| panic!("{e}"));
        let logged = store
            .create_deferred(record())
            .unwrap_or_else(|e| panic!("{e}"));
        logged
            .append(Some(Uuid::now_v7()), turn_started())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        (cut.id(), logged.id())
    };
    for id in [cut, logged] {
        std::fs::write(session_dir(&dir, id).join("session.json"), b"")
            .unwrap_or_else(|e| panic!("{e}"));
    }

    let store = store(&dir);
    let Err(missing) = store.get(cut).await else {
        panic!("a session with no record opened");
    };
    assert_eq!(missing.kind(), ErrorKind::NotFound, "{missing}");
    assert!(!session_dir(&dir, cut).exists(), "its folder is cleared");
    assert!(store.peek(cut).is_none());

    let Err(quarantined) = store.get(logged).await else {
        panic!("a session with no record opened");
    };
    assert_eq!(
        store
            .quarantined()
            .iter()
            .map(|q| q.session_id.clone())
            .collect::<Vec<_>>(),
        [logged.to_string()],
        "{quarantined}"
    );
}
