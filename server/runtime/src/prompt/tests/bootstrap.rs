//! Bootstrap files: where they come from, caps and notes, and files that are refused.

use std::os::unix::fs::symlink;

use super::{Setup, section};
use crate::prompt::PromptLimits;

fn files_section(setup: &Setup, limits: &PromptLimits) -> String {
    section(&setup.prompt("hi", limits), "# Project files").to_owned()
}

#[test]
fn the_workspace_copy_replaces_the_bundle_copy() {
    let setup = Setup::new(
        &[],
        &[
            ("AGENTS.md", "From the bundle.\n"),
            ("TOOLS.md", "Use git.\n"),
        ],
    );
    setup.put("AGENTS.md", "From the workspace.\n");
    let files = files_section(&setup, &PromptLimits::default());
    assert!(
        files.contains("## AGENTS.md (workspace)\n\nFrom the workspace."),
        "{files}"
    );
    assert!(!files.contains("From the bundle."), "{files}");
    assert!(
        files.contains("## TOOLS.md (bundle)\n\nUse git."),
        "{files}"
    );
}

#[test]
fn files_follow_the_documented_order_whatever_their_origin() {
    let setup = Setup::new(
        &[],
        &[("IDENTITY.md", "I am Odyssey.\n"), ("SOUL.md", "Calm.\n")],
    );
    setup.put("TOOLS.md", "Tools.\n");
    setup.put("USER.md", "User.\n");
    setup.put("AGENTS.md", "Agents.\n");
    let files = files_section(&setup, &PromptLimits::default());
    let headings: Vec<&str> = files.lines().filter(|l| l.starts_with("## ")).collect();
    assert_eq!(
        headings,
        [
            "## AGENTS.md (workspace)",
            "## SOUL.md (bundle)",
            "## USER.md (workspace)",
            "## TOOLS.md (workspace)",
            "## IDENTITY.md (bundle)",
        ]
    );
}

#[test]
fn a_long_file_is_cut_with_a_note() {
    let setup = Setup::new(&[], &[]);
    setup.put("AGENTS.md", &"a".repeat(100));
    let limits = PromptLimits {
        bootstrap_file_bytes: 40,
        ..PromptLimits::default()
    };
    let files = files_section(&setup, &limits);
    assert!(
        files.ends_with(&format!(
            "## AGENTS.md (workspace)\n\n{}\n\n[truncated: the first 40 of 100 bytes are shown]\n",
            "a".repeat(40)
        )),
        "{files:?}"
    );
}

#[test]
fn a_cut_never_splits_a_character() {
    let setup = Setup::new(&[], &[]);
    // "é" is two bytes: a cap of 4 falls in the middle of the third one.
    setup.put("USER.md", "ééééé");
    let limits = PromptLimits {
        bootstrap_file_bytes: 5,
        ..PromptLimits::default()
    };
    let files = files_section(&setup, &limits);
    assert!(
        files.contains(
            "## USER.md (workspace)\n\néé\n\n[truncated: the first 4 of 10 bytes are shown]"
        ),
        "{files:?}"
    );
}

#[test]
fn the_total_budget_cuts_later_files_and_names_those_left_out() {
    let setup = Setup::new(&[], &[]);
    setup.put("AGENTS.md", &"a".repeat(30));
    setup.put("SOUL.md", &"s".repeat(30));
    setup.put("USER.md", &"u".repeat(30));
    let limits = PromptLimits {
        bootstrap_file_bytes: 40,
        bootstrap_total_bytes: 50,
        ..PromptLimits::default()
    };
    let files = files_section(&setup, &limits);
    assert!(
        files.contains(&format!(
            "## AGENTS.md (workspace)\n\n{}\n\n## SOUL",
            "a".repeat(30)
        )),
        "{files}"
    );
    assert!(
        files.contains(&format!(
            "## SOUL.md (workspace)\n\n{}\n\n[truncated: the first 20 of 30 bytes are shown]",
            "s".repeat(20)
        )),
        "{files}"
    );
    assert!(
        files.contains(
            "## USER.md (workspace)\n\n[not shown: the project files' budget of 50 bytes is used up]"
        ),
        "{files}"
    );
}

#[test]
fn a_link_out_of_the_workspace_is_not_followed() {
    let setup = Setup::new(&[], &[("AGENTS.md", "From the bundle.\n")]);
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "host secret").unwrap();
    symlink(outside.path().join("secret"), setup.ws().join("AGENTS.md")).unwrap();
    let files = files_section(&setup, &PromptLimits::default());
    assert!(!files.contains("host secret"), "{files}");
    assert!(
        files.contains(
            "## AGENTS.md (workspace)\n\n[not shown: it is a symbolic link that leads outside its folder]"
        ),
        "{files}"
    );
    assert!(
        !files.contains("From the bundle."),
        "the refused copy still wins: {files}"
    );
}

#[test]
fn a_link_inside_the_workspace_is_followed() {
    let setup = Setup::new(&[], &[]);
    setup.put("docs/agents.md", "Linked instructions.\n");
    symlink("docs/agents.md", setup.ws().join("AGENTS.md")).unwrap();
    let files = files_section(&setup, &PromptLimits::default());
    assert!(
        files.contains("## AGENTS.md (workspace)\n\nLinked instructions."),
        "{files}"
    );
}

#[test]
fn a_fifo_or_a_folder_is_refused_without_blocking() {
    let setup = Setup::new(&[], &[]);
    rustix::fs::mknodat(
        rustix::fs::CWD,
        setup.ws().join("USER.md"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    std::fs::create_dir(setup.ws().join("SOUL.md")).unwrap();
    let files = files_section(&setup, &PromptLimits::default());
    assert!(
        files.contains("## SOUL.md (workspace)\n\n[not shown: it is not a regular file]"),
        "{files}"
    );
    assert!(
        files.contains("## USER.md (workspace)\n\n[not shown: it is not a regular file]"),
        "{files}"
    );
}
