//! `LS`: sorted entries with type and size, capped.

use serde_json::json;

use super::fixture::{Fixture, symlink};

#[tokio::test]
async fn lists_entries_sorted_with_type_and_size() {
    let fx = Fixture::new();
    fx.put("b.txt", "12345");
    fx.put("a/inner.txt", "x");
    symlink(&fx.outside, &fx.ws().join("c-link"));
    let text = fx.ok("LS", json!({})).await;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines[0].starts_with("dir") && lines[0].ends_with("  a/"),
        "{text}"
    );
    assert!(
        lines[1].starts_with("file") && lines[1].contains(" 5  b.txt"),
        "{text}"
    );
    assert!(
        lines[2].starts_with("link") && lines[2].ends_with("c-link"),
        "{text}"
    );
    assert!(
        !text.contains("outside"),
        "link targets are not shown: {text}"
    );

    let text = fx.ok("LS", json!({"path": "a"})).await;
    assert!(text.ends_with("1  inner.txt\n"), "{text}");
    let text = fx.ok("LS", json!({"path": "b.txt"})).await;
    assert!(
        text.starts_with("file") && text.ends_with("b.txt"),
        "{text}"
    );
}

#[tokio::test]
async fn empty_missing_and_capped_folders() {
    let fx = Fixture::new();
    std::fs::create_dir(fx.ws().join("empty")).expect("mkdir");
    assert_eq!(
        fx.ok("LS", json!({"path": "empty"})).await,
        "`empty` is empty"
    );
    let message = fx.err("LS", json!({"path": "nope"})).await;
    assert_eq!(message, "`nope` does not exist");

    for n in 0..1005 {
        fx.put(&format!("many/f{n:04}"), "");
    }
    let text = fx.ok("LS", json!({"path": "many"})).await;
    assert_eq!(text.lines().count(), 1001, "1000 entries and a note");
    assert!(text.contains("f0999") && !text.contains("f1000"), "sorted");
    assert!(text.ends_with("[truncated: 5 more entries not shown; use Glob to narrow down]\n"));
}
