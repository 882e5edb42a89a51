//! Hostile archives are refused, name the entry, and leave nothing behind.

use std::fs;
use std::path::Path;

use super::fixtures::{
    AGENT, MANIFEST, PROJECT_FILES, README, RawEntry, SKILL, gzip, project, raw_tar,
};
use crate::bundle::unpack::{ArchiveKind, unpack};
use crate::bundle::{ArchiveLimits, BundleError, BundleStore, InstallOptions};
use crate::error::ErrorKind;

fn store(root: &Path, limits: ArchiveLimits) -> BundleStore {
    BundleStore::open(root.join("bundles"))
        .unwrap()
        .with_limits(limits)
}

/// Nothing but an empty staging directory is left under the store root.
fn assert_clean(root: &Path) {
    let bundles = root.join("bundles");
    let top: Vec<_> = fs::read_dir(&bundles)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(top, [".staging"], "store root holds {top:?}");
    assert_eq!(
        fs::read_dir(bundles.join(".staging")).unwrap().count(),
        0,
        "staging left behind"
    );
}

/// Imports `archive`, which must be refused as invalid naming `entry`; returns the message.
fn refused(archive: &[u8], limits: ArchiveLimits, entry: &str, part: &str) -> String {
    let root = tempfile::tempdir().unwrap();
    let err = store(root.path(), limits)
        .install_bundle_archive(archive, &InstallOptions::default())
        .unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(err, BundleError::InvalidArchive { .. }),
        "{message}"
    );
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert_eq!(err.reason(), "INVALID_ARCHIVE");
    assert_eq!(err.field(), Some(entry), "{message}");
    assert!(message.contains(part), "`{message}` lacks `{part}`");
    assert_clean(root.path());
    message
}

/// A valid bundle (the fixture project's files) with `extra` entries after them.
fn valid_with(extra: &[RawEntry<'_>]) -> Vec<u8> {
    let files = [
        ("odyssey.bundle.yaml", MANIFEST),
        ("agents/hello/agent.yaml", AGENT),
        ("skills/greet/SKILL.md", SKILL),
        ("README.md", README),
    ];
    let mut entries: Vec<RawEntry<'_>> = files
        .iter()
        .map(|(name, text)| RawEntry::file(name, text.as_bytes()))
        .collect();
    entries.extend(extra.iter().map(|e| RawEntry { ..*e }));
    gzip(&raw_tar(&entries), 6)
}

fn with_manifest<'a>(mut entries: Vec<RawEntry<'a>>) -> Vec<u8> {
    entries.insert(
        0,
        RawEntry::file("odyssey.bundle.yaml", MANIFEST.as_bytes()),
    );
    gzip(&raw_tar(&entries), 6)
}

#[test]
fn path_attacks_are_refused() {
    let limits = ArchiveLimits::default();
    refused(
        &with_manifest(vec![RawEntry::file("/etc/cron.d/x", b"x")]),
        limits,
        "/etc/cron.d/x",
        "absolute",
    );
    refused(
        &with_manifest(vec![RawEntry::file("../evil", b"x")]),
        limits,
        "../evil",
        "`..`",
    );
    refused(
        &with_manifest(vec![RawEntry::file("agents/../../evil", b"x")]),
        limits,
        "agents/../../evil",
        "`..`",
    );
    refused(
        &with_manifest(vec![RawEntry::file(".hidden", b"x")]),
        limits,
        ".hidden",
        "never part of a built bundle",
    );
    refused(
        &with_manifest(vec![RawEntry::file("odyssey.bundle.yaml", b"x")]),
        limits,
        "odyssey.bundle.yaml",
        "more than once",
    );
}

