//! Installing, resolving, listing, replacing and deleting bundles in a real store.

use std::fs;
use std::sync::Arc;

use super::fixtures::{AGENT, README, project, project_with, write};
use crate::bundle::{BundleError, BundleStore, InstallOptions, RECORD_FILE, build_to};
use crate::error::ErrorKind;

fn open(root: &tempfile::TempDir) -> BundleStore {
    BundleStore::open(root.path().join("bundles")).unwrap()
}

fn local() -> InstallOptions {
    InstallOptions::default()
}

fn versioned(version: &str) -> tempfile::TempDir {
    project_with(|m| m.replace("version: 0.1.0", &format!("version: {version}")))
}

#[test]
fn install_resolve_and_read() {
    let root = tempfile::tempdir().unwrap();
    let store = open(&root);
    let dir = project();
    let installed = store.build_and_install(dir.path(), &local()).unwrap();
    assert_eq!(installed.id.to_string(), "local/hello@0.1.0");
    assert_eq!(
        installed.root,
        root.path().join("bundles/local/hello/0.1.0")
    );
    assert!(installed.root.join(RECORD_FILE).is_file());
    assert_eq!(installed.file_count, 4);
    assert_eq!(installed.size_bytes, dir_size(dir.path()));
    assert_eq!(installed.readme_text().as_deref(), Some(README));
    assert_eq!(
        installed.read_skill("greet").unwrap(),
        "\n# Greet\n\nSay hi.\n"
    );
    let err = installed.read_skill("nope").unwrap_err();
    assert_eq!(
        (err.kind(), err.reason()),
        (ErrorKind::NotFound, "SKILL_NOT_FOUND")
    );

    // A second resolve is served from the cache: the very same Arc, no parsing.
    let first = store.resolve("hello").unwrap();
    assert!(Arc::ptr_eq(
        &first,
        &store.resolve("local/hello@0.1.0").unwrap()
    ));
    assert!(Arc::ptr_eq(&first, &installed));

    // A fresh store reads it back from disk identically.
    let reopened = open(&root)
        .resolve(&format!("@{}", installed.id.digest))
        .unwrap();
    assert_eq!(reopened.id, installed.id);
    assert_eq!(reopened.installed_at, installed.installed_at);
    assert_eq!(reopened.manifest, installed.manifest);
}

fn dir_size(dir: &std::path::Path) -> u64 {
    super::fixtures::PROJECT_FILES
        .iter()
        .map(|f| fs::metadata(dir.join(f)).unwrap().len())
        .sum()
}

#[test]
fn same_content_twice_is_idempotent_different_content_needs_force() {
    let root = tempfile::tempdir().unwrap();
    let store = open(&root);
    let first = store.build_and_install(project().path(), &local()).unwrap();
    let again = store.build_and_install(project().path(), &local()).unwrap();
    assert_eq!(again.id, first.id);
    assert_eq!(
        again.installed_at, first.installed_at,
        "the existing install is returned"
    );

    let changed = project();
    write(
        changed.path(),
        "agents/hello/agent.yaml",
        &AGENT.replace("helpful", "terse"),
    );
    let err = store
        .build_and_install(changed.path(), &local())
        .unwrap_err();
    assert_eq!(
        (err.kind(), err.reason()),
        (ErrorKind::AlreadyExists, "BUNDLE_VERSION_EXISTS")
    );
    assert!(err.to_string().contains("pass force"), "{err}");
    assert_eq!(store.resolve("hello").unwrap().id.digest, first.id.digest);

    let forced = store
        .build_and_install(
            changed.path(),
            &InstallOptions {
                force: true,
                ..local()
            },
        )
        .unwrap();
    assert_ne!(forced.id.digest, first.id.digest);
    let resolved = store.resolve("hello@0.1.0").unwrap();
    assert_eq!(resolved.id.digest, forced.id.digest);
    assert_eq!(
        resolved.manifest.default_agent().prompt,
        "You are a terse agent."
    );
    assert_eq!(
        open(&root).resolve("hello").unwrap().id.digest,
        forced.id.digest
    );
    assert_eq!(
        fs::read_dir(root.path().join("bundles/.staging"))
            .unwrap()
            .count(),
        0
    );
}

