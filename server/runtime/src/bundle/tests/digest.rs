//! The digest is a function of paths and contents only.

use std::fs;

use super::fixtures::{
    AGENT, MANIFEST, PROJECT_FILES, README, SKILL, load, project, tar_dir, write,
};
use crate::bundle::{BundleStore, InstallOptions, build_to};

#[test]
fn digest_ignores_creation_order_and_modes() {
    let a = project();
    let b = tempfile::tempdir().unwrap();
    write(b.path(), "README.md", README);
    write(b.path(), "skills/greet/SKILL.md", SKILL);
    write(b.path(), "agents/hello/agent.yaml", AGENT);
    write(b.path(), "odyssey.bundle.yaml", MANIFEST);
    fs::set_permissions(
        b.path().join("README.md"),
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    // Left out of bundles, so left out of the digest.
    write(b.path(), ".git/HEAD", "ref: main");
    write(b.path(), "target/debug/x", "build output");
    write(b.path(), "node_modules/pkg/index.js", "module");
    assert_eq!(
        load(a.path()).unwrap().digest,
        load(b.path()).unwrap().digest
    );
}

#[test]
fn digest_changes_with_content_and_framing() {
    let a = project();
    let before = load(a.path()).unwrap().digest;
    write(a.path(), "README.md", &format!("{README}!"));
    assert_ne!(load(a.path()).unwrap().digest, before);

    // Moving a byte between a path and the content must change the digest.
    let x = project();
    write(x.path(), "data/ab", "c");
    let y = project();
    write(y.path(), "data/a", "bc");
    assert_ne!(
        load(x.path()).unwrap().digest,
        load(y.path()).unwrap().digest
    );
}

#[test]
fn digest_is_stable_across_archive_order_compression_and_export() {
    let dir = project();
    let expected = load(dir.path()).unwrap().digest;
    let mut reversed = PROJECT_FILES;
    reversed.reverse();

    let root = tempfile::tempdir().unwrap();
    let store = BundleStore::open(root.path().join("bundles")).unwrap();
    let fast = store
        .install_bundle_archive(
            tar_dir(dir.path(), &PROJECT_FILES, 1).as_slice(),
            &InstallOptions::default(),
        )
        .unwrap();
    let opts = InstallOptions {
        namespace: "other".into(),
        force: false,
    };
    let best = store
        .install_bundle_archive(tar_dir(dir.path(), &reversed, 9).as_slice(), &opts)
        .unwrap();
    assert_eq!(fast.id.digest, expected);
    assert_eq!(best.id.digest, expected);

    // build_to, export and import all keep it, and export is byte-for-byte repeatable.
    let out = root.path().join("out/hello.tar.gz");
    assert_eq!(build_to(dir.path(), &out).unwrap().digest, expected);
    let mut first = Vec::new();
    store.export("hello@0.1.0", &mut first).unwrap();
    let mut second = Vec::new();
    store.export("hello", &mut second).unwrap();
    assert_eq!(first, second);
    assert_eq!(
        first,
        fs::read(&out).unwrap(),
        "build_to and export write the same bytes"
    );

    let other = BundleStore::open(root.path().join("other-store")).unwrap();
    let imported = other
        .install_bundle_archive(first.as_slice(), &InstallOptions::default())
        .unwrap();
    assert_eq!(imported.id.digest, expected);
    assert_eq!(imported.file_count, 4);
}
