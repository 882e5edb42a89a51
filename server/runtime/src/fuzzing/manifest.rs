//! `bundle_manifest`: loading and validating a bundle directory (`odyssey.bundle.yaml`, the
//! agent files, skills and readme it names) written from the input.
//!
//! The input is a file tree in one text: the manifest, then each further file after a NUL
//! byte as `<relative path>\n<content>`, so a real bundle is a readable seed
//! (`fuzz/corpus/bundle_manifest/`). The harness writes only plain relative paths; the
//! manifest may name anything, which is what the loader must survive.
//!
//! A bundle that loads must keep the promises of a loaded manifest, and be installed from
//! its directory, exported and imported again with the same digest and manifest. A bundle
//! that does not load must be refused as the client's mistake.

use std::collections::HashSet;
use std::fs;
use std::path::Path;

use super::scratch::{self, assert_bad_input, canonical};
use crate::bundle::{
    ArchiveLimits, BundleStore, InstallOptions, LoadedBundle, MANIFEST_FILE, load_project,
};

/// Small limits, so the fuzzer also reaches the limit checks.
const LIMITS: ArchiveLimits = ArchiveLimits {
    max_entries: 32,
    max_total_bytes: 64 * 1024,
    max_expansion: 100,
};

/// Files after the manifest that the harness writes at most.
const MAX_FILES: usize = 16;

pub fn bundle_manifest(data: &[u8]) {
    let scratch = scratch::dir();
    let root = scratch.path().join("project");
    write_tree(&root, data);
    match load_project(&root, &LIMITS) {
        Ok(loaded) => {
            check_loaded(&root, &loaded);
            check_round_trip(scratch.path(), &loaded);
        }
        Err(e) => assert_bad_input(&e, scratch.path()),
    }
}

/// Writes the manifest and the files the input describes under `root`.
fn write_tree(root: &Path, data: &[u8]) {
    let mut parts = data.split(|b| *b == 0);
    let manifest = parts.next().unwrap_or_default();
    fs::create_dir(root).unwrap_or_else(|e| panic!("cannot create {}: {e}", root.display()));
    fs::write(root.join(MANIFEST_FILE), manifest)
        .unwrap_or_else(|e| panic!("cannot write the manifest: {e}"));
    for part in parts.take(MAX_FILES) {
        let (path, content) = match part.iter().position(|b| *b == b'\n') {
            Some(i) => (&part[..i], &part[i + 1..]),
            None => (part, &[][..]),
        };
        let Some(rel) = harness_path(path) else {
            continue;
        };
        let target = root.join(rel);
        // A path clashing with a file or folder written before is skipped.
        if let Some(parent) = target.parent()
            && fs::create_dir_all(parent).is_err()
        {
            continue;
        }
        let _ = fs::write(&target, content);
    }
}

/// The paths the harness writes: relative, at most 8 levels of short ASCII names.
fn harness_path(raw: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(raw).ok()?;
    let plain = |part: &str| {
        !part.is_empty()
            && part != "."
            && part != ".."
            && part.len() <= 64
            && part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    };
    let parts: Vec<&str> = text.split('/').collect();
    (parts.len() <= 8 && parts.iter().all(|p| plain(p))).then_some(text)
}

/// What every loaded manifest guarantees to the rest of the runtime.
fn check_loaded(root: &Path, loaded: &LoadedBundle) {
    let m = &loaded.manifest;
    assert!(!m.agents.is_empty(), "a loaded bundle has no agent");
    let defaults = m.agents.iter().filter(|a| a.is_default).count();
    assert_eq!(defaults, 1, "a loaded bundle has {defaults} default agents");
    let mut ids = HashSet::new();
    for agent in &m.agents {
        assert!(ids.insert(&agent.id), "agent id {:?} twice", agent.id);
    }
    let mut names = HashSet::new();
    for skill in &m.skills {
        assert!(names.insert(&skill.name), "skill {:?} twice", skill.name);
        assert_file_inside(root, &skill.path);
    }
    if let Some(readme) = &m.readme {
        assert_file_inside(root, readme);
    }
    assert!(
        loaded.file_count as usize <= LIMITS.max_entries
            && loaded.size_bytes <= LIMITS.max_total_bytes,
        "a loaded bundle is past its limits: {} files, {} bytes",
        loaded.file_count,
        loaded.size_bytes
    );
}

fn assert_file_inside(root: &Path, rel: &str) {
    let path = canonical(&root.join(rel));
    assert!(
        path.starts_with(canonical(root)) && path.is_file(),
        "`{rel}` is not a file inside the bundle"
    );
}

/// Installing the directory, then exporting and importing it, keeps digest and manifest.
fn check_round_trip(scratch: &Path, loaded: &LoadedBundle) {
    let open = |name: &str| {
        BundleStore::open(scratch.join(name))
            .unwrap_or_else(|e| panic!("cannot open a bundle store: {e}"))
            .with_limits(LIMITS)
    };
    let opts = InstallOptions::default();
    let store = open("store");
    let installed = store
        .build_and_install(&loaded.root, &opts)
        .unwrap_or_else(|e| panic!("a bundle that loads does not install: {e}"));
    assert_eq!(
        installed.id.digest, loaded.digest,
        "install changed the digest"
    );
    assert_eq!(
        installed.manifest, loaded.manifest,
        "install changed the manifest"
    );

    let mut archive = Vec::new();
    store
        .export(&installed.id.to_string(), &mut archive)
        .unwrap_or_else(|e| {
            panic!(
                "an installed bundle does not export as {}: {e}",
                installed.id
            )
        });
    let imported = open("imported")
        .install_bundle_archive(archive.as_slice(), &opts)
        .unwrap_or_else(|e| panic!("an exported bundle does not import: {e}"));
    assert_eq!(
        imported.id, installed.id,
        "export and import changed the id"
    );
    assert_eq!(
        imported.manifest, loaded.manifest,
        "export and import changed the manifest"
    );
}
