//! Loading a bundle directory (a project, a staging directory or an installed bundle) into a
//! validated [`BundleManifest`].
//!
//! Checks run in file order and the first failure is returned, naming the file and the field
//! (`odyssey.bundle.yaml: spec.agents[1].id: duplicate agent id "x"`).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::agent::{AgentSource, expect_value, load_agent};
use super::archive::ArchiveLimits;
use super::checks::{CheckedAgent, check_agents, check_skills, check_tools, checked_file};
use super::digest::digest_files;
use super::error::BundleError;
use super::files::collect_files;
use super::manifest::{BUNDLE_API_VERSION, BUNDLE_KIND, MANIFEST_FILE, ManifestFile, parse_yaml};
use super::markdown::{FrontMatter, first_paragraph, split_front_matter, truncate};
use super::mcp::{check_agent_servers, mcp_servers};
use super::names::name_problem;
use super::sandbox::sandbox_spec;
use super::skill::parse_skill;
use super::types::{AgentDefinition, BundleManifest, SkillSummary};

/// Longest description taken from a readme, in characters.
const MAX_DESCRIPTION_CHARS: usize = 500;

/// A validated bundle directory with the digest, size and count of its files.
#[derive(Debug)]
pub struct LoadedBundle {
    pub root: PathBuf,
    pub manifest: BundleManifest,
    pub digest: String,
    pub size_bytes: u64,
    pub file_count: u32,
}

/// Lists, validates and digests the bundle in `root`.
pub fn load_project(root: &Path, limits: &ArchiveLimits) -> Result<LoadedBundle, BundleError> {
    let files = collect_files(root, limits)?;
    let manifest = read_manifest(root)?;
    let digest = digest_files(&files)?;
    Ok(LoadedBundle {
        root: root.to_path_buf(),
        manifest,
        digest,
        size_bytes: files.iter().map(|f| f.size).sum(),
        // `collect_files` stops at `max_entries`, far below u32::MAX in any sane setting.
        file_count: u32::try_from(files.len()).unwrap_or(u32::MAX),
    })
}

/// The directory holding the manifest in an unpacked project archive: the archive root, or
/// its single top-level folder when the archive was made as `tar czf x.tgz project/`.
pub(crate) fn find_project_root(dir: &Path) -> PathBuf {
    if dir.join(MANIFEST_FILE).exists() {
        return dir.to_path_buf();
    }
    let entries: Vec<_> = match fs::read_dir(dir) {
        Ok(entries) => entries.filter_map(Result::ok).collect(),
        Err(_) => return dir.to_path_buf(),
    };
    match entries.as_slice() {
        [only] if only.path().join(MANIFEST_FILE).is_file() => only.path(),
        _ => dir.to_path_buf(),
    }
}

