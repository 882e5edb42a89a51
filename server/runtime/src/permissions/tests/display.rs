//! The display form of calls waiting for approval (issue 23): the subject and every
//! argument, whole, with control characters as visible escapes.

use serde_json::json;

use crate::permissions::display_call;

#[test]
fn a_hidden_carriage_return_and_erase_are_shown() {
    let command = "rm -rf ~/important \r\x1b[2Kls -la";
    let shown = display_call(Some(command), &json!({ "command": command }));
    assert_eq!(shown.text, "rm -rf ~/important \\r\\x1b[2Kls -la");
    assert!(shown.control_characters);
}

#[test]
fn the_subject_comes_first_then_every_other_argument_by_name() {
    let shown = display_call(
        Some("make test"),
        &json!({ "command": "make test", "timeout_ms": 5000, "cwd": "src" }),
    );
    assert_eq!(shown.text, "make test\ncwd: src\ntimeout_ms: 5000");
    assert!(!shown.control_characters);
    // A file tool's subject is the resolved path; the argument as given is shown too.
    let shown = display_call(
        Some("data/notes.md"),
        &json!({ "path": "notes.md", "content": "<120 bytes, sha256:ab12>" }),
    );
    assert_eq!(
        shown.text,
        "data/notes.md\ncontent: <120 bytes, sha256:ab12>\npath: notes.md"
    );
}

#[test]
fn a_multi_line_command_cannot_pass_its_lines_off_as_arguments() {
    let command = "cat <<EOF\ncwd: /\nEOF";
    let shown = display_call(Some(command), &json!({ "command": command, "cwd": "src" }));
    assert_eq!(shown.text, "cat <<EOF\n  cwd: /\n  EOF\ncwd: src");
    assert!(!shown.control_characters);
    // Other arguments stay on their line.
    let shown = display_call(None, &json!({ "text": "a\nb: c\td" }));
    assert_eq!(shown.text, "text: a\\nb: c\\td");
}

#[test]
fn names_nested_values_and_non_objects_are_escaped_too() {
    let shown = display_call(None, &json!({ "na\u{202e}me": 1 }));
    assert_eq!(shown.text, "na\\u202eme: 1");
    assert!(shown.control_characters);
    let plan = json!({ "steps": [{ "text": "ship \u{1b}]52;c;eA==\u{7}", "status": "pending" }] });
    let shown = display_call(None, &plan);
    assert!(shown.control_characters);
    assert!(
        !odyssey_visible::has_controls(&shown.text),
        "{:?}",
        shown.text
    );
    assert!(shown.text.starts_with("steps: [{"), "{}", shown.text);
    assert!(
        shown.text.contains("\\u001b]52;c;eA==\\u0007"),
        "{}",
        shown.text
    );
    let shown = display_call(None, &json!("not json \u{9b}2J"));
    assert_eq!(shown.text, "not json \\u009b2J");
    assert!(shown.control_characters);
    assert_eq!(display_call(None, &json!({})).text, "");
}