#[test]
fn links_devices_and_fifos_are_refused() {
    let limits = ArchiveLimits::default();
    let entry = |name: &'static str, kind, link: &'static [u8]| RawEntry {
        name: name.as_bytes(),
        kind,
        data: b"",
        link,
    };
    let cases = [
        (
            entry("link", tar::EntryType::Symlink, b"/etc/passwd"),
            "symbolic links",
        ),
        (
            entry("inner", tar::EntryType::Symlink, b"README.md"),
            "symbolic links",
        ),
        (
            entry("hard", tar::EntryType::Link, b"odyssey.bundle.yaml"),
            "hard links",
        ),
        (entry("tty", tar::EntryType::Char, b""), "device"),
        (entry("disk", tar::EntryType::Block, b""), "device"),
        (entry("pipe", tar::EntryType::Fifo, b""), "FIFO"),
    ];
    for (raw, part) in cases {
        let name = String::from_utf8(raw.name.to_vec()).unwrap();
        refused(&with_manifest(vec![raw]), limits, &name, part);
    }
}

/// Found by the `bundle_archive` fuzz target: an entry with an empty name was blamed on
/// "entry ``", which points nowhere.
#[test]
fn an_entry_without_a_name_is_named_by_its_position() {
    let limits = ArchiveLimits {
        max_total_bytes: 8,
        ..ArchiveLimits::default()
    };
    let entries = [RawEntry::file("a", b"x"), RawEntry::file("", &[b'x'; 16])];
    refused(
        &gzip(&raw_tar(&entries), 6),
        limits,
        "<entry 2, which has no name>",
        "more than 8 bytes",
    );
}

/// Found by the `bundle_archive` fuzz target: names the file system cannot hold failed
/// while unpacking, as internal errors. GNU long-name records carry them here.
#[test]
fn names_no_file_system_holds_are_refused() {
    let long_name = format!("docs/{}", "n".repeat(300));
    let long_path = "docs/".repeat(300);
    let cases: [(&[u8], &str); 3] = [
        (b"docs/a\0b", "NUL characters"),
        (long_name.as_bytes(), "limited to 255 bytes"),
        (long_path.as_bytes(), "limited to 1024 bytes"),
    ];
    for (name, part) in cases {
        let entries = vec![
            RawEntry {
                name: b"././@LongLink",
                kind: tar::EntryType::GNULongName,
                data: name,
                link: b"",
            },
            RawEntry::file("placeholder", b"x"),
        ];
        let entry = String::from_utf8_lossy(name).into_owned();
        refused(
            &with_manifest(entries),
            ArchiveLimits::default(),
            &entry,
            part,
        );
    }
}

#[test]
fn too_many_entries_are_refused() {
    let limits = ArchiveLimits {
        max_entries: 5,
        ..ArchiveLimits::default()
    };
    let names: Vec<String> = (0..10).map(|i| format!("data/{i}.txt")).collect();
    let entries = names.iter().map(|n| RawEntry::file(n, b"x")).collect();
    refused(
        &with_manifest(entries),
        limits,
        "data/4.txt",
        "more than 5 entries",
    );
}

#[test]
fn gzip_bomb_is_stopped_while_inflating() {
    let limits = ArchiveLimits {
        max_total_bytes: 1024 * 1024,
        ..ArchiveLimits::default()
    };
    // 64 MiB of zeros compresses to a few dozen KiB; the declared size stops it first.
    let zeros = vec![0u8; 64 * 1024 * 1024];
    let bomb = with_manifest(vec![RawEntry::file("big.bin", &zeros)]);
    assert!(
        bomb.len() < 128 * 1024,
        "bomb is {} bytes compressed",
        bomb.len()
    );
    refused(&bomb, limits, "big.bin", "more than 1048576 bytes");

    // Files under the single-file limit that add up past the total are refused too.
    let half = vec![7u8; 600 * 1024];
    let archive = with_manifest(vec![
        RawEntry::file("a.bin", &half),
        RawEntry::file("b.bin", &half),
    ]);
    refused(&archive, limits, "b.bin", "more than 1048576 bytes");

    // A GNU long-name record is read into memory by the tar reader, with no declared file
    // size to check: the cap on the decompressed stream must stop it.
    let small = ArchiveLimits {
        max_entries: 4,
        max_total_bytes: 1024 * 1024,
        ..ArchiveLimits::default()
    };
    let huge_name = vec![b'a'; 8 * 1024 * 1024];
    let entries = vec![
        RawEntry {
            name: b"././@LongLink",
            kind: tar::EntryType::GNULongName,
            data: &huge_name,
            link: b"",
        },
        RawEntry::file("after", b"x"),
    ];
    let message = refused(
        &with_manifest(entries),
        small,
        "after odyssey.bundle.yaml",
        "inflates past",
    );
    assert!(message.contains("inflates past"), "{message}");
}