/// Parses and validates the manifest in `root` and everything it refers to.
pub(crate) fn read_manifest(root: &Path) -> Result<BundleManifest, BundleError> {
    let root = root
        .canonicalize()
        .map_err(|e| BundleError::io(format!("opening {}", root.display()), e))?;
    let text = read_text(&root, MANIFEST_FILE, MANIFEST_FILE, "")?;
    let file: ManifestFile = parse_yaml(MANIFEST_FILE, &text)?;
    let err = |field: &str, message: String| BundleError::manifest(MANIFEST_FILE, field, message);

    expect_value(
        "apiVersion",
        file.api_version.as_deref(),
        BUNDLE_API_VERSION,
    )
    .map_err(|m| err("apiVersion", m))?;
    expect_value("kind", file.kind.as_deref(), BUNDLE_KIND).map_err(|m| err("kind", m))?;
    let metadata = file
        .metadata
        .ok_or_else(|| err("metadata", "missing".to_owned()))?;
    let name = metadata
        .name
        .ok_or_else(|| err("metadata.name", "missing".to_owned()))?;
    if let Some(problem) = name_problem(&name) {
        return Err(err("metadata.name", problem));
    }
    let raw_version = metadata
        .version
        .ok_or_else(|| err("metadata.version", "missing".to_owned()))?;
    let version = semver::Version::parse(&raw_version).map_err(|e| {
        err(
            "metadata.version",
            format!("`{raw_version}` is not a semantic version: {e}"),
        )
    })?;
    let readme = match metadata.readme {
        Some(raw) => Some(checked_file(&root, &raw, "metadata.readme")?),
        None => None,
    };
    let spec = file.spec.ok_or_else(|| err("spec", "missing".to_owned()))?;

    let agent_refs = check_agents(&root, &spec.agents)?;
    let skill_refs = check_skills(&root, &spec.skills)?;
    let tools = check_tools(&spec.tools)?;
    let sandbox = sandbox_spec(spec.sandbox)?;
    let mcp_servers = mcp_servers(spec.mcp_servers)?;
    let a2a_agents = super::a2a::a2a_agents(spec.a2a_agents)?;

    let description = match &readme {
        Some(path) => {
            readme_description(&read_text(&root, path, MANIFEST_FILE, "metadata.readme")?)
        }
        None => String::new(),
    };
    let mut agents = Vec::with_capacity(agent_refs.len());
    for agent in &agent_refs {
        let text = read_text(&root, &agent.file, &agent.file, "")?;
        let source = AgentSource {
            id: &agent.id,
            file: &agent.file,
            is_default: agent.is_default,
            bundle_version: &version,
        };
        let loaded = load_agent(&source, &text)?;
        check_agent_servers(&agent.file, &loaded.mcp_servers, &mcp_servers)?;
        super::a2a::check_agent_a2a(&agent.file, &loaded.a2a_agents, &a2a_agents)?;
        agents.push(loaded);
    }
    check_delegates(&agent_refs, &agents)?;
    let mut skills = Vec::with_capacity(skill_refs.len());
    for (skill_name, path) in skill_refs {
        let parsed = parse_skill(&read_text(&root, &path, &path, "")?);
        skills.push(SkillSummary {
            name: skill_name,
            description: parsed.description,
            path,
            error: parsed.error,
        });
    }
    Ok(BundleManifest {
        name,
        version,
        readme,
        description,
        agents,
        skills,
        tools,
        sandbox,
        mcp_servers,
        a2a_agents,
    })
}

/// Reads a UTF-8 file of the bundle; a missing, non-file or non-UTF-8 one is blamed on
/// `file`/`field`: what the archive holds is the client's doing, not the server's trouble.
fn read_text(root: &Path, rel: &str, file: &str, field: &str) -> Result<String, BundleError> {
    match fs::read_to_string(root.join(rel)) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(BundleError::manifest(
            file,
            field,
            format!("`{rel}` not found in the bundle"),
        )),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::IsADirectory | io::ErrorKind::NotADirectory
            ) =>
        {
            Err(BundleError::manifest(
                file,
                field,
                format!("`{rel}` is not a regular file"),
            ))
        }
        Err(e) if e.kind() == io::ErrorKind::InvalidData => Err(BundleError::manifest(
            file,
            field,
            format!("`{rel}` is not valid UTF-8"),
        )),
        Err(e) => Err(BundleError::io(format!("reading {rel}"), e)),
    }
}

/// The readme's first paragraph (after any front matter), for listings.
fn readme_description(text: &str) -> String {
    let body = match split_front_matter(text) {
        FrontMatter::Present { body, .. } => body,
        _ => text,
    };
    truncate(first_paragraph(body), MAX_DESCRIPTION_CHARS)
}

/// Checks every agent's `spec.delegates`: each another agent of this bundle, named once.
fn check_delegates(refs: &[CheckedAgent], agents: &[AgentDefinition]) -> Result<(), BundleError> {
    for (agent_ref, agent) in refs.iter().zip(agents) {
        let mut seen = std::collections::BTreeSet::new();
        for (index, delegate) in agent.delegates.iter().enumerate() {
            let fail = |message: String| {
                BundleError::manifest(&agent_ref.file, format!("spec.delegates[{index}]"), message)
            };
            if delegate == &agent.id {
                return Err(fail(format!(
                    "agent `{}` cannot delegate to itself",
                    agent.id
                )));
            }
            if !agents.iter().any(|a| &a.id == delegate) {
                let known: Vec<&str> = agents.iter().map(|a| a.id.as_str()).collect();
                return Err(fail(format!(
                    "`{delegate}` is not an agent of this bundle (its agents: {})",
                    known.join(", ")
                )));
            }
            if !seen.insert(delegate) {
                return Err(fail(format!("`{delegate}` is named twice")));
            }
        }
    }
    Ok(())
}
