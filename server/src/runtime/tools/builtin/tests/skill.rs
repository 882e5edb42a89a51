//! `Skill`: the installed bundle's skills, listed and loaded.

use serde_json::json;

use super::fixture::Fixture;

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
