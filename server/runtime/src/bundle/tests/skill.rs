//! SKILL.md parsing: front matter, the heading fallback, and broken files that are reported
//! instead of dropped.

use super::fixtures::{load, project, write};
use crate::bundle::markdown::{FrontMatter, split_front_matter};
use crate::bundle::skill::{parse_skill, skill_body};

#[test]
fn front_matter_gives_name_and_description() {
    let parsed = parse_skill(
        "---\nname: pdf\ndescription: Reads PDFs.\nlicense: MIT\n---\n# Other\n\nBody.\n",
    );
    assert_eq!(parsed.name.as_deref(), Some("pdf"));
    assert_eq!(parsed.description, "Reads PDFs.");
    assert_eq!(parsed.error, None);
}

#[test]
fn heading_and_first_paragraph_without_front_matter() {
    let parsed = parse_skill(
        "\n# Summarize text\n\nTurns long text\ninto a short summary.\n\n## Steps\n\n1. Read.\n",
    );
    assert_eq!(parsed.name.as_deref(), Some("Summarize text"));
    assert_eq!(parsed.description, "Turns long text into a short summary.");
    assert_eq!(parsed.error, None);
}

#[test]
fn broken_front_matter_is_reported_not_fatal() {
    let unclosed = parse_skill("---\nname: x\n# Title\n\nStill described.\n");
    assert!(
        unclosed
            .error
            .as_deref()
            .is_some_and(|e| e.contains("closing `---`")),
        "{unclosed:?}"
    );
    assert_eq!(unclosed.description, "Still described.");

    let bad_yaml = parse_skill("---\nname: [unclosed\n---\n# Title\n\nBody text.\n");
    let error = bad_yaml.error.expect("an error");
    assert!(
        error.starts_with("front matter: ") && error.contains("line"),
        "{error}"
    );
    assert_eq!(bad_yaml.description, "Body text.");
}

#[test]
fn broken_skill_stays_listed_in_the_bundle() {
    let dir = project();
    write(
        dir.path(),
        "skills/greet/SKILL.md",
        "---\ndescription: [oops\n---\nHi\n",
    );
    let manifest = load(dir.path()).unwrap().manifest;
    assert_eq!(manifest.skills.len(), 1);
    assert_eq!(manifest.skills[0].name, "greet");
    assert!(manifest.skills[0].error.is_some());
}

#[test]
fn skill_path_may_name_the_file_itself() {
    let dir = super::fixtures::project_with(|m| {
        m.replace("path: skills/greet", "path: ./skills/greet/SKILL.md")
    });
    let manifest = load(dir.path()).unwrap().manifest;
    assert_eq!(manifest.skills[0].path, "skills/greet/SKILL.md");
}

#[test]
fn body_drops_only_the_front_matter() {
    assert_eq!(skill_body("---\na: b\n---\n# T\nbody\n"), "# T\nbody\n");
    assert_eq!(skill_body("# T\nbody\n"), "# T\nbody\n");
    assert_eq!(
        split_front_matter("---\r\na: 1\r\n...\r\nrest"),
        FrontMatter::Present {
            yaml: "a: 1\r\n",
            body: "rest"
        }
    );
}
