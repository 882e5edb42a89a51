//! Round trips and the refusals that keep a hostile archive inside its folder.

use std::fs;

use super::*;
use crate::error::ClientError;

/// A raw tar + gzip archive with one entry, written without the `tar` crate's own path
/// checks (which would stop us from building the hostile archives under test).
fn raw_archive(path: &str, kind: tar::EntryType, data: &[u8], link: Option<&str>) -> Vec<u8> {
    let mut header = tar::Header::new_old();
    {
        let bytes = header.as_old_mut();
        bytes.name[..path.len()].copy_from_slice(path.as_bytes());
        if let Some(link) = link {
            bytes.linkname[..link.len()].copy_from_slice(link.as_bytes());
        }
    }
    header.set_entry_type(kind);
    header.set_size(data.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    let mut tar = header.as_bytes().to_vec();
    tar.extend_from_slice(data);
    tar.resize(tar.len().div_ceil(512) * 512 + 1024, 0);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &tar).unwrap();
    gz.finish().unwrap()
}

fn entry_names(archive: &[u8]) -> Vec<String> {
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(archive));
    tar.entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn packs_sorted_and_skips_hidden_and_build_folders() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for (rel, body) in [
        ("odyssey.bundle.yaml", "a"),
        ("agents/guide/agent.yaml", "b"),
        ("agents.txt", "c"),
        (".git/config", "x"),
        ("skills/.hidden", "x"),
        ("target/debug/bin", "x"),
        ("web/node_modules/x.js", "x"),
    ] {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, body).unwrap();
    }
    let archive = pack_project(root).unwrap();
    assert_eq!(
        entry_names(&archive),
        [
            "agents.txt",
            "agents/guide/agent.yaml",
            "odyssey.bundle.yaml"
        ]
    );
    assert_eq!(
        pack_project(root).unwrap(),
        archive,
        "packing is deterministic"
    );
}

#[cfg(unix)]
#[test]
fn refuses_symlinks_out_of_the_project() {
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret"), "s").unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("link")).unwrap();
    assert!(matches!(
        pack_project(dir.path()),
        Err(ClientError::Unpackable { .. })
    ));
}

#[cfg(unix)]
#[test]
fn follows_symlinks_inside_the_project_and_stops_loops() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("a")).unwrap();
    fs::write(dir.path().join("a/file"), "x").unwrap();
    std::os::unix::fs::symlink(dir.path().join("a/file"), dir.path().join("copy")).unwrap();
    assert_eq!(
        entry_names(&pack_project(dir.path()).unwrap()),
        ["a/file", "copy"]
    );
    std::os::unix::fs::symlink(dir.path().join("a"), dir.path().join("a/loop")).unwrap();
    assert!(matches!(
        pack_project(dir.path()),
        Err(ClientError::Unpackable { .. })
    ));
}

#[test]
fn round_trips_through_unpack() {
    let archive = pack_files(&[("b/c.md", b"two"), ("a.yaml", b"one")]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let written = unpack_archive(&archive, &dir.path().join("out")).unwrap();
    assert_eq!(written, ["a.yaml", "b/c.md"]);
    assert_eq!(
        fs::read_to_string(dir.path().join("out/b/c.md")).unwrap(),
        "two"
    );
}

#[test]
fn pack_files_refuses_escapes_duplicates_and_hidden_names() {
    assert!(pack_files(&[("../x", b"")]).is_err());
    assert!(pack_files(&[("/x", b"")]).is_err());
    assert!(pack_files(&[(".env", b"")]).is_err());
    assert!(pack_files(&[("a", b""), ("./a", b"")]).is_err());
}

#[test]
fn unpack_refuses_hostile_entries_and_writes_nothing() {
    let cases = [
        raw_archive("/etc/evil", tar::EntryType::Regular, b"x", None),
        raw_archive("../evil", tar::EntryType::Regular, b"x", None),
        raw_archive("a/../../evil", tar::EntryType::Regular, b"x", None),
        raw_archive("link", tar::EntryType::Symlink, b"", Some("/etc/passwd")),
        raw_archive("hard", tar::EntryType::Link, b"", Some("/etc/passwd")),
        raw_archive("dev", tar::EntryType::Char, b"", None),
        raw_archive("fifo", tar::EntryType::Fifo, b"", None),
    ];
    for archive in cases {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let result = unpack_archive(&archive, &out);
        assert!(
            matches!(result, Err(ClientError::UnsafeEntry { .. })),
            "{result:?}"
        );
        assert!(
            !out.exists(),
            "nothing may be written for a refused archive"
        );
    }
}

#[test]
fn unpack_never_overwrites() {
    let archive = pack_files(&[("a.yaml", b"new")]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a.yaml"), "old").unwrap();
    assert!(unpack_archive(&archive, dir.path()).is_err());
    assert_eq!(
        fs::read_to_string(dir.path().join("a.yaml")).unwrap(),
        "old"
    );
}

#[test]
fn unpack_refuses_garbage() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        unpack_archive(b"not an archive", dir.path()),
        Err(ClientError::Archive(_))
    ));
}
