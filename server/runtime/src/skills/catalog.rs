//! The skills of one turn (or one ListSkills answer): the bundle's, then the server's.

use std::path::PathBuf;

use super::server_skill::ServerSkill;
use super::{MAX_SKILL_FILE_BYTES, SkillListing, SkillSource};
use crate::bundle::{InstalledBundle, SkillSummary, skill_body};
use crate::textfile::{Links, TextFileError, read_capped};

/// A skill a turn can list and load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub source: SkillSource,
    /// A problem with its front matter; the body still loads.
    pub error: Option<String>,
    file: PathBuf,
    links: Links,
}

/// Why a skill's instructions could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    #[error("unknown skill `{name}`")]
    Unknown { name: String },
    #[error("skill `{name}` has no SKILL.md any more")]
    Missing { name: String },
    #[error("skill `{name}` is {size} bytes, over the limit of {max}")]
    TooLarge { name: String, size: u64, max: usize },
    #[error("cannot read skill `{name}`: {source}")]
    Read {
        name: String,
        #[source]
        source: TextFileError,
    },
}

/// Every skill one agent can use, and every skill reported for it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SkillCatalog {
    usable: Vec<Skill>,
    listing: Vec<SkillListing>,
}

impl SkillCatalog {
    /// The bundle's skills, then the server's: a server skill whose name the bundle uses
    /// is reported, not offered.
    pub fn new(bundle: &InstalledBundle, server: &[ServerSkill]) -> Self {
        let mut catalog = Self::default();
        for summary in &bundle.manifest.skills {
            catalog.usable.push(Skill {
                name: summary.name.clone(),
                description: summary.description.clone(),
                source: SkillSource::Bundle,
                error: summary.error.clone(),
                file: bundle.root.join(&summary.path),
                // Installed bundles hold no links; one would be a tampered install.
                links: Links::Refuse,
            });
            catalog.listing.push(SkillListing {
                summary: summary.clone(),
                source: SkillSource::Bundle,
            });
        }
        for skill in server {
            let skill = if skill.usable && bundle.manifest.skill(&skill.name).is_some() {
                skill.shadowed("the bundle")
            } else {
                skill.clone()
            };
            if skill.usable {
                catalog.usable.push(Skill {
                    name: skill.name.clone(),
                    description: skill.description.clone(),
                    source: SkillSource::Server,
                    error: skill.error.clone(),
                    file: skill.file.clone(),
                    links: Links::Follow,
                });
            }
            catalog.listing.push(SkillListing {
                summary: SkillSummary {
                    name: skill.name,
                    description: skill.description,
                    path: skill.path,
                    error: skill.error,
                },
                source: SkillSource::Server,
            });
        }
        catalog
    }

    /// The skills a turn can use, the bundle's first.
    pub fn skills(&self) -> &[Skill] {
        &self.usable
    }

    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.usable.iter().find(|s| s.name == name)
    }

    /// Every skill found, usable or not (with the reason in `error`), for ListSkills.
    pub fn into_listing(self) -> Vec<SkillListing> {
        self.listing
    }

    /// The instructions of skill `name`: its SKILL.md without the front matter.
    pub fn load(&self, name: &str) -> Result<String, SkillError> {
        let skill = self.get(name).ok_or_else(|| SkillError::Unknown {
            name: name.to_owned(),
        })?;
        let read =
            read_capped(&skill.file, MAX_SKILL_FILE_BYTES, skill.links).map_err(|source| {
                SkillError::Read {
                    name: name.to_owned(),
                    source,
                }
            })?;
        match read {
            None => Err(SkillError::Missing {
                name: name.to_owned(),
            }),
            Some(text) if text.truncated => Err(SkillError::TooLarge {
                name: name.to_owned(),
                size: text.size,
                max: MAX_SKILL_FILE_BYTES,
            }),
            Some(text) => Ok(skill_body(&text.text).to_owned()),
        }
    }
}
