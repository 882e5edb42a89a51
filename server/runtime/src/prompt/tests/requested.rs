//! Skill bodies added for `$name` mentions, within their budget.

use super::{Setup, section};
use crate::prompt::{PromptLimits, PromptParts, assemble};

const HEADING: &str = "# Skills requested for this turn";

fn setup() -> Setup {
    Setup::new(
        &[
            ("short", "A short skill.", &"s".repeat(30)),
            ("long", "A long skill.", &"l".repeat(50)),
            ("tiny", "A tiny skill.", &"t".repeat(10)),
            ("empty", "No body.", "\n"),
        ],
        &[],
    )
}

fn limits(bytes: usize) -> PromptLimits {
    PromptLimits {
        skill_bodies_bytes: bytes,
        ..PromptLimits::default()
    }
}

#[test]
fn bodies_fit_whole_or_are_named_with_a_note() {
    let setup = setup();
    let prompt = setup.prompt("Do it with $short, $long and $tiny.", &limits(45));
    let requested = section(&prompt, HEADING);
    assert_eq!(
        requested,
        format!(
            "{HEADING}\n\nThe user asked for these skills by name: follow their instructions \
             in this turn.\n\n## short\n\n{}\n\n## long\n\n[not included: its instructions are \
             50 bytes, over what is left (15 bytes) of the 45 bytes allowed for requested \
             skills. Load them with the `Skill` tool, name `long`.]\n\n## tiny\n\n{}",
            "s".repeat(30),
            "t".repeat(10)
        )
    );
}

#[test]
fn without_the_skill_tool_the_note_says_so() {
    let setup = setup();
    let files = setup.files(&PromptLimits::default());
    let parts = PromptParts {
        skill_tool: false,
        ..setup.parts(&files, "$long", None)
    };
    let prompt = assemble(&parts, &limits(10));
    assert!(
        prompt.ends_with("and this agent has no `Skill` tool to load them.]"),
        "{prompt}"
    );
}

#[test]
fn only_known_mentions_count_and_an_empty_skill_says_so() {
    let setup = setup();
    let prompt = setup.prompt("$nope and $empty", &PromptLimits::default());
    let requested = section(&prompt, HEADING);
    assert!(!requested.contains("## nope"), "{requested}");
    assert!(
        requested.ends_with("## empty\n\n[this skill has no instructions]"),
        "{requested}"
    );
    assert!(
        !setup
            .prompt("no mention", &PromptLimits::default())
            .contains(HEADING)
    );
}

#[test]
fn a_skill_that_vanished_since_the_scan_is_named_with_the_reason() {
    let setup = setup();
    std::fs::remove_file(setup.bundle.root.join("skills/short/SKILL.md")).unwrap();
    let prompt = setup.prompt("$short", &PromptLimits::default());
    assert!(
        prompt.ends_with("## short\n\n[not included: skill `short` has no SKILL.md any more]"),
        "{prompt}"
    );
}