#[test]
fn garbage_is_an_invalid_archive() {
    refused(
        b"this is not gzip",
        ArchiveLimits::default(),
        "<start of archive>",
        "unreadable archive",
    );
    let truncated = {
        let full = raw_tar(&[RawEntry::file("odyssey.bundle.yaml", MANIFEST.as_bytes())]);
        gzip(&full[..700], 6)
    };
    refused(
        &truncated,
        ArchiveLimits::default(),
        "odyssey.bundle.yaml",
        "",
    );
}

#[test]
fn invalid_bundle_content_leaves_nothing_behind() {
    let root = tempfile::tempdir().unwrap();
    let archive = with_manifest(vec![]);
    let err = store(root.path(), ArchiveLimits::default())
        .install_bundle_archive(archive.as_slice(), &InstallOptions::default())
        .unwrap_err();
    assert_eq!(err.reason(), "INVALID_MANIFEST", "{err}");
    assert_clean(root.path());
}

#[test]
fn project_archives_skip_what_builds_skip() {
    let dir = project();
    let mut tar = tar::Builder::new(Vec::new());
    for rel in PROJECT_FILES {
        let data = fs::read(dir.path().join(rel)).unwrap();
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        tar.append_data(&mut header, format!("proj/{rel}"), data.as_slice())
            .unwrap();
    }
    let mut link = tar::Header::new_gnu();
    link.set_entry_type(tar::EntryType::Symlink);
    link.set_size(0);
    tar.append_link(&mut link, "proj/node_modules/.bin/tool", "../tool/cli.js")
        .unwrap();
    let mut git = tar::Header::new_gnu();
    git.set_size(4);
    git.set_mode(0o644);
    tar.append_data(&mut git, "proj/.git/HEAD", &b"main"[..])
        .unwrap();
    let archive = gzip(&tar.into_inner().unwrap(), 6);

    let root = tempfile::tempdir().unwrap();
    let store = store(root.path(), ArchiveLimits::default());
    let installed = store
        .install_project_archive(archive.as_slice(), &InstallOptions::default())
        .unwrap();
    assert_eq!(installed.file_count, 4);
    assert!(!installed.root.join(".git").exists() && !installed.root.join("node_modules").exists());
    assert_eq!(
        installed.id.digest,
        super::fixtures::load(dir.path()).unwrap().digest
    );

    // The same archive is not a built bundle: import refuses the skipped entries.
    let err = store
        .install_bundle_archive(archive.as_slice(), &InstallOptions::default())
        .unwrap_err();
    assert_eq!(err.reason(), "INVALID_ARCHIVE", "{err}");
}

/// An entry whose name may be longer than a tar header holds (a GNU long-name record first).
fn named<'a>(name: &'a str, kind: tar::EntryType, data: &'a [u8]) -> [RawEntry<'a>; 2] {
    [
        RawEntry {
            name: b"././@LongLink",
            kind: tar::EntryType::GNULongName,
            data: name.as_bytes(),
            link: b"",
        },
        RawEntry {
            name: b"placeholder",
            kind,
            data,
            link: b"",
        },
    ]
}

