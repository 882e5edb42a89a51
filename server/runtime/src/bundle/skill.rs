//! Reading a skill's SKILL.md: its description for listings, its body for the model.
//!
//! A broken SKILL.md is not fatal to the bundle: the skill is kept with an `error` so
//! ListSkills and InspectBundle can show the author what to fix.

use serde::Deserialize;

use super::markdown::{FrontMatter, first_heading, first_paragraph, split_front_matter};

/// The front matter keys bundles use. Other keys (`license`, `allowed-tools`, ...) are
/// common in skills written for other runtimes and are ignored, not refused.
#[derive(Deserialize)]
struct FrontMatterFields {
    name: Option<String>,
    description: Option<String>,
}

/// What SKILL.md says about itself.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ParsedSkill {
    /// The name the file declares (front matter `name`, or the first heading).
    pub name: Option<String>,
    pub description: String,
    pub error: Option<String>,
}

/// Reads name and description from the front matter, or, without front matter, from the
/// first `# heading` and the paragraph after it.
pub(crate) fn parse_skill(text: &str) -> ParsedSkill {
    match split_front_matter(text) {
        FrontMatter::Absent => from_heading(text, None),
        FrontMatter::Unclosed => from_heading(
            text,
            Some("front matter starts with `---` but has no closing `---` line".to_owned()),
        ),
        FrontMatter::Present { yaml, body } => match parse_fields(yaml) {
            Ok(fields) => {
                let fallback = from_heading(body, None);
                ParsedSkill {
                    name: fields.name.or(fallback.name),
                    description: fields
                        .description
                        .map(|d| d.trim().to_owned())
                        .unwrap_or(fallback.description),
                    error: None,
                }
            }
            Err(message) => from_heading(body, Some(format!("front matter: {message}"))),
        },
    }
}

fn parse_fields(yaml: &str) -> Result<FrontMatterFields, String> {
    if yaml.trim().is_empty() {
        return Ok(FrontMatterFields {
            name: None,
            description: None,
        });
    }
    serde_saphyr::from_str(yaml).map_err(|e| e.without_snippet().to_string())
}

fn from_heading(text: &str, error: Option<String>) -> ParsedSkill {
    match first_heading(text) {
        Some((name, rest)) => ParsedSkill {
            name: Some(name),
            description: first_paragraph(rest),
            error,
        },
        None => ParsedSkill {
            name: None,
            description: String::new(),
            error,
        },
    }
}

/// The instructions of a skill: the text after the front matter, or all of it when there is
/// none (or it is broken, so nothing the author wrote is hidden from the model).
pub(crate) fn skill_body(text: &str) -> &str {
    match split_front_matter(text) {
        FrontMatter::Present { body, .. } => body,
        FrontMatter::Absent | FrontMatter::Unclosed => text,
    }
}
