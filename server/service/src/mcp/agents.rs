//! The installed agents as MCP tools, and their names.
//!
//! A tool is named `<bundle>__<agent>` (the bundle's name, the agent's id), within the
//! pattern MCP clients and model providers accept for tool names, `^[a-zA-Z0-9_-]{1,64}$`.
//! A bundle outside the default namespace, a name holding another character (it becomes
//! `_`) or a name too long (it is cut) ends with `-` and eight hex digits of the SHA-256
//! of `<namespace>/<bundle>.<agent>`, so two agents never share a name.

use std::collections::BTreeMap;
use std::sync::Arc;

use odyssey_runtime::bundle::DEFAULT_NAMESPACE;
use odyssey_runtime::{OdysseyRuntime, PageRequest, Result};
use sha2::{Digest, Sha256};

const MAX_NAME_LEN: usize = 64;
const HASH_LEN: usize = 8;

/// An installed agent served as a tool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentTool {
    /// The tool's name.
    pub name: String,
    /// `<namespace>/<bundle>`: the newest installed version of the bundle.
    pub reference: String,
    pub agent_id: String,
    pub description: String,
}

/// The newest version of every installed bundle, each agent a tool, in name order.
pub async fn list(runtime: &OdysseyRuntime) -> Result<Vec<AgentTool>> {
    let mut references = Vec::new();
    let mut page = PageRequest::first(odyssey_runtime::paging::MAX_PAGE_SIZE);
    loop {
        let found = runtime.list_bundles(None, page).await?;
        for bundle in &found.items {
            let reference = format!("{}/{}", bundle.id.namespace, bundle.id.name);
            if references.last() != Some(&reference) {
                references.push(reference);
            }
        }
        match found.next_token {
            Some(token) => {
                page = PageRequest {
                    size: odyssey_runtime::paging::MAX_PAGE_SIZE,
                    token: Some(token),
                }
            }
            None => break,
        }
    }
    let mut tools = BTreeMap::new();
    for reference in references {
        let bundle = match runtime.inspect_bundle(&reference).await {
            Ok(bundle) => bundle,
            // Deleted in between: it is no longer offered.
            Err(e) if e.kind() == odyssey_runtime::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for agent in &bundle.manifest.agents {
            let tool = agent_tool(&bundle, agent);
            tools.insert(tool.name.clone(), tool);
        }
    }
    Ok(tools.into_values().collect())
}

fn agent_tool(
    bundle: &Arc<odyssey_runtime::bundle::InstalledBundle>,
    agent: &odyssey_runtime::bundle::AgentDefinition,
) -> AgentTool {
    let id = &bundle.id;
    let mut description = format!(
        "Runs a turn of agent `{}` of bundle `{}/{}@{}` and answers with its final text.",
        agent.id, id.namespace, id.name, id.version
    );
    if !agent.description.is_empty() {
        description = format!("{} {description}", agent.description);
    }
    AgentTool {
        name: tool_name(&id.namespace, &id.name, &agent.id),
        reference: format!("{}/{}", id.namespace, id.name),
        agent_id: agent.id.clone(),
        description,
    }
}

/// The tool name of agent `agent` of bundle `namespace/bundle`.
pub fn tool_name(namespace: &str, bundle: &str, agent: &str) -> String {
    let plain = format!("{bundle}__{agent}");
    let mapped: String = plain
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if namespace == DEFAULT_NAMESPACE && mapped == plain && plain.len() <= MAX_NAME_LEN {
        return plain;
    }
    let digest = hex::encode(Sha256::digest(
        format!("{namespace}/{bundle}.{agent}").as_bytes(),
    ));
    let kept: String = mapped.chars().take(MAX_NAME_LEN - 1 - HASH_LEN).collect();
    format!("{kept}-{}", &digest[..HASH_LEN])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fits(name: &str) -> bool {
        (1..=MAX_NAME_LEN).contains(&name.len())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn a_plain_agent_of_the_default_namespace_keeps_its_names() {
        assert_eq!(tool_name("local", "demo", "assistant"), "demo__assistant");
    }

    #[test]
    fn other_characters_namespaces_and_long_names_end_with_a_hash_and_fit() {
        let dotted = tool_name("local", "demo", "a.b");
        assert!(
            dotted.starts_with("demo__a_b-") && fits(&dotted),
            "{dotted}"
        );
        assert_ne!(dotted, tool_name("local", "demo", "a_b"));
        let elsewhere = tool_name("acme", "demo", "assistant");
        assert!(elsewhere.starts_with("demo__assistant-"), "{elsewhere}");
        assert_ne!(elsewhere, tool_name("other", "demo", "assistant"));
        let long = tool_name("local", &"b".repeat(60), &"a".repeat(60));
        assert!(fits(&long), "{long}");
    }
}
