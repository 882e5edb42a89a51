//! `Glob`: sorted matches below the working directory, never outside it.

use serde_json::json;

use super::fixture::{Fixture, symlink};

#[tokio::test]
async fn matches_files_sorted_relative_to_the_working_directory() {
    let fx = Fixture::new();
    fx.put("src/main.rs", "");
    fx.put("src/lib.rs", "");
    fx.put("src/deep/mod.rs", "");
    fx.put("README.md", "");
    let text = fx.ok("Glob", json!({"pattern": "**/*.rs"})).await;
    assert_eq!(text, "src/deep/mod.rs\nsrc/lib.rs\nsrc/main.rs\n");
    let text = fx.ok("Glob", json!({"pattern": "src/*.rs"})).await;
    assert_eq!(text, "src/lib.rs\nsrc/main.rs\n");
    let text = fx
        .ok("Glob", json!({"pattern": "./src/{lib,nope}.rs"}))
        .await;
    assert_eq!(text, "src/lib.rs\n");
    let text = fx.ok("Glob", json!({"pattern": "*.md"})).await;
    assert_eq!(text, "README.md\n");
    let text = fx.ok("Glob", json!({"pattern": "*.py"})).await;
    assert_eq!(text, "no files match `*.py`");
    let text = fx.ok("Glob", json!({"pattern": "missing/**/*.rs"})).await;
    assert_eq!(text, "no files match `missing/**/*.rs`");
}

#[tokio::test]
async fn never_returns_anything_outside() {
    let fx = Fixture::new();
    fx.put("in.txt", "");
    std::fs::write(fx.outside.join("out.txt"), "x").expect("outside file");
    symlink(&fx.outside, &fx.ws().join("escape"));
    symlink(&fx.outside.join("out.txt"), &fx.ws().join("out-link.txt"));
    let text = fx.ok("Glob", json!({"pattern": "**/*.txt"})).await;
    assert_eq!(text, "in.txt\n");

    let message = fx.err("Glob", json!({"pattern": "escape/*.txt"})).await;
    assert!(message.contains("symbolic link"), "{message}");
    let message = fx.err("Glob", json!({"pattern": "../*"})).await;
    assert!(
        message.contains("`pattern`") && message.contains(".."),
        "{message}"
    );
    let message = fx.err("Glob", json!({"pattern": "/etc/*"})).await;
    assert!(message.contains("`pattern`"), "{message}");
    let message = fx.err("Glob", json!({"pattern": "a/[b"})).await;
    assert!(message.contains("`pattern`"), "{message}");
}

#[tokio::test]
async fn the_result_count_is_capped() {
    let fx = Fixture::new();
    for n in 0..1003 {
        fx.put(&format!("many/f{n:04}.txt"), "");
    }
    let text = fx.ok("Glob", json!({"pattern": "many/*.txt"})).await;
    assert_eq!(text.lines().count(), 1001, "1000 paths and a note");
    assert!(text.ends_with("[truncated: more than 1000 files match; use a narrower pattern]\n"));
}
