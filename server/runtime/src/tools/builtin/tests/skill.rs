//! `Skill`: the bundle's skills and the server's, listed and loaded.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::fixture::Fixture;
use crate::skills::{ServerSkills, SkillCatalog};

#[tokio::test]
async fn lists_skills_with_descriptions_and_problems() {
    let fx = Fixture::new();
    let text = fx.ok("Skill", json!({})).await;
    assert!(text.contains("- greet: Greets people.\n"), "{text}");
    assert!(
        text.contains("- broken (its SKILL.md has a problem: front matter"),
        "{text}"
    );
}

#[tokio::test]
async fn loads_a_skill_without_its_front_matter() {
    let fx = Fixture::new();
    let text = fx.ok("Skill", json!({"name": "greet"})).await;
    assert!(
        text.contains("# Greet") && text.contains("Say hi."),
        "{text}"
    );
    assert!(!text.contains("description:"), "{text}");
}

#[tokio::test]
async fn an_unknown_skill_lists_the_known_ones() {
    let fx = Fixture::new();
    let message = fx.err("Skill", json!({"name": "dance"})).await;
    assert_eq!(message, "unknown skill `dance`; skills: greet, broken");
    let message = fx.err("Skill", json!({"name": 3})).await;
    assert!(message.contains("`name`"), "{message}");
}

#[tokio::test]
async fn server_skills_are_listed_after_the_bundles_and_load_alike() {
    let mut fx = Fixture::new();
    let root = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| {
        let path = root.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "pdf/SKILL.md",
        "---\nname: pdf\ndescription: Reads PDFs.\n---\nUse pdftotext.\n",
    );
    write("greet/SKILL.md", "---\ndescription: Hidden.\n---\nWave.\n");
    let server = ServerSkills::new(vec![root.path().to_path_buf()], Duration::ZERO).current();
    fx.ctx.skills = Arc::new(SkillCatalog::new(&fx.ctx.bundle, &server));

    let text = fx.ok("Skill", json!({})).await;
    let greet = text
        .find("- greet: Greets people.")
        .expect("bundle skill listed");
    let pdf = text
        .find("- pdf: Reads PDFs.")
        .expect("server skill listed");
    assert!(greet < pdf, "{text}");
    assert!(!text.contains("Hidden."), "the bundle's greet wins: {text}");

    assert_eq!(
        fx.ok("Skill", json!({"name": "pdf"})).await,
        "Use pdftotext.\n"
    );
    assert!(
        fx.ok("Skill", json!({"name": "greet"}))
            .await
            .contains("Say hi.")
    );
}
