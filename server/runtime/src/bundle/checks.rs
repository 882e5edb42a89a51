//! The manifest's list sections (agents, skills, tools) and its paths: duplicates, ids,
//! the one default agent, and paths that must name files inside the bundle.

use std::collections::HashSet;
use std::path::Path;

use super::error::BundleError;
use super::manifest::{AgentRef, MANIFEST_FILE, SkillRef, ToolRef};
use super::names::name_problem;
use super::paths::{Found, normalize_relative, resolve_inside};
use super::types::ToolEntry;

/// An agent entry of the manifest after its checks.
pub(crate) struct CheckedAgent {
    pub id: String,
    /// The agent file, relative to the bundle root.
    pub file: String,
    pub is_default: bool,
}

/// The agents of the manifest, after the id, path and default checks; exactly one of them
/// is the default.
pub(crate) fn check_agents(
    root: &Path,
    refs: &[AgentRef],
) -> Result<Vec<CheckedAgent>, BundleError> {
    let err = |field: String, message: String| BundleError::manifest(MANIFEST_FILE, field, message);
    if refs.is_empty() {
        return Err(err(
            "spec.agents".to_owned(),
            "a bundle needs at least one agent".to_owned(),
        ));
    }
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(refs.len());
    for (i, agent) in refs.iter().enumerate() {
        let id = agent
            .id
            .clone()
            .ok_or_else(|| err(format!("spec.agents[{i}].id"), "missing".to_owned()))?;
        if let Some(problem) = name_problem(&id) {
            return Err(err(format!("spec.agents[{i}].id"), problem));
        }
        if !seen.insert(id.clone()) {
            return Err(err(
                format!("spec.agents[{i}].id"),
                format!("duplicate agent id \"{id}\""),
            ));
        }
        let field = format!("spec.agents[{i}].spec");
        let raw = agent
            .spec
            .as_deref()
            .ok_or_else(|| err(field.clone(), "missing".to_owned()))?;
        let file = checked_file(root, raw, &field)?;
        out.push(CheckedAgent {
            id,
            file,
            is_default: agent.default,
        });
    }
    let defaults: Vec<usize> = out
        .iter()
        .enumerate()
        .filter(|(_, a)| a.is_default)
        .map(|(i, _)| i)
        .collect();
    match (out.len(), defaults.as_slice()) {
        // A lone agent is the default whether or not it says so.
        (1, _) => out.iter_mut().for_each(|a| a.is_default = true),
        (_, [_]) => {}
        (_, []) => {
            return Err(err(
                "spec.agents".to_owned(),
                "no default agent: mark exactly one agent with `default: true`".to_owned(),
            ));
        }
        (_, [_, second, ..]) => {
            return Err(err(
                format!("spec.agents[{second}].default"),
                "several agents are marked `default: true`; mark exactly one".to_owned(),
            ));
        }
    }
    Ok(out)
}

/// `(name, SKILL.md path)` for each skill; the path may name the folder or the file itself.
pub(crate) fn check_skills(
    root: &Path,
    refs: &[SkillRef],
) -> Result<Vec<(String, String)>, BundleError> {
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(refs.len());
    for (i, skill) in refs.iter().enumerate() {
        let err = |field: &str, message: String| {
            BundleError::manifest(MANIFEST_FILE, format!("spec.skills[{i}].{field}"), message)
        };
        let name = skill
            .name
            .clone()
            .ok_or_else(|| err("name", "missing".to_owned()))?;
        if let Some(problem) = name_problem(&name) {
            return Err(err("name", problem));
        }
        if !seen.insert(name.clone()) {
            return Err(err("name", format!("duplicate skill name \"{name}\"")));
        }
        let field = format!("spec.skills[{i}].path");
        let raw = skill
            .path
            .as_deref()
            .ok_or_else(|| err("path", "missing".to_owned()))?;
        let rel = normalize_relative(raw).map_err(|m| err("path", m))?;
        let path = match resolve_inside(root, &rel, MANIFEST_FILE, &field)?.1 {
            Found::Dir => checked_file(root, &format!("{rel}/SKILL.md"), &field)?,
            Found::File if rel == "SKILL.md" || rel.ends_with("/SKILL.md") => rel,
            Found::File => {
                return Err(err(
                    "path",
                    format!("`{rel}` must be a folder holding SKILL.md, or a SKILL.md file"),
                ));
            }
        };
        out.push((name, path));
    }
    Ok(out)
}

pub(crate) fn check_tools(refs: &[ToolRef]) -> Result<Vec<ToolEntry>, BundleError> {
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(refs.len());
    for (i, tool) in refs.iter().enumerate() {
        let err = |field: &str, message: String| {
            BundleError::manifest(MANIFEST_FILE, format!("spec.tools[{i}].{field}"), message)
        };
        let name = tool.name.as_deref().map(str::trim).unwrap_or_default();
        if name.is_empty() {
            return Err(err("name", "missing".to_owned()));
        }
        if name.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(err("name", format!("`{name}` must not contain whitespace")));
        }
        if !seen.insert(name.to_owned()) {
            return Err(err("name", format!("duplicate tool name \"{name}\"")));
        }
        let source = tool.source.as_deref().unwrap_or(ToolEntry::BUILTIN);
        if source != ToolEntry::BUILTIN && source != ToolEntry::HOST {
            return Err(err(
                "source",
                format!(
                    "unknown tool source `{source}`; use `{}` (the runtime's own tools) or \
                     `{}` (tools the program embedding the runtime registers)",
                    ToolEntry::BUILTIN,
                    ToolEntry::HOST
                ),
            ));
        }
        out.push(ToolEntry {
            name: name.to_owned(),
            source: source.to_owned(),
        });
    }
    Ok(out)
}

/// Normalizes a manifest path and checks it names a file inside the bundle.
pub(crate) fn checked_file(root: &Path, raw: &str, field: &str) -> Result<String, BundleError> {
    let rel =
        normalize_relative(raw).map_err(|m| BundleError::manifest(MANIFEST_FILE, field, m))?;
    match resolve_inside(root, &rel, MANIFEST_FILE, field)?.1 {
        Found::File => Ok(rel),
        Found::Dir => Err(BundleError::manifest(
            MANIFEST_FILE,
            field,
            format!("`{rel}` is a directory, not a file"),
        )),
    }
}