/// Issue 12 item 1: every limit is checked before anything is written. The destination here
/// cannot be written at all (its parent is a file), so an archive that broke a limit only
/// after some entries were written would fail on the disk; it must fail on the limit.
#[test]
fn limits_are_checked_before_anything_is_written() {
    let root = tempfile::tempdir().unwrap();
    fs::write(root.path().join("file"), b"").unwrap();
    let dest = root.path().join("file/dest");
    let names: Vec<String> = (0..10).map(|i| format!("data/{i}.txt")).collect();
    let files = || names.iter().map(|n| RawEntry::file(n, b"x"));
    let deep = "d/".repeat(64) + "f";
    let big = vec![b'x'; 64];
    let cases: [(Vec<RawEntry<'_>>, ArchiveLimits, &str, &str); 4] = [
        (
            files().collect(),
            ArchiveLimits {
                max_entries: 9,
                ..ArchiveLimits::default()
            },
            "data/9.txt",
            "more than 9 entries",
        ),
        (
            files().chain([RawEntry::file("big.bin", &big)]).collect(),
            ArchiveLimits {
                max_total_bytes: 32,
                ..ArchiveLimits::default()
            },
            "big.bin",
            "more than 32 bytes",
        ),
        (
            files()
                .chain(named(&deep, tar::EntryType::Regular, b"x"))
                .collect(),
            ArchiveLimits::default(),
            &deep,
            "levels deep",
        ),
        (
            files()
                .chain([RawEntry::file("data/0.txt", b"y")])
                .collect(),
            ArchiveLimits::default(),
            "data/0.txt",
            "more than once",
        ),
    ];
    for (entries, limits, entry, part) in cases {
        let archive = gzip(&raw_tar(&entries), 6);
        let err = unpack(&archive, &dest, ArchiveKind::Bundle, &limits).unwrap_err();
        assert_eq!(err.reason(), "INVALID_ARCHIVE", "{err}");
        assert_eq!(err.field(), Some(entry), "{err}");
        assert!(err.to_string().contains(part), "`{err}` lacks `{part}`");
    }
    assert!(!dest.exists());
}

/// Issue 12 item 1: a tree deeper than a bundle may be is refused as the archive entry it
/// is, before it is unpacked (it used to be written out and refused by the project walk).
#[test]
fn too_deep_a_path_is_refused_by_entry() {
    let deep = "d/".repeat(64) + "f.txt";
    refused(
        &with_manifest(named(&deep, tar::EntryType::Regular, b"x").into()),
        ArchiveLimits::default(),
        &deep,
        "nested more than 64 levels deep",
    );
    let deep_dir = "d/".repeat(64);
    refused(
        &with_manifest(named(&deep_dir, tar::EntryType::Directory, b"").into()),
        ArchiveLimits::default(),
        &deep_dir,
        "nested more than 64 levels deep",
    );
    // As deep as a bundle may go installs.
    let deepest = "d/".repeat(63) + "f.txt";
    let root = tempfile::tempdir().unwrap();
    store(root.path(), ArchiveLimits::default())
        .install_bundle_archive(
            &valid_with(&named(&deepest, tar::EntryType::Regular, b"x")),
            &InstallOptions::default(),
        )
        .unwrap();
}

/// Issue 12 item 1: a gzip bomb within the size limit is stopped after inflating a bounded
/// multiple of its own size, not at the (much larger) size limit.
#[test]
fn an_archive_inflating_far_past_its_size_is_refused() {
    let zeros = vec![0u8; 16 * 1024 * 1024];
    let bomb = with_manifest(vec![RawEntry::file("zeros.bin", &zeros)]);
    assert!(bomb.len() < 64 * 1024, "bomb is {} bytes", bomb.len());
    refused(
        &bomb,
        ArchiveLimits::default(),
        "zeros.bin",
        "more than 100 times its",
    );
    // Small archives inflate as far as the first MiB whatever their ratio.
    let root = tempfile::tempdir().unwrap();
    let small = vec![0u8; 512 * 1024];
    store(root.path(), ArchiveLimits::default())
        .install_bundle_archive(
            &valid_with(&[RawEntry::file("zeros.bin", &small)]),
            &InstallOptions::default(),
        )
        .unwrap();
}
