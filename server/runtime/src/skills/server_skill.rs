//! One skill of a skill root: `<root>/<name>/SKILL.md`, read and parsed.

use std::path::{Path, PathBuf};

use super::MAX_SKILL_FILE_BYTES;
use crate::bundle::{name_problem, parse_skill};
use crate::textfile::{Links, read_capped};

/// A skill found in an operator's skill root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerSkill {
    /// The folder's name, which is the skill's name.
    pub name: String,
    pub description: String,
    /// `<name>/SKILL.md`, relative to its root.
    pub path: String,
    /// The SKILL.md file on the server.
    pub file: PathBuf,
    /// What is wrong with it, if anything. With `usable`, a front matter problem.
    pub error: Option<String>,
    /// Whether a turn can list and load it.
    pub usable: bool,
}

impl ServerSkill {
    /// A skill folder seen but not read yet.
    pub(super) fn unread(root: &Path, name: &str) -> Self {
        Self {
            name: name.to_owned(),
            description: String::new(),
            path: format!("{name}/SKILL.md"),
            file: root.join(name).join("SKILL.md"),
            error: None,
            usable: false,
        }
    }

    /// Reads `<root>/<name>/SKILL.md`. Problems are recorded in the skill, never raised:
    /// a skill that cannot be used is still reported.
    pub(super) fn read(root: &Path, name: &str) -> Self {
        let mut skill = Self::unread(root, name);
        if let Some(problem) = name_problem(name) {
            skill.error = Some(format!(
                "the folder name is not a usable skill name: {problem}"
            ));
            return skill;
        }
        match read_capped(&skill.file, MAX_SKILL_FILE_BYTES, Links::Follow) {
            Ok(None) => skill.error = Some("the folder has no SKILL.md".to_owned()),
            Err(e) => skill.error = Some(format!("cannot read SKILL.md: {e}")),
            Ok(Some(text)) if text.truncated => {
                skill.error = Some(format!(
                    "SKILL.md is {} bytes, over the limit of {MAX_SKILL_FILE_BYTES}",
                    text.size
                ));
            }
            Ok(Some(text)) => {
                let parsed = parse_skill(&text.text);
                skill.description = parsed.description;
                skill.error = parsed.error;
                skill.usable = true;
            }
        }
        skill
    }

    /// The same skill, not used because another one holds its name.
    pub(super) fn shadowed(&self, by: &str) -> Self {
        Self {
            error: Some(format!("not used: {by} has a skill with the same name")),
            usable: false,
            ..self.clone()
        }
    }
}
