//! A turn's skills: the bundle's first, the server's after, one skill per name.

use std::time::Duration;

use super::{bundle, skill_md, write};
use crate::skills::{MAX_SKILL_FILE_BYTES, ServerSkills, SkillCatalog, SkillError, SkillSource};

#[test]
fn the_bundle_wins_a_name_clash_and_the_server_skill_is_reported() {
    let project = tempfile::tempdir().unwrap();
    let bundle = bundle(
        project.path(),
        &[(
            "greet",
            &skill_md("greet", "Bundle greeting.", "# Greet\n\nSay hi.\n"),
        )],
    );
    let root = tempfile::tempdir().unwrap();
    write(
        root.path(),
        "greet/SKILL.md",
        &skill_md("greet", "Server greeting.", "Wave.\n"),
    );
    write(
        root.path(),
        "pdf/SKILL.md",
        &skill_md("pdf", "Reads PDFs.", "Use pdftotext.\n"),
    );
    std::fs::create_dir_all(root.path().join("empty")).unwrap();
    let server = ServerSkills::new(vec![root.path().to_path_buf()], Duration::ZERO).current();

    let catalog = SkillCatalog::new(&bundle, &server);
    let usable: Vec<(&str, SkillSource)> = catalog
        .skills()
        .iter()
        .map(|s| (s.name.as_str(), s.source))
        .collect();
    assert_eq!(
        usable,
        [("greet", SkillSource::Bundle), ("pdf", SkillSource::Server)]
    );
    assert_eq!(
        catalog.get("greet").map(|s| s.description.as_str()),
        Some("Bundle greeting.")
    );
    assert_eq!(catalog.load("greet").unwrap(), "# Greet\n\nSay hi.\n");
    assert_eq!(catalog.load("pdf").unwrap(), "Use pdftotext.\n");

    let listing = catalog.into_listing();
    let rows: Vec<(&str, &str, Option<&str>)> = listing
        .iter()
        .map(|l| {
            (
                l.summary.name.as_str(),
                l.source.as_str(),
                l.summary.error.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("greet", "bundle", None),
            ("empty", "server", Some("the folder has no SKILL.md")),
            (
                "greet",
                "server",
                Some("not used: the bundle has a skill with the same name")
            ),
            ("pdf", "server", None),
        ]
    );
    assert_eq!(listing[3].summary.path, "pdf/SKILL.md");
}

#[test]
fn loading_names_what_went_wrong() {
    let project = tempfile::tempdir().unwrap();
    let bundle = bundle(project.path(), &[]);
    let root = tempfile::tempdir().unwrap();
    write(
        root.path(),
        "pdf/SKILL.md",
        &skill_md("pdf", "Reads PDFs.", "Body.\n"),
    );
    let server = ServerSkills::new(vec![root.path().to_path_buf()], Duration::ZERO).current();
    let catalog = SkillCatalog::new(&bundle, &server);

    assert!(matches!(
        catalog.load("dance"),
        Err(SkillError::Unknown { name }) if name == "dance"
    ));

    // Changed on disk after the scan: the load itself stays bounded and honest.
    write(
        root.path(),
        "pdf/SKILL.md",
        &"x".repeat(MAX_SKILL_FILE_BYTES + 1),
    );
    let error = catalog.load("pdf").unwrap_err();
    assert!(matches!(error, SkillError::TooLarge { .. }), "{error}");
    std::fs::remove_file(root.path().join("pdf/SKILL.md")).unwrap();
    assert_eq!(
        catalog.load("pdf").unwrap_err().to_string(),
        "skill `pdf` has no SKILL.md any more"
    );
}
