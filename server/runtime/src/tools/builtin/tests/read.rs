//! `Read`: numbered windows of text files, caps, and refusals.

use serde_json::json;

use super::fixture::Fixture;

fn numbered(count: usize) -> String {
    (1..=count).map(|n| format!("line {n}\n")).collect()
}

#[tokio::test]
async fn reads_numbered_lines() {
    let fx = Fixture::new();
    fx.put("a.txt", "first\r\nsecond\nthird");
    let text = fx.ok("Read", json!({"path": "a.txt"})).await;
    assert_eq!(text, "     1\tfirst\n     2\tsecond\n     3\tthird\n");
}

#[tokio::test]
async fn offset_and_limit_pick_a_window_and_say_where_to_go_on() {
    let fx = Fixture::new();
    fx.put("a.txt", &numbered(10));
    let text = fx
        .ok("Read", json!({"path": "a.txt", "offset": 3, "limit": 2}))
        .await;
    assert_eq!(
        text,
        "     3\tline 3\n     4\tline 4\n[truncated: more lines follow; continue with offset=5]\n"
    );
    let text = fx
        .ok("Read", json!({"path": "a.txt", "offset": 9, "limit": 5}))
        .await;
    assert_eq!(text, "     9\tline 9\n    10\tline 10\n");
    let text = fx.ok("Read", json!({"path": "a.txt", "offset": 20})).await;
    assert!(
        text.contains("has 10 lines") && text.contains("past the end"),
        "{text}"
    );
}

#[tokio::test]
async fn the_default_window_is_capped_in_lines_and_bytes() {
    let fx = Fixture::new();
    fx.put("many.txt", &numbered(2500));
    let text = fx.ok("Read", json!({"path": "many.txt"})).await;
    assert_eq!(text.lines().count(), 2001, "2000 lines and a note");
    assert!(text.ends_with("[truncated: more lines follow; continue with offset=2001]\n"));

    let wide = format!("{}\n", "x".repeat(1000)).repeat(500);
    fx.put("wide.txt", &wide);
    let text = fx.ok("Read", json!({"path": "wide.txt"})).await;
    assert!(text.len() <= 101 * 1024, "{} bytes", text.len());
    assert!(
        text.contains("output capped at 100 KiB; continue with offset="),
        "tail"
    );
}

#[tokio::test]
async fn long_lines_are_cut() {
    let fx = Fixture::new();
    fx.put("min.js", &"y".repeat(5000));
    let text = fx.ok("Read", json!({"path": "min.js"})).await;
    assert!(
        text.contains("… [3000 more characters]"),
        "{}",
        &text[..100]
    );
}

#[tokio::test]
async fn empty_files_say_so() {
    let fx = Fixture::new();
    fx.put("empty.txt", "");
    let text = fx.ok("Read", json!({"path": "empty.txt"})).await;
    assert_eq!(text, "`empty.txt` is empty");
}

#[tokio::test]
async fn binary_files_folders_and_missing_files_are_refused() {
    let fx = Fixture::new();
    std::fs::write(fx.ws().join("blob.bin"), b"\x7fELF\x00\x01\x02").expect("blob");
    let message = fx.err("Read", json!({"path": "blob.bin"})).await;
    assert!(message.contains("binary"), "{message}");
    fx.put("dir/inner.txt", "x");
    let message = fx.err("Read", json!({"path": "dir"})).await;
    assert!(
        message.contains("folder") && message.contains("LS"),
        "{message}"
    );
    let message = fx.err("Read", json!({"path": "nope.txt"})).await;
    assert_eq!(message, "`nope.txt` does not exist");
}

#[tokio::test]
async fn bad_arguments_name_the_field() {
    let fx = Fixture::new();
    let message = fx.err("Read", json!({})).await;
    assert!(message.contains("missing field `path`"), "{message}");
    let message = fx.err("Read", json!({"path": "a", "offset": "3"})).await;
    assert!(message.contains("`offset`"), "{message}");
    let message = fx.err("Read", json!({"path": "a", "offset": 0})).await;
    assert!(message.contains("`offset`"), "{message}");
    let message = fx.err("Read", json!({"path": "a", "limit": 5000})).await;
    assert!(
        message.contains("`limit`") && message.contains("2000"),
        "{message}"
    );
    let message = fx.err("Read", json!({"path": "a", "lines": 3})).await;
    assert!(message.contains("unknown field `lines`"), "{message}");
    let message = fx.err("Read", json!(["a"])).await;
    assert!(message.contains("JSON object"), "{message}");
}