#[test]
fn latest_is_the_highest_semver() {
    let root = tempfile::tempdir().unwrap();
    let store = open(&root);
    for version in ["0.9.0", "0.10.0", "0.2.0", "0.10.0-rc.1"] {
        store
            .build_and_install(versioned(version).path(), &local())
            .unwrap();
    }
    assert_eq!(
        store.resolve("hello").unwrap().id.version.to_string(),
        "0.10.0"
    );
    assert_eq!(
        store
            .resolve("hello@latest")
            .unwrap()
            .id
            .version
            .to_string(),
        "0.10.0"
    );
    assert_eq!(
        store.resolve("local/hello").unwrap().id.version.to_string(),
        "0.10.0"
    );
    assert_eq!(
        store.resolve("hello@0.9.0").unwrap().id.version.to_string(),
        "0.9.0"
    );
    let err = store.resolve("hello@1.0.0").unwrap_err();
    assert_eq!(
        (err.kind(), err.reason()),
        (ErrorKind::NotFound, "BUNDLE_NOT_FOUND")
    );
}

#[test]
fn namespaces_digests_and_listing() {
    let root = tempfile::tempdir().unwrap();
    let store = open(&root);
    let team = InstallOptions {
        namespace: "team".into(),
        force: false,
    };
    let a = store.build_and_install(project().path(), &team).unwrap();
    assert!(matches!(
        store.resolve("hello"),
        Err(BundleError::NotFound { .. })
    ));
    assert_eq!(store.resolve("team/hello").unwrap().id, a.id);

    let b = store.build_and_install(project().path(), &local()).unwrap();
    store
        .build_and_install(versioned("2.0.0").path(), &local())
        .unwrap();
    let err = store.resolve(&format!("@{}", a.id.digest)).unwrap_err();
    assert_eq!(err.reason(), "AMBIGUOUS_REFERENCE");
    assert!(
        err.to_string().contains("local/hello@0.1.0")
            && err.to_string().contains("team/hello@0.1.0"),
        "{err}"
    );
    assert_eq!(
        store.resolve(&format!("hello@{}", a.id.digest)).unwrap().id,
        b.id
    );
    assert_eq!(
        store
            .resolve(&format!("team/hello@{}", a.id.digest))
            .unwrap()
            .id,
        a.id
    );
    let missing = format!("@sha256:{}", "0".repeat(64));
    assert_eq!(
        store.resolve(&missing).unwrap_err().reason(),
        "BUNDLE_NOT_FOUND"
    );

    let listed: Vec<String> = store
        .list(None)
        .unwrap()
        .iter()
        .map(|b| b.id.to_string())
        .collect();
    assert_eq!(
        listed,
        ["local/hello@0.1.0", "local/hello@2.0.0", "team/hello@0.1.0"]
    );
    assert_eq!(store.list(Some("team")).unwrap().len(), 1);
    assert!(store.list(Some("nobody")).unwrap().is_empty());
    assert_eq!(
        store.list(Some("Bad/ns")).unwrap_err().reason(),
        "INVALID_NAME"
    );

    let err = store.build_and_install(
        project().path(),
        &InstallOptions {
            namespace: "../x".into(),
            force: false,
        },
    );
    assert_eq!(err.unwrap_err().reason(), "INVALID_NAME");
}

#[test]
fn delete_removes_the_bundle() {
    let root = tempfile::tempdir().unwrap();
    let store = open(&root);
    store.build_and_install(project().path(), &local()).unwrap();
    store
        .build_and_install(versioned("0.2.0").path(), &local())
        .unwrap();

    let deleted = store.delete("hello@0.1.0").unwrap();
    assert_eq!(deleted.id.to_string(), "local/hello@0.1.0");
    assert!(!deleted.root.exists());
    assert_eq!(
        store.resolve("hello@0.1.0").unwrap_err().reason(),
        "BUNDLE_NOT_FOUND"
    );
    assert_eq!(
        store.resolve("hello").unwrap().id.version.to_string(),
        "0.2.0"
    );

    store.delete("hello").unwrap();
    assert!(store.list(None).unwrap().is_empty());
    assert!(
        !root.path().join("bundles/local").exists(),
        "empty folders are removed"
    );
    assert_eq!(
        store.delete("hello").unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        fs::read_dir(root.path().join("bundles/.staging"))
            .unwrap()
            .count(),
        0
    );
}

