//! `odyssey agents|models|skills REF`: what an installed bundle offers.

use super::bundle::skill_description;
use super::error::CliError;
use super::output::Output;
use super::{Global, json, render};
use crate::model::format_model;

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
            output.json_line(&json::agent(agent))?;
        }
        return Ok(());
    }
    let rows: Vec<Vec<String>> = agents
        .iter()
        .map(|a| {
            vec![
                a.id.clone(),
                format_model(a.model.as_ref()),
                if a.is_default {
                    "yes".into()
                } else {
                    String::new()
                },
                render::shorten(&a.description, 60),
            ]
        })
        .collect();
    output.table(&["AGENT", "MODEL", "DEFAULT", "DESCRIPTION"], &rows)?;
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
            output.json_line(&json::model_info(model))?;
        }
        return Ok(());
    }
    let rows: Vec<Vec<String>> = models
        .iter()
        .map(|m| {
            vec![
                m.agent_id.clone(),
                format_model(m.model.as_ref()),
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

pub(crate) async fn skills(
    args: CatalogArgs,
    global: &Global,
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    let skills = global.connect().await?.list_skills(&args.reference).await?;
    if output.json {
        for skill in &skills {
            output.json_line(&json::skill(skill))?;
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
