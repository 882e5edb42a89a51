//! The system prompt of a turn, assembled at the start of every turn in a fixed order:
//!
//! 1. the agent prompt (from the agent file), always first and never replaced;
//! 2. `# Project files`: the bootstrap files `AGENTS.md`, `SOUL.md`, `USER.md`,
//!    `TOOLS.md`, `IDENTITY.md`, each under its own heading, the workspace's copy replacing
//!    the bundle's ([`bootstrap`]);
//! 3. `# Memory`: records recalled from long-term memory, when there are any;
//! 4. `# Skills`: each usable skill's name and description (bodies stay out);
//! 5. `# Environment`: date, workspace, working directory when it differs, sandbox mode;
//! 6. `# Skills requested for this turn`: the bodies of skills the user's input mentions
//!    as `$name`, within a byte budget ([`requested`]).
//!
//! The order runs from what never changes within a session to what changes every turn, so
//! the longest possible prefix stays byte-identical from one turn to the next and
//! providers' prompt caches reuse it: the agent prompt and files change rarely, memory at
//! session start, the environment once a day, the requested skills with every input.
//!
//! Every part is capped ([`PromptLimits`]) and every cut says so in the prompt.

mod assemble;
mod bootstrap;
mod header;
mod limits;
mod mentions;
mod requested;
mod skill_list;

#[cfg(test)]
mod tests;

pub use assemble::{PromptParts, assemble};
pub use bootstrap::{BOOTSTRAP_FILES, WorkspaceFiles};
pub use header::utc_date;
pub use limits::PromptLimits;
pub use mentions::mentioned_skills;
