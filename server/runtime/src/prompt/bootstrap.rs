//! Bootstrap files: Markdown files that tell the agent who it is, who it works for and how
//! the project goes, read from the session workspace and the bundle at every turn.
//!
//! The workspace copy of a file, when there is one, replaces the bundle's: the bundle ships
//! defaults, the workspace is where the user (or the agent itself) keeps them current, and
//! showing both would put two versions of the same instructions before the model. What a
//! bundle must always say belongs in the agent prompt, which comes first and cannot be
//! replaced. An empty workspace copy therefore hides the bundle's.

use std::path::Path;

use super::limits::PromptLimits;
use crate::sandbox::beneath::BeneathDir;
use crate::textfile::{CappedText, TextFileError, read_beneath, read_inside};

/// The bootstrap files, in the order they appear in the prompt.
pub const BOOTSTRAP_FILES: [&str; 5] =
    ["AGENTS.md", "SOUL.md", "USER.md", "TOOLS.md", "IDENTITY.md"];

/// Where a bootstrap file was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    Workspace,
    Bundle,
}

impl Origin {
    fn as_str(self) -> &'static str {
        match self {
            Self::Workspace => "workspace",
            Self::Bundle => "bundle",
        }
    }
}

/// The workspace's copies of the bootstrap files, each read up to the per-file cap.
///
/// They are read apart from the rest of the prompt, beneath the workspace's open folder
/// and with the sandbox user's rights ([`crate::sandbox::SandboxUser`]): the
/// workspace is the session's to change while this runs.
#[derive(Debug, Default)]
pub struct WorkspaceFiles(Vec<(&'static str, Result<CappedText, TextFileError>)>);

impl WorkspaceFiles {
    /// Reads the bootstrap files found beneath `workspace`.
    pub fn read(workspace: &BeneathDir, limits: &PromptLimits) -> Self {
        Self(
            BOOTSTRAP_FILES
                .iter()
                .filter_map(|name| {
                    let read = read_beneath(workspace, name, limits.bootstrap_file_bytes);
                    Some((*name, read.transpose()?))
                })
                .collect(),
        )
    }

    fn get(&self, name: &str) -> Option<&Result<CappedText, TextFileError>> {
        self.0
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, read)| read)
    }
}

/// The `# Project files` section, or `None` when no bootstrap file has content.
pub(super) fn section(
    workspace: &WorkspaceFiles,
    bundle_root: &Path,
    limits: &PromptLimits,
) -> Option<String> {
    let mut remaining = limits.bootstrap_total_bytes;
    let mut blocks = Vec::new();
    for name in BOOTSTRAP_FILES {
        let cap = limits.bootstrap_file_bytes.min(remaining);
        let Some((origin, read)) = find(workspace, bundle_root, name, cap) else {
            continue;
        };
        let heading = format!("## {name} ({})", origin.as_str());
        match read {
            Ok(text) => {
                if let Some(block) = render(&heading, &text, cap, limits) {
                    remaining -= text.text.len().min(remaining);
                    blocks.push(block);
                }
            }
            Err(e) => {
                tracing::warn!(file = name, origin = origin.as_str(), error = %e, "a bootstrap file is not shown");
                blocks.push(format!("{heading}\n\n[not shown: {e}]"));
            }
        }
    }
    if blocks.is_empty() {
        return None;
    }
    Some(format!(
        "# Project files\n\nThese files describe the project, you and the user. A copy in the \
         workspace replaces the bundle's.\n\n{}",
        blocks.join("\n\n")
    ))
}

/// The workspace's copy of `name`, else the bundle's; `None` when neither exists.
fn find(
    workspace: &WorkspaceFiles,
    bundle_root: &Path,
    name: &str,
    cap: usize,
) -> Option<(Origin, Result<CappedText, TextFileError>)> {
    match workspace.get(name) {
        Some(Ok(text)) => return Some((Origin::Workspace, Ok(text.recapped(cap)))),
        Some(Err(e)) => return Some((Origin::Workspace, Err(e.clone()))),
        None => {}
    }
    match read_inside(bundle_root, name, cap) {
        Ok(Some(text)) => Some((Origin::Bundle, Ok(text))),
        Err(e) => Some((Origin::Bundle, Err(e))),
        Ok(None) => None,
    }
}

/// One file under its heading, with a note when it was cut; `None` when it is empty.
fn render(heading: &str, read: &CappedText, cap: usize, limits: &PromptLimits) -> Option<String> {
    let text = read.text.trim_end();
    if !read.truncated {
        return (!text.trim().is_empty()).then(|| format!("{heading}\n\n{text}"));
    }
    if cap == 0 {
        return Some(format!(
            "{heading}\n\n[not shown: the project files' budget of {} bytes is used up]",
            limits.bootstrap_total_bytes
        ));
    }
    Some(format!(
        "{heading}\n\n{text}\n\n[truncated: the first {} of {} bytes are shown]",
        read.text.len(),
        read.size
    ))
}
