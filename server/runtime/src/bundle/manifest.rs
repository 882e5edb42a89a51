//! The serde shape of `odyssey.bundle.yaml`.
//!
//! Every struct refuses unknown fields, so a typo is an error instead of a silently ignored
//! setting. Fields the format requires are still `Option` here: a missing one is reported by
//! `project` with the file and the field path, which serde's "missing field" cannot do.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::error::BundleError;

/// The manifest's file name, at the bundle root.
pub const MANIFEST_FILE: &str = "odyssey.bundle.yaml";
pub(crate) const BUNDLE_API_VERSION: &str = "odyssey.ai/bundle.v1";
pub(crate) const BUNDLE_KIND: &str = "AgentBundle";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct ManifestFile {
    pub api_version: Option<String>,
    pub kind: Option<String>,
    pub metadata: Option<Metadata>,
    pub spec: Option<Spec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Metadata {
    pub name: Option<String>,
    pub version: Option<String>,
    pub readme: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct Spec {
    /// Accepted for compatibility with bundles written for other Odyssey runtimes; unused.
    #[allow(dead_code)]
    pub abi_version: Option<String>,
    #[serde(default)]
    pub agents: Vec<AgentRef>,
    #[serde(default)]
    pub skills: Vec<SkillRef>,
    #[serde(default)]
    pub tools: Vec<ToolRef>,
    pub sandbox: Option<Sandbox>,
    /// The MCP servers the bundle's agents may use (spelled as the issue of the format
    /// does, not in camelCase).
    #[serde(default, rename = "mcp_servers")]
    pub mcp_servers: Vec<McpServerRef>,
    /// The remote A2A agents the bundle's agents may delegate to.
    #[serde(default, rename = "a2a_agents")]
    pub a2a_agents: Vec<A2aAgentRef>,
}

/// One entry of `spec.a2a_agents`: a remote agent at `url`, or only a `name`, which asks
/// for the operator's agent of that name (`[a2a.agents.NAME]`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct A2aAgentRef {
    pub name: Option<String>,
    pub url: Option<String>,
}

/// One entry of `spec.mcp_servers`: a stdio server (`command`, `env`), a remote one
/// (`url`), or only a `name`, which asks for the operator's server of that name.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct McpServerRef {
    pub name: Option<String>,
    pub command: Option<Vec<String>>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub url: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AgentRef {
    pub id: Option<String>,
    pub spec: Option<String>,
    #[serde(default)]
    pub default: bool,
    /// A WebAssembly module for `wasm` agents; accepted so such manifests load, unused here.
    #[allow(dead_code)]
    pub module: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SkillRef {
    pub name: Option<String>,
    pub path: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ToolRef {
    pub name: Option<String>,
    pub source: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Sandbox {
    pub mode: Option<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub system_tools_mode: Option<String>,
    #[serde(default)]
    pub system_tools: Vec<String>,
    #[serde(default)]
    pub permissions: Permissions,
    #[serde(default)]
    pub resources: Resources,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Permissions {
    #[serde(default)]
    pub filesystem: Filesystem,
    #[serde(default)]
    pub network: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Filesystem {
    #[serde(default)]
    pub exec: Vec<String>,
    #[serde(default)]
    pub mounts: Mounts,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Mounts {
    #[serde(default)]
    pub read: Vec<String>,
    #[serde(default)]
    pub write: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Resources {
    pub cpu: Option<u32>,
    pub memory_mb: Option<u64>,
}

/// Parses one YAML file of a bundle. The parser's message keeps its line and column; the
/// source snippet it can render is dropped because these messages travel in gRPC statuses.
pub(crate) fn parse_yaml<T: DeserializeOwned>(file: &str, text: &str) -> Result<T, BundleError> {
    serde_saphyr::from_str(text)
        .map_err(|e| BundleError::manifest(file, "", e.without_snippet().to_string()))
}
