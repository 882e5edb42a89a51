//! The store suite against the file store.

use tempfile::TempDir;

use super::Store;
use super::suite::Stores;
use crate::config::RuntimeConfig;

async fn open_file_store() -> (Stores, (Store, TempDir)) {
    let home = match tempfile::tempdir() {
        Ok(home) => home,
        Err(e) => panic!("temporary home: {e}"),
    };
    let store = match Store::files(&RuntimeConfig::with_home(home.path())) {
        Ok(store) => store,
        Err(e) => panic!("open the file store: {e}"),
    };
    (Stores::from(&store), (store, home))
}

crate::store_suite!(open_file_store);

/// The file store checks a bundle's files against its digest whenever it is read
/// through the store: files changed on disk since install are refused.
#[tokio::test]
async fn a_bundle_changed_on_disk_is_refused_on_read() {
    let (stores, _keep) = open_file_store().await;
    let (archive, digest) = super::suite::bundle_archive("tampered");
    let installed = match stores
        .bundles
        .install_archive(archive, crate::InstallOptions::default())
        .await
    {
        Ok(installed) => installed,
        Err(e) => panic!("install: {e}"),
    };
    let manifest = installed.root.join(crate::bundle::MANIFEST_FILE);
    let text = std::fs::read_to_string(&manifest).unwrap_or_default();
    std::fs::write(&manifest, format!("{text}\n# changed\n"))
        .unwrap_or_else(|e| panic!("change the manifest: {e}"));
    for read in [
        stores.bundles.bundle_by_digest(digest.clone()).await.err(),
        stores.bundles.bundle_archive(digest.clone()).await.err(),
    ] {
        match read {
            Some(super::StoreError::Bundle(crate::bundle::BundleError::Corrupt { .. })) => {}
            other => panic!("a bundle whose files changed was served: {other:?}"),
        }
    }
}

/// A store made of parts serves its traits, and a runtime is not built on it while the
/// runtime still needs the file store's own types: it says which store it refused.
#[tokio::test]
async fn a_store_made_of_parts_serves_its_traits_and_the_runtime_refuses_it_by_name() {
    let home = match tempfile::tempdir() {
        Ok(home) => home,
        Err(e) => panic!("temporary home: {e}"),
    };
    let config = RuntimeConfig::with_home(home.path());
    let files = match Store::files(&config) {
        Ok(store) => store,
        Err(e) => panic!("open the file store: {e}"),
    };
    let parts = Store::from_parts(
        "elsewhere",
        files.session_records(),
        files.event_logs(),
        files.turn_journal(),
        files.turn_queue(),
        files.bundles(),
    );
    assert_eq!(parts.kind(), "elsewhere");
    let stores = Stores::from(&parts);
    let record = super::suite::record("main");
    let id = record.id;
    assert!(stores.records.create_session(record).await.is_ok());
    assert!(matches!(
        files.session_records().session(id).await,
        Ok(Some(_))
    ));
    let started = crate::OdysseyRuntime::builder(config)
        .store(parts)
        .start()
        .await
        .err()
        .map(|e| e.to_string());
    match started {
        Some(message) if message.contains("elsewhere") => {}
        other => panic!("a runtime on a store it cannot serve from: {other:?}"),
    }
}

/// The runtime reads and writes what the store it is given holds: a session created and
/// written through the store's traits is served, followed from its first event (most of
/// them behind the live ring, so read back from the log), listed and deleted by the
/// runtime, and the deletion is what the store then holds.
#[tokio::test]
async fn the_runtime_serves_what_its_store_holds() {
    let home = match tempfile::tempdir() {
        Ok(home) => home,
        Err(e) => panic!("temporary home: {e}"),
    };
    let config = RuntimeConfig::with_home(home.path());
    let store = match Store::files(&config) {
        Ok(store) => store,
        Err(e) => panic!("open the file store: {e}"),
    };
    let stores = Stores::from(&store);
    let runtime = match crate::OdysseyRuntime::builder(config)
        .store(store)
        .start()
        .await
    {
        Ok(runtime) => runtime,
        Err(e) => panic!("start the runtime: {e}"),
    };
    let record = super::suite::record("main");
    let id = record.id;
    if let Err(e) = stores.records.create_session(record).await {
        panic!("create: {e}");
    }
    let events = 1_500;
    match stores
        .logs
        .append_events(id, 1, super::suite::texts(events, 0))
        .await
    {
        Ok(last) => assert_eq!(last, events as u64),
        Err(e) => panic!("append: {e}"),
    }

    let info = runtime
        .get_session(id)
        .await
        .unwrap_or_else(|e| panic!("get: {e}"));
    assert_eq!(info.stats.last_sequence, events as u64);
    let listed = runtime
        .list_sessions(Default::default(), crate::paging::PageRequest::first(10))
        .await
        .map(|page| page.items.iter().map(|i| i.record.id).collect::<Vec<_>>());
    assert_eq!(listed.ok(), Some(vec![id]));

    let mut subscription = runtime
        .subscribe_session(id, 0)
        .await
        .unwrap_or_else(|e| panic!("subscribe: {e}"));
    let mut seen = Vec::new();
    while seen.len() < events {
        match subscription.next_batch().await {
            Ok(Some(batch)) => seen.extend(batch.iter().map(|e| e.sequence)),
            other => panic!("the subscription ended early: {other:?}"),
        }
    }
    assert_eq!(seen, (1..=events as u64).collect::<Vec<_>>());
    drop(subscription);

    if let Err(e) = runtime.delete_session(id).await {
        panic!("delete: {e}");
    }
    assert!(matches!(stores.records.session(id).await, Ok(None)));
    assert!(
        runtime
            .get_session(id)
            .await
            .is_err_and(|e| matches!(e, crate::RuntimeError::NotFound { .. }))
    );
}
