//! `Grep`: matching lines, filters, skipped files and caps.

use serde_json::json;

use super::fixture::{Fixture, symlink};

#[tokio::test]
async fn answers_path_line_and_text() {
    let fx = Fixture::new();
    fx.put("src/a.rs", "fn alpha() {}\nfn beta() {}\n");
    fx.put("src/b.txt", "alpha in text\r\n");
    fx.put("notes.md", "nothing here\n");
    let text = fx.ok("Grep", json!({"pattern": "alpha"})).await;
    assert_eq!(
        text,
        "src/a.rs:1: fn alpha() {}\nsrc/b.txt:1: alpha in text\n"
    );

    let text = fx
        .ok("Grep", json!({"pattern": "(?i)BETA", "path": "src"}))
        .await;
    assert_eq!(text, "src/a.rs:2: fn beta() {}\n");
    let text = fx
        .ok("Grep", json!({"pattern": "alpha", "glob": "*.rs"}))
        .await;
    assert_eq!(text, "src/a.rs:1: fn alpha() {}\n");
    let text = fx
        .ok("Grep", json!({"pattern": "alpha", "glob": "src/*.txt"}))
        .await;
    assert_eq!(text, "src/b.txt:1: alpha in text\n");
    let text = fx
        .ok("Grep", json!({"pattern": "fn", "path": "src/a.rs"}))
        .await;
    assert_eq!(
        text,
        "src/a.rs:1: fn alpha() {}\nsrc/a.rs:2: fn beta() {}\n"
    );
    let text = fx.ok("Grep", json!({"pattern": "zeta"})).await;
    assert_eq!(text, "no lines match `zeta`\n");
}

#[tokio::test]
async fn skips_binary_and_oversized_files_and_says_so() {
    let fx = Fixture::new();
    fx.put("text.txt", "needle\n");
    std::fs::write(fx.ws().join("blob.bin"), b"needle\x00binary").expect("blob");
    let big = "needle\n".repeat(400_000);
    fx.put("big.log", &big);
    let text = fx.ok("Grep", json!({"pattern": "needle"})).await;
    assert_eq!(
        text,
        "text.txt:1: needle\n[skipped 1 binary file(s)]\n\
         [skipped 1 file(s) larger than 2.0 MiB]\n"
    );
}

#[tokio::test]
async fn stops_at_the_match_cap() {
    let fx = Fixture::new();
    fx.put("many.txt", &"hit\n".repeat(500));
    let text = fx.ok("Grep", json!({"pattern": "hit"})).await;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 201, "200 matches and a note");
    assert_eq!(lines[199], "many.txt:200: hit");
    assert!(
        lines[200].contains("stopped at 200 matches"),
        "{}",
        lines[200]
    );
}

#[tokio::test]
async fn stops_at_the_byte_cap_and_cuts_long_lines() {
    let fx = Fixture::new();
    let line = format!("hit {}\n", "z".repeat(1000));
    fx.put("wide.txt", &line.repeat(150));
    let text = fx.ok("Grep", json!({"pattern": "hit"})).await;
    assert!(text.len() <= 33 * 1024, "{} bytes", text.len());
    assert!(text.contains("more characters]"), "long lines are cut");
    assert!(text.contains("stopped at 32 KiB of output"), "note");
}

#[tokio::test]
async fn never_searches_outside() {
    let fx = Fixture::new();
    fx.put("in.txt", "secret-ish\n");
    symlink(&fx.outside, &fx.ws().join("escape"));
    symlink(&fx.outside.join("secret.txt"), &fx.ws().join("link.txt"));
    let text = fx.ok("Grep", json!({"pattern": "secret"})).await;
    assert_eq!(text, "in.txt:1: secret-ish\n");
    let message = fx
        .err("Grep", json!({"pattern": "secret", "path": "../.."}))
        .await;
    assert!(message.contains("outside the workspace"), "{message}");
}

#[tokio::test]
async fn bad_patterns_name_the_field() {
    let fx = Fixture::new();
    let message = fx.err("Grep", json!({"pattern": "(unclosed"})).await;
    assert!(message.contains("`pattern`"), "{message}");
    let message = fx.err("Grep", json!({"pattern": "x", "glob": "[z"})).await;
    assert!(message.contains("`glob`"), "{message}");
    let message = fx
        .err("Grep", json!({"pattern": "x", "path": "nope"}))
        .await;
    assert_eq!(message, "`nope` does not exist");
}
