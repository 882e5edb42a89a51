//! Turning the manifest's `spec.mcp_servers` into [`McpServerSpec`]s, and checking the
//! names agents list in theirs.
//!
//! Only the shape is checked here. Whether the operator allows a server (its host
//! variables, its URL, the operator's server it names) is decided when a session starts.

use std::collections::BTreeSet;

use super::error::BundleError;
use super::manifest::{MANIFEST_FILE, McpServerRef};
use super::sandbox::is_env_name;
use super::types::{McpServerSource, McpServerSpec};
use crate::secrets;

/// The longest server name: with `mcp__` and `__` around it, a tool name keeps at least
/// 27 of the 64 characters providers accept.
pub const MAX_MCP_SERVER_NAME_LEN: usize = 32;

/// Why `name` cannot name an MCP server, or `None`. Names become part of tool names
/// (`mcp__<name>__<tool>`), so they keep to what every provider accepts in one, and never
/// hold `__`, which separates the server from the tool.
pub fn mcp_server_name_problem(name: &str) -> Option<String> {
    if name.is_empty() || name.len() > MAX_MCP_SERVER_NAME_LEN {
        return Some(format!(
            "`{name}` must be 1 to {MAX_MCP_SERVER_NAME_LEN} characters"
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
             mcp__<server>__<tool>)"
        ));
    }
    None
}

/// Converts the section, checking each entry's shape.
pub(crate) fn mcp_servers(raw: Vec<McpServerRef>) -> Result<Vec<McpServerSpec>, BundleError> {
    let mut seen = BTreeSet::new();
    let mut servers = Vec::with_capacity(raw.len());
    for (index, entry) in raw.into_iter().enumerate() {
        let at = |field: &str| format!("spec.mcp_servers[{index}]{field}");
        let err =
            |field: &str, message: String| BundleError::manifest(MANIFEST_FILE, at(field), message);
        let name = entry
            .name
            .ok_or_else(|| err(".name", "missing".to_owned()))?;
        if let Some(problem) = mcp_server_name_problem(&name) {
            return Err(err(".name", problem));
        }
        if !seen.insert(name.clone()) {
            return Err(err(".name", format!("duplicate MCP server name `{name}`")));
        }
        let source = match (entry.command, entry.url) {
            (Some(_), Some(_)) => {
                return Err(err(
                    "",
                    format!("server `{name}` gives both `command` and `url`; give one"),
                ));
            }
            (Some(command), None) => {
                check_command(&command).map_err(|(field, m)| err(&field, m))?;
                for (inner, host) in &entry.env {
                    let field = format!(".env.{inner}");
                    if !is_env_name(inner) {
                        return Err(err(
                            &field,
                            format!("`{inner}` is not a valid environment variable name"),
                        ));
                    }
                    if !is_env_name(host) {
                        return Err(err(
                            &field,
                            format!(
                                "`{host}` is not a valid host variable name (the value comes \
                                 from the server's environment, as in spec.sandbox.env)"
                            ),
                        ));
                    }
                }
                McpServerSource::Stdio {
                    command,
                    env: entry.env,
                }
            }
            (None, url) => {
                if !entry.env.is_empty() {
                    return Err(err(
                        ".env",
                        "only a stdio server (`command`) takes `env`".to_owned(),
                    ));
                }
                match url {
                    Some(url) => {
                        check_url(&url).map_err(|m| err(".url", m))?;
                        McpServerSource::Url(url)
                    }
                    None => McpServerSource::Operator,
                }
            }
        };
        servers.push(McpServerSpec { name, source });
    }
    Ok(servers)
}

fn check_command(command: &[String]) -> Result<(), (String, String)> {
    match command.first() {
        None => return Err((".command".to_owned(), "must not be empty".to_owned())),
        Some(program) if program.trim().is_empty() => {
            return Err((".command[0]".to_owned(), "names no program".to_owned()));
        }
        Some(_) => {}
    }
    match command.iter().position(|arg| arg.contains('\0')) {
        Some(i) => Err((format!(".command[{i}]"), "contains a NUL byte".to_owned())),
        None => Ok(()),
    }
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
             them (`[mcp.servers.NAME]` headers)"
                .to_owned(),
        );
    }
    Ok(())
}

/// Checks an agent's `spec.mcp_servers`: each name declared once in the manifest.
pub(crate) fn check_agent_servers(
    file: &str,
    names: &[String],
    declared: &[McpServerSpec],
) -> Result<(), BundleError> {
    let mut seen = BTreeSet::new();
    for (index, name) in names.iter().enumerate() {
        let field = format!("spec.mcp_servers[{index}]");
        if !declared.iter().any(|s| &s.name == name) {
            let known: Vec<&str> = declared.iter().map(|s| s.name.as_str()).collect();
            return Err(BundleError::manifest(
                file,
                field,
                if known.is_empty() {
                    format!(
                        "MCP server `{name}` is not declared: {MANIFEST_FILE} has no \
                         spec.mcp_servers"
                    )
                } else {
                    format!(
                        "MCP server `{name}` is not declared in {MANIFEST_FILE} \
                         spec.mcp_servers (declared: {})",
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
