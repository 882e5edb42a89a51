//! `Edit`: exact, unique replacements; missing or ambiguous text changes nothing.

use serde_json::json;

use super::fixture::Fixture;
use crate::tools::builtin::builtin;

#[tokio::test]
async fn replaces_a_unique_piece() {
    let fx = Fixture::new();
    fx.put("a.rs", "fn one() {}\nfn two() {}\n");
    let text = fx
        .ok(
            "Edit",
            json!({"path": "a.rs", "old_text": "fn two() {}", "new_text": "fn deux() {}"}),
        )
        .await;
    assert_eq!(text, "replaced 1 occurrence in `a.rs`");
    assert_eq!(fx.read("a.rs"), "fn one() {}\nfn deux() {}\n");
}

#[tokio::test]
async fn missing_text_fails_and_changes_nothing() {
    let fx = Fixture::new();
    fx.put("a.txt", "alpha\n");
    let message = fx
        .err(
            "Edit",
            json!({"path": "a.txt", "old_text": "beta", "new_text": "gamma"}),
        )
        .await;
    assert!(message.contains("not found in `a.txt`"), "{message}");
    assert_eq!(fx.read("a.txt"), "alpha\n");
}

#[tokio::test]
async fn ambiguous_text_fails_with_the_count_unless_replace_all() {
    let fx = Fixture::new();
    fx.put("a.txt", "x = 1\nx = 1\nx = 1\n");
    let message = fx
        .err(
            "Edit",
            json!({"path": "a.txt", "old_text": "x = 1", "new_text": "x = 2"}),
        )
        .await;
    assert!(message.contains("occurs 3 times"), "{message}");
    assert!(message.contains("replace_all"), "{message}");
    assert_eq!(fx.read("a.txt"), "x = 1\nx = 1\nx = 1\n");

    let text = fx
        .ok(
            "Edit",
            json!({"path": "a.txt", "old_text": "x = 1", "new_text": "x = 2", "replace_all": true}),
        )
        .await;
    assert_eq!(text, "replaced 3 occurrences in `a.txt`");
    assert_eq!(fx.read("a.txt"), "x = 2\nx = 2\nx = 2\n");
}

#[tokio::test]
async fn pointless_or_impossible_edits_are_refused() {
    let fx = Fixture::new();
    fx.put("a.txt", "alpha\n");
    let message = fx
        .err(
            "Edit",
            json!({"path": "a.txt", "old_text": "", "new_text": "x"}),
        )
        .await;
    assert!(
        message.contains("`old_text`") && message.contains("empty"),
        "{message}"
    );
    let message = fx
        .err(
            "Edit",
            json!({"path": "a.txt", "old_text": "alpha", "new_text": "alpha"}),
        )
        .await;
    assert!(message.contains("`new_text`"), "{message}");
    let message = fx
        .err(
            "Edit",
            json!({"path": "nope.txt", "old_text": "a", "new_text": "b"}),
        )
        .await;
    assert!(
        message.contains("does not exist") && message.contains("Write"),
        "{message}"
    );
    std::fs::write(fx.ws().join("blob"), b"a\x00b").expect("blob");
    let message = fx
        .err(
            "Edit",
            json!({"path": "blob", "old_text": "a", "new_text": "b"}),
        )
        .await;
    assert!(message.contains("binary"), "{message}");
    let message = fx
        .err(
            "Edit",
            json!({"path": "a.txt", "old_text": "a", "new_text": "b", "replace_all": "yes"}),
        )
        .await;
    assert!(message.contains("`replace_all`"), "{message}");
}

#[test]
fn sanitized_arguments_hold_lengths_and_digests_of_both_texts() {
    let tool = builtin("Edit").expect("tool");
    let clean = tool.sanitize(&json!({
        "path": "a.txt",
        "old_text": "token=abc",
        "new_text": "token=secret-value",
        "replace_all": true,
    }));
    let text = clean.to_string();
    assert!(
        !text.contains("abc") && !text.contains("secret-value"),
        "{text}"
    );
    assert_eq!(clean["path"], "a.txt");
    assert_eq!(clean["replace_all"], true);
    assert_eq!(clean["old_text"]["bytes"], 9);
    assert_eq!(clean["new_text"]["bytes"], 18);
    assert_eq!(clean["old_text"]["sha256"].as_str().map(str::len), Some(64));
}