#[test]
fn open_removes_leftover_staging() {
    let root = tempfile::tempdir().unwrap();
    let leftover = root.path().join("bundles/.staging/0000-crashed");
    write(&leftover, "odyssey.bundle.yaml", "half written");
    let store = open(&root);
    assert!(!leftover.exists());
    assert!(store.list(None).unwrap().is_empty());
}

#[test]
fn project_symlinks_inside_are_followed_outside_refused() {
    let root = tempfile::tempdir().unwrap();
    let store = open(&root);
    let dir = project();
    write(dir.path(), "shared/notes.md", "notes");
    std::os::unix::fs::symlink("../shared/notes.md", dir.path().join("agents/notes.md")).unwrap();
    let installed = store.build_and_install(dir.path(), &local()).unwrap();
    let copied = installed.root.join("agents/notes.md");
    assert!(
        fs::symlink_metadata(&copied).unwrap().file_type().is_file(),
        "copied as a file"
    );
    assert_eq!(fs::read_to_string(copied).unwrap(), "notes");

    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "secret", "s3cret");
    std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("leak")).unwrap();
    let err = store
        .build_and_install(
            dir.path(),
            &InstallOptions {
                force: true,
                ..local()
            },
        )
        .unwrap_err();
    assert_eq!(err.reason(), "INVALID_PROJECT");
    assert_eq!(err.field(), Some("leak"));
    assert!(err.to_string().contains("outside the project"), "{err}");
    let err = build_to(dir.path(), &root.path().join("x.tar.gz")).unwrap_err();
    assert_eq!(err.field(), Some("leak"));
    assert!(!root.path().join("x.tar.gz").exists());
}

#[test]
fn build_to_output_imports_with_the_same_id() {
    let root = tempfile::tempdir().unwrap();
    let dir = project();
    let out = dir.path().join("hello.tar.gz");
    let built = build_to(dir.path(), &out).unwrap();
    // Building again into the project does not package the previous artifact.
    assert_eq!(build_to(dir.path(), &out).unwrap(), built);
    assert_eq!(built.to_string(), "local/hello@0.1.0");
    let store = open(&root);
    let imported = store
        .install_bundle_archive(&fs::read(&out).unwrap(), &local())
        .unwrap();
    assert_eq!(imported.id, built);
    assert!(!imported.root.join("hello.tar.gz").exists());
}

#[test]
fn store_is_shareable_and_io_errors_keep_their_kind() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<BundleStore>();
    assert_send_sync::<crate::bundle::InstalledBundle>();

    let full = BundleError::io(
        "writing",
        std::io::Error::from(std::io::ErrorKind::StorageFull),
    );
    assert_eq!(
        (full.kind(), full.reason()),
        (ErrorKind::ResourceExhausted, "DISK_FULL")
    );
    let ro = BundleError::io(
        "writing",
        std::io::Error::from(std::io::ErrorKind::ReadOnlyFilesystem),
    );
    assert_eq!(
        (ro.kind(), ro.reason()),
        (ErrorKind::Unavailable, "STORAGE_READ_ONLY")
    );
    let other = BundleError::io("writing", std::io::Error::other("boom"));
    assert_eq!(other.kind(), ErrorKind::Internal);
    assert!(std::error::Error::source(&other).is_some());
}

#[test]
fn concurrent_resolves_share_one_parse() {
    let root = tempfile::tempdir().unwrap();
    let store = Arc::new(open(&root));
    store.build_and_install(project().path(), &local()).unwrap();
    let fresh = Arc::new(open(&root));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let store = Arc::clone(&fresh);
            std::thread::spawn(move || store.resolve("hello").map(|b| b.id.clone()))
        })
        .collect();
    for handle in handles {
        assert_eq!(
            handle.join().unwrap().unwrap().to_string(),
            "local/hello@0.1.0"
        );
    }
    assert!(Arc::ptr_eq(
        &fresh.resolve("hello").unwrap(),
        &fresh.resolve("hello@0.1.0").unwrap()
    ));
}
