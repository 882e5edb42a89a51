//! `odyssey agents|models|skills REF`: what an installed bundle offers.

use super::bundle::skill_description;
use super::error::CliError;
use super::output::Output;
use super::{Global, json, render};
use odyssey_client::format_model;
use odyssey_client::proto as pb;

#[derive(Debug, clap::Args)]
pub(crate) struct CatalogArgs {
    /// The installed bundle: `name`, `name@version`, `ns/name@version`, `@sha256:<hex>`.
    reference: String,
}

pub(crate) async fn agents(
    args: CatalogArgs,
    global: &Global,
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    let agents = global.connect().await?.list_agents(&args.reference).await?;
    if output.json {
        for agent in &agents {
            output.json_line(&json::message(agent)?)?;
        }
        return Ok(());
    }
    let rows: Vec<Vec<String>> = agents
        .iter()
        .map(|a| {
            vec![
                a.id.clone(),
                served_model(a.model.as_ref(), a.bundle_model.as_ref()),
                if a.is_default {
                    "yes".into()
                } else {
                    String::new()
                },
                mcp_servers_label(&a.mcp_servers),
                a2a_agents_label(&a.a2a_agents),
                render::shorten(&a.description, 60),
            ]
        })
        .collect();
    output.table(
        &[
            "AGENT",
            "MODEL",
            "DEFAULT",
            "MCP SERVERS",
            "A2A AGENTS",
            "DESCRIPTION",
        ],
        &rows,
    )?;
    Ok(())
}

pub(crate) async fn models(
    args: CatalogArgs,
    global: &Global,
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    let models = global.connect().await?.list_models(&args.reference).await?;
    if output.json {
        for model in &models {
            output.json_line(&json::message(model)?)?;
        }
        return Ok(());
    }
    let rows: Vec<Vec<String>> = models
        .iter()
        .map(|m| {
            vec![
                m.agent_id.clone(),
                served_model(m.model.as_ref(), m.bundle_model.as_ref()),
                if m.available {
                    "yes".into()
                } else {
                    "no".into()
                },
                render::shorten(&m.detail, 60),
            ]
        })
        .collect();
    output.table(&["AGENT", "MODEL", "AVAILABLE", "DETAIL"], &rows)?;
    Ok(())
}

/// The model the server runs an agent on, and the bundle's own after it when the
/// operator's override replaces it: `ollama/llama3 (bundle: openai/gpt-4.1-mini)`.
fn served_model(model: Option<&pb::ModelSpec>, bundle: Option<&pb::ModelSpec>) -> String {
    let served = format_model(model);
    match bundle {
        None => served,
        Some(bundle) => {
            let named = format_model(Some(bundle));
            if named == served {
                format!("{served} (bundle: the same model, another config)")
            } else {
                format!("{served} (bundle: {named})")
            }
        }
    }
}

pub(crate) async fn skills(
    args: CatalogArgs,
    global: &Global,
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    let skills = global.connect().await?.list_skills(&args.reference).await?;
    if output.json {
        for skill in &skills {
            output.json_line(&json::message(skill)?)?;
        }
        return Ok(());
    }
    if skills.is_empty() {
        output.note("No skills: neither the bundle nor the server has any.")?;
        return Ok(());
    }
    let rows: Vec<Vec<String>> = skills
        .iter()
        .map(|s| {
            vec![
                s.name.clone(),
                s.source.clone(),
                s.path.clone(),
                skill_description(s),
            ]
        })
        .collect();
    output.table(&["SKILL", "SOURCE", "PATH", "DESCRIPTION"], &rows)?;
    Ok(())
}

/// An agent's MCP servers as `name (kind)`, the operator's marked: `everything (stdio),
/// github (operator, url)`; an operator's server this server lacks shows `(operator, not
/// configured)`.
pub(crate) fn mcp_servers_label(servers: &[pb::McpServerInfo]) -> String {
    servers
        .iter()
        .map(|s| {
            let kind = if s.kind.is_empty() {
                "not configured"
            } else {
                s.kind.as_str()
            };
            if s.operator {
                format!("{} (operator, {kind})", s.name)
            } else {
                format!("{} ({kind})", s.name)
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// An agent's remote A2A agents as `name (url)`, the operator's marked: `helper
/// (https://agents.example.com/), research (operator, https://research.example.com/)`; an
/// operator's agent this server lacks shows `(operator, not configured)`.
pub(crate) fn a2a_agents_label(agents: &[pb::A2aAgentInfo]) -> String {
    agents
        .iter()
        .map(|a| {
            let url = if a.url.is_empty() {
                "not configured"
            } else {
                a.url.as_str()
            };
            if a.operator {
                format!("{} (operator, {url})", a.name)
            } else {
                format!("{} ({url})", a.name)
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(provider: &str, name: &str) -> pb::ModelSpec {
        pb::ModelSpec {
            provider: provider.into(),
            name: name.into(),
            config: None,
        }
    }

    /// Issue 12 item 5: the model shown is the one the server runs, the bundle's after it
    /// when an override replaced it.
    #[test]
    fn an_overridden_model_names_the_bundles_too() {
        let served = spec("ollama", "llama3");
        let bundle = spec("openai", "gpt-4.1-mini");
        assert_eq!(served_model(Some(&served), None), "ollama/llama3");
        assert_eq!(
            served_model(Some(&served), Some(&bundle)),
            "ollama/llama3 (bundle: openai/gpt-4.1-mini)"
        );
        assert_eq!(
            served_model(Some(&bundle), Some(&bundle)),
            "openai/gpt-4.1-mini (bundle: the same model, another config)"
        );
    }

    #[test]
    fn mcp_servers_say_how_they_are_reached_and_whose_they_are() {
        let server = |name: &str, kind: &str, operator: bool| pb::McpServerInfo {
            name: name.into(),
            kind: kind.into(),
            operator,
        };
        assert_eq!(
            mcp_servers_label(&[
                server("everything", "stdio", false),
                server("github", "url", true),
                server("notes", "", true),
            ]),
            "everything (stdio), github (operator, url), notes (operator, not configured)"
        );
        assert_eq!(mcp_servers_label(&[]), "");
    }

    #[test]
    fn remote_agents_say_where_they_are_and_whose_they_are() {
        let agent = |name: &str, url: &str, operator: bool| pb::A2aAgentInfo {
            name: name.into(),
            url: url.into(),
            operator,
        };
        assert_eq!(
            a2a_agents_label(&[
                agent("helper", "https://agents.example.com/", false),
                agent("research", "https://research.example.com/a2a", true),
                agent("missing", "", true),
            ]),
            "helper (https://agents.example.com/), research (operator, \
             https://research.example.com/a2a), missing (operator, not configured)"
        );
        assert_eq!(a2a_agents_label(&[]), "");
    }
}
