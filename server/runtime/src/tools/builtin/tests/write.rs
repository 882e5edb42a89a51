//! `Write`: whole files, atomically, with the body kept out of recorded arguments.

use std::fs;
use std::os::unix::fs::PermissionsExt;

use serde_json::json;

use super::fixture::Fixture;
use crate::tools::builtin::builtin;

#[tokio::test]
async fn creates_parents_and_replaces_files() {
    let fx = Fixture::new();
    let text = fx
        .ok("Write", json!({"path": "a/b/c.txt", "content": "hello\n"}))
        .await;
    assert_eq!(text, "created `a/b/c.txt` (6 bytes)");
    assert_eq!(fx.read("a/b/c.txt"), "hello\n");
    let text = fx
        .ok("Write", json!({"path": "a/b/c.txt", "content": "bye"}))
        .await;
    assert_eq!(text, "replaced `a/b/c.txt` (3 bytes)");
    assert_eq!(fx.read("a/b/c.txt"), "bye");
    let names: Vec<_> = fs::read_dir(fx.ws().join("a/b"))
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names, ["c.txt"], "no temporary file is left behind");
}

#[tokio::test]
async fn replacing_keeps_the_file_mode() {
    let fx = Fixture::new();
    let script = fx.put("run.sh", "echo one\n");
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).expect("chmod");
    fx.ok("Write", json!({"path": "run.sh", "content": "echo two\n"}))
        .await;
    let mode = fs::metadata(&script).expect("meta").permissions().mode();
    assert_eq!(mode & 0o777, 0o755);
}

/// Issue 11 item 2: writing over a set-user-ID file never leaves one behind, and as root
/// the file belongs to the sandbox user, never to root.
#[tokio::test]
async fn a_written_file_never_carries_special_bits_or_roots_ownership() {
    use std::os::unix::fs::MetadataExt;
    let mut fx = Fixture::new();
    let root = rustix::process::geteuid().is_root();
    if root {
        fx.ctx.sandbox_user = crate::sandbox::SandboxUser::new(Some((65534, 65534)));
        std::os::unix::fs::chown(fx.ws(), Some(65534), Some(65534)).expect("chown");
    }
    let tool = fx.put("tool", "#!/bin/sh\n");
    fs::set_permissions(&tool, fs::Permissions::from_mode(0o6755)).expect("chmod");
    let dir = fx.ws().join("shared");
    fs::create_dir(&dir).expect("mkdir");
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o1777)).expect("chmod");
    fx.ok("Write", json!({"path": "tool", "content": "id\n"}))
        .await;
    fx.ok("Write", json!({"path": "shared/new", "content": "x"}))
        .await;
    for path in [fx.ws().join("tool"), dir.join("new")] {
        let meta = fs::metadata(&path).expect("meta");
        assert_eq!(
            meta.mode() & 0o7000,
            0,
            "{}: {:o}",
            path.display(),
            meta.mode()
        );
        if root {
            assert_eq!(
                (meta.uid(), meta.gid()),
                (65534, 65534),
                "{}",
                path.display()
            );
        }
    }
    assert_eq!(
        fs::metadata(fx.ws().join("tool")).expect("meta").mode() & 0o777,
        0o755
    );
}

#[tokio::test]
async fn a_folder_is_not_a_file() {
    let fx = Fixture::new();
    fx.put("dir/x.txt", "x");
    let message = fx
        .err("Write", json!({"path": "dir", "content": "x"}))
        .await;
    assert!(message.contains("folder"), "{message}");
    let message = fx.err("Write", json!({"path": "x.txt"})).await;
    assert!(message.contains("missing field `content`"), "{message}");
}

#[test]
fn sanitized_arguments_hold_the_size_and_digest_never_the_content() {
    let tool = builtin("Write").expect("tool");
    let content = "password=hunter2\n";
    let clean = tool.sanitize(&json!({"path": "a.txt", "content": content}));
    assert_eq!(
        clean,
        json!({
            "path": "a.txt",
            "content": {
                "bytes": 17,
                "sha256": "e24c8274d50b6074851f94ad4534fe5930e4e058fe1f3df6ff897034a436156b",
            }
        })
    );
    assert!(!clean.to_string().contains("hunter2"));
    let clean = tool.sanitize(&json!("content=hunter2"));
    assert!(!clean.to_string().contains("hunter2"), "{clean}");
}
