//! Skills a turn can use: the bundle's own and those in the operator's skill roots.
//!
//! A skill root is a server folder holding `<name>/SKILL.md` folders
//! ([`RuntimeConfig::skill_roots`](crate::RuntimeConfig::skill_roots)). Roots are
//! scanned once, then only checked for changes ([`ServerSkills`]): a changed file is read
//! again, an unchanged one never is.
//!
//! One name, one skill: on a clash the bundle's skill wins (the bundle's author wrote its
//! agents against it), then the skill of the earliest root. The losers are still listed by
//! ListSkills, each with an `error` saying what hides it, as are skills that cannot be used
//! at all (no SKILL.md, a name `$name` cannot reach, an oversized file). A skill whose front
//! matter is broken stays usable (its body is what the model needs) and carries the error.

mod catalog;
mod roots;
mod server_skill;
mod stamp;

#[cfg(test)]
pub(crate) mod tests;

pub use catalog::{Skill, SkillCatalog, SkillError};
pub use roots::ServerSkills;
pub use server_skill::ServerSkill;

use crate::bundle::SkillSummary;

/// Largest SKILL.md read, in bytes. Far beyond any useful skill; it only bounds what a
/// stray file can cost.
pub const MAX_SKILL_FILE_BYTES: usize = 256 * 1024;

/// Where a skill comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SkillSource {
    /// The installed bundle (`spec.skills` of its manifest).
    Bundle,
    /// One of the operator's skill roots on the server.
    Server,
}

impl SkillSource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Bundle => "bundle",
            Self::Server => "server",
        }
    }
}

/// A skill as ListSkills reports it. `summary.path` is relative to the bundle root, or to
/// the skill root for server skills (`<name>/SKILL.md`: server paths are not shown).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillListing {
    pub summary: SkillSummary,
    pub source: SkillSource,
}
