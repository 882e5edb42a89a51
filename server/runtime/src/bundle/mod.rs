//! Agent bundles: the unit a user packages, installs and runs.
//!
//! A bundle is a directory tree with an `odyssey.bundle.yaml` manifest at its root, agent
//! files (`agents/<id>/agent.yaml`), skills (`skills/<name>/SKILL.md`) and any other files
//! its agents use. This module
//! - parses and validates that tree into a [`BundleManifest`] ([`load_project`]), with errors
//!   that name the file and the field at fault;
//! - computes a content [digest](BundleId::digest) that survives export and import;
//! - reads and writes the one archive format ([`ARCHIVE_MEDIA_TYPE`]), refusing hostile
//!   archives (links, `..`, devices, gzip bombs) within [`ArchiveLimits`];
//! - keeps installed bundles on disk ([`BundleStore`]) and resolves references to them
//!   ([`BundleReference`]);
//! - writes the `init` template ([`scaffold_archive`], [`write_scaffold`]).
//!
//! Everything here is synchronous file-system work; async callers use a blocking thread.

mod a2a;
mod agent;
mod archive;
mod artifact;
mod catalog;
mod checks;
mod digest;
mod error;
mod files;
mod installed;
mod manifest;
mod markdown;
mod mcp;
mod names;
mod paths;
mod project;
mod reference;
mod sandbox;
mod scaffold;
mod seam;
mod skill;
mod staging;
mod store;
mod types;
mod unpack;

#[cfg(test)]
mod tests;

pub use a2a::{MAX_A2A_AGENT_NAME_LEN, a2a_agent_name_problem};
pub use archive::{ARCHIVE_MEDIA_TYPE, ArchiveLimits};
pub use artifact::{build_to, build_to_with_limits};
pub use error::{BundleError, REFERENCE_FORMS};
pub use installed::{InstalledBundle, RECORD_FILE};
pub use manifest::MANIFEST_FILE;
pub(crate) use markdown::truncate;
pub use mcp::{MAX_MCP_SERVER_NAME_LEN, mcp_server_name_problem};
pub use names::MAX_NAME_LEN;
pub(crate) use names::check_name;
pub(crate) use names::name_problem;
pub use project::{LoadedBundle, load_project};
pub use reference::{BundleReference, DEFAULT_NAMESPACE, VersionSelector};
pub use scaffold::{scaffold_archive, write_scaffold};
pub(crate) use skill::{parse_skill, skill_body};
pub use store::{BundleStore, InstallOptions};
pub use types::{
    A2aAgentSpec, AgentDefinition, AgentMemory, BundleId, BundleManifest, McpServerSource,
    McpServerSpec, SandboxSpec, SkillSummary, ToolEntry, ToolRules,
};
