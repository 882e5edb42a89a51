//! Agent files (`agents/<id>/agent.yaml`): their serde shape and their conversion into an
//! [`AgentDefinition`].
//!
//! Only `prompt` agents run on this server. The kind is read first with a lenient parse, so
//! an agent of another kind (whose file has fields this server does not know) is refused with
//! a message about its kind, not about an unknown field.

use serde::Deserialize;

use super::error::BundleError;
use super::manifest::parse_yaml;
use super::types::{AgentDefinition, AgentMemory, ToolRules};
use crate::model::ModelSpec;
use crate::secrets;

const AGENT_API_VERSION: &str = "odyssey.ai/v1";
const AGENT_KIND: &str = "Agent";
const PROMPT_KIND: &str = "prompt";

/// Just enough of an agent file to learn its kind; unknown fields are allowed here.
#[derive(Deserialize)]
struct KindProbe {
    spec: Option<KindProbeSpec>,
}

#[derive(Deserialize)]
struct KindProbeSpec {
    kind: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AgentFile {
    api_version: Option<String>,
    kind: Option<String>,
    metadata: Option<AgentMetadata>,
    spec: Option<AgentSpec>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentMetadata {
    name: Option<String>,
    version: Option<String>,
    description: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AgentSpec {
    /// Accepted for compatibility; unused by prompt agents.
    #[allow(dead_code)]
    abi_version: Option<String>,
    #[allow(dead_code)]
    kind: Option<String>,
    prompt: Option<String>,
    model: Option<AgentModel>,
    #[serde(default)]
    tools: AgentTools,
    memory: Option<AgentMemorySpec>,
    /// Names of the bundle's MCP servers this agent uses.
    #[serde(default, rename = "mcp_servers")]
    mcp_servers: Vec<String>,
    /// Names of the bundle's remote A2A agents this agent delegates to.
    #[serde(default, rename = "a2a_agents")]
    a2a_agents: Vec<String>,
    /// Agents of the same bundle this one may start with the `Agent` tool.
    #[serde(default)]
    delegates: Vec<String>,
}

/// `spec.memory`: long-term memory for this agent.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentMemorySpec {
    enabled: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentModel {
    provider: Option<String>,
    name: Option<String>,
    config: Option<serde_json::Map<String, serde_json::Value>>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentTools {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    ask: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
}

/// Where an agent file sits and how the manifest refers to it.
pub(crate) struct AgentSource<'a> {
    pub id: &'a str,
    /// The file's path relative to the bundle root; every error names it.
    pub file: &'a str,
    pub is_default: bool,
    pub bundle_version: &'a semver::Version,
}

/// Parses and checks one agent file.
pub(crate) fn load_agent(
    src: &AgentSource<'_>,
    text: &str,
) -> Result<AgentDefinition, BundleError> {
    let file = src.file;
    let err = |field: &str, message: String| BundleError::manifest(file, field, message);

    if let Ok(KindProbe {
        spec: Some(KindProbeSpec { kind: Some(kind) }),
    }) = serde_saphyr::from_str::<KindProbe>(text)
        && kind != PROMPT_KIND
    {
        return Err(err(
            "spec.kind",
            format!(
                "agent `{}` ({file}): kind `{kind}` is not supported; only `prompt` agents run on this server",
                src.id
            ),
        ));
    }

    let parsed: AgentFile = parse_yaml(file, text)?;
    expect_value(
        "apiVersion",
        parsed.api_version.as_deref(),
        AGENT_API_VERSION,
    )
    .map_err(|m| err("apiVersion", m))?;
    expect_value("kind", parsed.kind.as_deref(), AGENT_KIND).map_err(|m| err("kind", m))?;
    let metadata = parsed.metadata.unwrap_or_default();
    let spec = parsed
        .spec
        .ok_or_else(|| err("spec", "missing".to_owned()))?;

    let version = match metadata.version {
        Some(v) => {
            semver::Version::parse(&v).map_err(|e| {
                err(
                    "metadata.version",
                    format!("`{v}` is not a semantic version: {e}"),
                )
            })?;
            v
        }
        None => src.bundle_version.to_string(),
    };
    let prompt = spec.prompt.unwrap_or_default();
    if prompt.trim().is_empty() {
        return Err(err("spec.prompt", "missing".to_owned()));
    }
    let model = spec
        .model
        .ok_or_else(|| err("spec.model", "missing".to_owned()))?;
    let provider =
        required(model.provider).ok_or_else(|| err("spec.model.provider", "missing".to_owned()))?;
    let model_name =
        required(model.name).ok_or_else(|| err("spec.model.name", "missing".to_owned()))?;
    if let Some(found) = model.config.as_ref().and_then(secrets::find_secret) {
        return Err(err(
            &format!("spec.model.config.{}", found.path),
            format!(
                "{}; a bundle never carries credentials: keys go in the server's environment \
                 (`OPENAI_API_KEY`, ...) or its configuration (`providers.<name>.api_key`), \
                 and a model config may name one of the operator's credentials with \
                 `credential: NAME`",
                found.why()
            ),
        ));
    }
    check_rules("spec.tools.allow", &spec.tools.allow).map_err(|(f, m)| err(&f, m))?;
    check_rules("spec.tools.ask", &spec.tools.ask).map_err(|(f, m)| err(&f, m))?;
    check_rules("spec.tools.deny", &spec.tools.deny).map_err(|(f, m)| err(&f, m))?;
    // The rules must parse now, not at the first turn that needs them.
    crate::permissions::PermissionRules::parse(
        &spec.tools.allow,
        &spec.tools.ask,
        &spec.tools.deny,
    )
    .map_err(|e| match e {
        crate::permissions::RuleError::Malformed {
            field,
            entry,
            message,
        } => err(
            &format!("spec.{field}"),
            format!("invalid permission rule `{entry}`: {message}"),
        ),
    })?;

    Ok(AgentDefinition {
        id: src.id.to_owned(),
        name: required(metadata.name).unwrap_or_else(|| src.id.to_owned()),
        version,
        description: metadata.description.unwrap_or_default().trim().to_owned(),
        prompt,
        model: ModelSpec {
            provider,
            name: model_name,
            config: model.config,
        },
        tools: ToolRules {
            allow: spec.tools.allow,
            ask: spec.tools.ask,
            deny: spec.tools.deny,
        },
        memory: AgentMemory {
            enabled: spec.memory.and_then(|m| m.enabled).unwrap_or(true),
        },
        mcp_servers: spec.mcp_servers,
        a2a_agents: spec.a2a_agents,
        delegates: spec.delegates,
        is_default: src.is_default,
    })
}

/// `Err(message)` unless `actual` is `expected`; shared with the bundle manifest.
pub(crate) fn expect_value(name: &str, actual: Option<&str>, expected: &str) -> Result<(), String> {
    match actual {
        Some(value) if value == expected => Ok(()),
        Some(value) => Err(format!("must be `{expected}`, not `{value}`")),
        None => Err(format!("missing (expected {name}: {expected})")),
    }
}

/// A non-blank string, trimmed.
fn required(value: Option<String>) -> Option<String> {
    value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

fn check_rules(field: &str, rules: &[String]) -> Result<(), (String, String)> {
    match rules.iter().position(|r| r.trim().is_empty()) {
        Some(i) => Err((format!("{field}[{i}]"), "must not be empty".to_owned())),
        None => Ok(()),
    }
}
