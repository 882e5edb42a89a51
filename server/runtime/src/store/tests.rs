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
