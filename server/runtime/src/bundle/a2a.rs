//! Turning the manifest's `spec.a2a_agents` into [`A2aAgentSpec`]s, and checking the names
//! agents list in theirs.
//!
//! Only the shape is checked here. Whether the operator allows an agent (its URL, the
//! operator's agent it names) is decided when a session starts.

use std::collections::BTreeSet;

use super::error::BundleError;
use super::manifest::{A2aAgentRef, MANIFEST_FILE};
use super::types::A2aAgentSpec;
use crate::secrets;

/// The longest remote agent name: with `a2a__` before it, a tool name stays well within
/// the 64 characters providers accept.
pub const MAX_A2A_AGENT_NAME_LEN: usize = 48;

/// Why `name` cannot name a remote agent, or `None`. Names become tool names
/// (`a2a__<name>`), so they keep to what every provider accepts in one.
pub fn a2a_agent_name_problem(name: &str) -> Option<String> {
    if name.is_empty() || name.len() > MAX_A2A_AGENT_NAME_LEN {
        return Some(format!(
            "`{name}` must be 1 to {MAX_A2A_AGENT_NAME_LEN} characters"
        ));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Some(format!(
            "`{name}` may hold only ASCII letters, digits, `-` and `_`"
        ));
    }
    if name.contains("__") || name.starts_with('_') || name.ends_with('_') {
        return Some(format!(
            "`{name}` must not start or end with `_` nor hold `__` (tool names are \
             a2a__<agent>)"
        ));
    }
    None
}

/// Converts the section, checking each entry's shape.
pub(crate) fn a2a_agents(raw: Vec<A2aAgentRef>) -> Result<Vec<A2aAgentSpec>, BundleError> {
    let mut seen = BTreeSet::new();
    let mut agents = Vec::with_capacity(raw.len());
    for (index, entry) in raw.into_iter().enumerate() {
        let err = |field: &str, message: String| {
            BundleError::manifest(
                MANIFEST_FILE,
                format!("spec.a2a_agents[{index}]{field}"),
                message,
            )
        };
        let name = entry
            .name
            .ok_or_else(|| err(".name", "missing".to_owned()))?;
        if let Some(problem) = a2a_agent_name_problem(&name) {
            return Err(err(".name", problem));
        }
        if !seen.insert(name.clone()) {
            return Err(err(".name", format!("duplicate A2A agent name `{name}`")));
        }
        if let Some(url) = &entry.url {
            check_url(url).map_err(|m| err(".url", m))?;
        }
        agents.push(A2aAgentSpec {
            name,
            url: entry.url,
        });
    }
    Ok(agents)
}

/// An `http`/`https` URL carrying no credentials: those come only from the operator.
fn check_url(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("`{url}` is not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("`{url}` must be an http or https URL"));
    }
    if secrets::url_has_credentials(url) {
        return Err(
            "the URL carries credentials; a bundle never does: the operator configures \
             them (`[a2a.agents.NAME]` headers)"
                .to_owned(),
        );
    }
    Ok(())
}

/// Checks an agent's `spec.a2a_agents`: each name declared once in the manifest.
pub(crate) fn check_agent_a2a(
    file: &str,
    names: &[String],
    declared: &[A2aAgentSpec],
) -> Result<(), BundleError> {
    let mut seen = BTreeSet::new();
    for (index, name) in names.iter().enumerate() {
        let field = format!("spec.a2a_agents[{index}]");
        if !declared.iter().any(|a| &a.name == name) {
            let known: Vec<&str> = declared.iter().map(|a| a.name.as_str()).collect();
            return Err(BundleError::manifest(
                file,
                field,
                if known.is_empty() {
                    format!(
                        "A2A agent `{name}` is not declared: {MANIFEST_FILE} has no \
                         spec.a2a_agents"
                    )
                } else {
                    format!(
                        "A2A agent `{name}` is not declared in {MANIFEST_FILE} \
                         spec.a2a_agents (declared: {})",
                        known.join(", ")
                    )
                },
            ));
        }
        if !seen.insert(name) {
            return Err(BundleError::manifest(
                file,
                field,
                format!("`{name}` is listed twice"),
            ));
        }
    }
    Ok(())
}
