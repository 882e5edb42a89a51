//! How much of each part the system prompt may hold.

/// Byte caps of the system prompt's parts. Every cut is visible to the model: a note says
/// what was left out and how to get it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PromptLimits {
    /// Most of one bootstrap file shown; the rest is cut with a note.
    pub bootstrap_file_bytes: usize,
    /// Most of all bootstrap files together; files past it are cut or named only.
    pub bootstrap_total_bytes: usize,
    /// Most of the skills list (names and descriptions); skills past it are counted only.
    pub skill_list_bytes: usize,
    /// Most of the skill instructions added for `$name` mentions in one turn. A skill is
    /// added whole or not at all (half a procedure misleads more than none); one that does
    /// not fit is named with a note to load it with the `Skill` tool.
    pub skill_bodies_bytes: usize,
}

impl Default for PromptLimits {
    fn default() -> Self {
        Self {
            bootstrap_file_bytes: 16 * 1024,
            bootstrap_total_bytes: 48 * 1024,
            skill_list_bytes: 16 * 1024,
            skill_bodies_bytes: 32 * 1024,
        }
    }
}
