//! `odyssey bundle ...`: scaffold, build, install and move bundles.

use std::path::{Path, PathBuf};

use odyssey_api::v1 as pb;
use serde_json::json;

use super::error::CliError;
use super::files::{human_size, write_atomically};
use super::output::Output;
use super::time::rfc3339;
use super::{Global, json, render};
use odyssey_client::{pack_project, unpack_archive};

#[derive(Debug, clap::Subcommand)]
pub(crate) enum BundleCommand {
    /// Create a bundle project from the server's scaffold (a working hello agent).
    Init {
        /// Folder to create [default: ./<name>].
        dir: Option<PathBuf>,
        /// Bundle name [default: the server's, `hello`].
        #[arg(long)]
        name: Option<String>,
    },
    /// Build a project folder: install it on the server, or with --output write the
    /// bundle archive locally without installing anything.
    Build {
        /// The project folder (holding odyssey.bundle.yaml).
        dir: PathBuf,
        /// Write the built bundle here instead of installing it (needs no server).
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Namespace to install into [default: local].
        #[arg(long, conflicts_with = "output")]
        namespace: Option<String>,
        /// Replace an installed bundle of the same version with different content.
        #[arg(long, conflicts_with = "output")]
        force: bool,
    },
    /// Show an installed bundle: agents, skills, tools, sandbox.
    Inspect {
        /// `name`, `name@version`, `ns/name@version` or `@sha256:<hex>`.
        reference: String,
    },
    /// List installed bundles.
    List {
        /// Only bundles of this namespace.
        #[arg(long)]
        namespace: Option<String>,
    },
    /// Uninstall a bundle.
    Delete { reference: String },
    /// Download an installed bundle as an archive.
    Export {
        reference: String,
        /// File to write.
        #[arg(long, short, value_name = "FILE")]
        output: PathBuf,
    },
    /// Install a bundle archive (from `bundle export` or `bundle build --output`).
    Import {
        file: PathBuf,
        /// Namespace to install into [default: local].
        #[arg(long)]
        namespace: Option<String>,
        /// Replace an installed bundle of the same version with different content.
        #[arg(long)]
        force: bool,
    },
    /// Publish an installed bundle to an OCI registry, with the server's credentials.
    Push {
        /// The installed bundle: `name`, `name@version`, `ns/name@version`, ...
        reference: String,
        /// `[registry[:port]/]repository[:tag]`; without a registry, the server's hub;
        /// without a tag, the bundle's version.
        target: String,
    },
    /// Fetch a bundle from an OCI registry, verify its digests and install it.
    Pull {
        /// `[registry[:port]/]repository[:tag]` or `[registry/]repository@sha256:<hex>`.
        reference: String,
        /// Namespace to install into [default: local].
        #[arg(long)]
        namespace: Option<String>,
        /// Replace an installed bundle of the same version with different content.
        #[arg(long)]
        force: bool,
    },
}

pub(crate) async fn run(
    command: BundleCommand,
    global: &Global,
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    match command {
        BundleCommand::Init { dir, name } => init(dir, name, global, output).await,
        BundleCommand::Build {
            dir,
            output: Some(file),
            ..
        } => build_locally(&dir, &file, output).await,
        BundleCommand::Build {
            dir,
            output: None,
            namespace,
            force,
        } => {
            let archive = pack_project(&dir)?;
            let client = global.connect().await?;
            let bundle = client
                .build_bundle(archive, namespace.as_deref().unwrap_or_default(), force)
                .await?;
            installed("Installed", &bundle, output)
        }
        BundleCommand::Inspect { reference } => {
            let response = global.connect().await?.inspect_bundle(&reference).await?;
            inspect(&response, output)
        }
        BundleCommand::List { namespace } => {
            let bundles = global
                .connect()
                .await?
                .list_bundles(namespace.as_deref())
                .await?;
            list(&bundles, output)
        }
        BundleCommand::Delete { reference } => {
            let bundle = global.connect().await?.delete_bundle(&reference).await?;
            installed("Deleted", &bundle, output)
        }
        BundleCommand::Export {
            reference,
            output: file,
        } => {
            let (bundle, archive) = global.connect().await?.export_bundle(&reference).await?;
            write_atomically(&file, &archive)?;
            if output.json {
                output.json_line(&json!({
                    "bundle": json::message(&bundle)?,
                    "output": file.display().to_string(),
                    "bytes": archive.len(),
                }))?;
            } else {
                output.line(format!(
                    "Exported {} to {} ({})",
                    reference_of(&bundle),
                    file.display(),
                    human_size(archive.len() as u64)
                ))?;
            }
            Ok(())
        }
        BundleCommand::Import {
            file,
            namespace,
            force,
        } => {
            let archive =
                std::fs::read(&file).map_err(|e| CliError::file("cannot read", &file, e))?;
            let client = global.connect().await?;
            let bundle = client
                .import_bundle(archive, namespace.as_deref().unwrap_or_default(), force)
                .await?;
            installed("Imported", &bundle, output)
        }
        BundleCommand::Push { reference, target } => {
            let pushed = global
                .connect()
                .await?
                .push_bundle(&reference, &target)
                .await?;
            let bundle = pushed.bundle.clone().unwrap_or_default();
            published(
                &format!("Pushed {} to {}", reference_of(&bundle), pushed.target),
                json::message(&pushed)?,
                (&pushed.manifest_digest, &pushed.content_digest),
                output,
            )
        }
        BundleCommand::Pull {
            reference,
            namespace,
            force,
        } => {
            let pulled = global
                .connect()
                .await?
                .pull_bundle(&reference, namespace.as_deref().unwrap_or_default(), force)
                .await?;
            let bundle = pulled.bundle.clone().unwrap_or_default();
            published(
                &format!("Pulled {} from {}", reference_of(&bundle), pulled.source),
                json::message(&pulled)?,
                (&pulled.manifest_digest, &pulled.content_digest),
                output,
            )
        }
    }
}

/// A push or pull: what moved where, and both digests (the registry's manifest digest and
/// the bundle's content digest are different things).
fn published(
    headline: &str,
    as_json: serde_json::Value,
    (manifest_digest, content_digest): (&str, &str),
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    if output.json {
        output.json_line(&as_json)?;
        return Ok(());
    }
    output.line(headline)?;
    output.fields(&[
        ("manifest digest", manifest_digest.to_owned()),
        ("content digest", content_digest.to_owned()),
    ])?;
    Ok(())
}

/// `ns/name@version`, the reference that names exactly this bundle.
pub(crate) fn reference_of(bundle: &pb::Bundle) -> String {
    bundle
        .r#ref
        .as_ref()
        .map(|r| format!("{}/{}@{}", r.namespace, r.name, r.version))
        .unwrap_or_else(|| "-".to_owned())
}

/// `sha256:0123456789ab…` for tables; the full digest is in `--json`.
fn short_digest(bundle: &pb::Bundle) -> String {
    let digest = bundle
        .r#ref
        .as_ref()
        .map(|r| r.digest.as_str())
        .unwrap_or_default();
    render::shorten(digest, 20)
}

async fn init(
    dir: Option<PathBuf>,
    name: Option<String>,
    global: &Global,
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    let name = name.unwrap_or_default();
    let dir = dir.unwrap_or_else(|| {
        PathBuf::from(if name.is_empty() {
            "hello"
        } else {
            name.as_str()
        })
    });
    refuse_non_empty(&dir)?;
    let archive = global.connect().await?.init_bundle(&name).await?;
    let files = unpack_archive(&archive, &dir)?;
    if output.json {
        output.json_line(&json!({ "directory": dir.display().to_string(), "files": files }))?;
    } else {
        output.line(format!(
            "Created a bundle project in {} ({} files):",
            dir.display(),
            files.len()
        ))?;
        for file in &files {
            output.line(format!("  {file}"))?;
        }
        output.line(format!("Next: odyssey bundle build {}", dir.display()))?;
    }
    Ok(())
}

/// A scaffold goes into a new or empty folder only, never over someone's files.
fn refuse_non_empty(dir: &Path) -> Result<(), CliError> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => match entries.next() {
            None => Ok(()),
            Some(_) => Err(CliError::Usage(format!(
                "{} already exists and is not empty; choose another folder",
                dir.display()
            ))),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(CliError::file("cannot open", dir, e)),
    }
}

async fn build_locally(dir: &Path, file: &Path, output: &mut Output<'_>) -> Result<(), CliError> {
    let id = odyssey_runtime::OdysseyRuntime::build_to(dir, file).await?;
    if output.json {
        output.json_line(&json!({
            "namespace": id.namespace,
            "name": id.name,
            "version": id.version.to_string(),
            "digest": id.digest,
            "output": file.display().to_string(),
        }))?;
    } else {
        output.line(format!(
            "Built {id} ({}) into {}",
            id.digest,
            file.display()
        ))?;
    }
    Ok(())
}

fn installed(verb: &str, bundle: &pb::Bundle, output: &mut Output<'_>) -> Result<(), CliError> {
    if output.json {
        output.json_line(&json::message(bundle)?)?;
        return Ok(());
    }
    let digest = bundle
        .r#ref
        .as_ref()
        .map(|r| r.digest.clone())
        .unwrap_or_default();
    output.line(format!("{verb} {} ({digest})", reference_of(bundle)))?;
    Ok(())
}

fn agents_label(bundle: &pb::Bundle) -> String {
    bundle
        .agent_ids
        .iter()
        .map(|id| {
            if *id == bundle.default_agent_id {
                format!("{id} (default)")
            } else {
                id.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn list(bundles: &[pb::Bundle], output: &mut Output<'_>) -> Result<(), CliError> {
    if output.json {
        for bundle in bundles {
            output.json_line(&json::message(bundle)?)?;
        }
        return Ok(());
    }
    if bundles.is_empty() {
        output
            .note("No bundles installed. Try `odyssey bundle init` and `odyssey bundle build`.")?;
        return Ok(());
    }
    let rows: Vec<Vec<String>> = bundles
        .iter()
        .map(|b| {
            vec![
                reference_of(b),
                short_digest(b),
                agents_label(b),
                human_size(b.size_bytes),
                rfc3339(b.installed_at.as_ref()),
            ]
        })
        .collect();
    output.table(&["BUNDLE", "DIGEST", "AGENTS", "SIZE", "INSTALLED"], &rows)?;
    Ok(())
}

fn inspect(response: &pb::InspectBundleResponse, output: &mut Output<'_>) -> Result<(), CliError> {
    if output.json {
        output.json_line(&json::message(response)?)?;
        return Ok(());
    }
    let bundle = response.bundle.clone().unwrap_or_default();
    let sandbox = response.sandbox.clone().unwrap_or_default();
    let mode = pb::SandboxMode::try_from(sandbox.mode)
        .map(|m| render::enum_label(m.as_str_name(), "SANDBOX_MODE_"))
        .unwrap_or_else(|_| sandbox.mode.to_string());
    let network = if sandbox.network.is_empty() {
        "none".to_owned()
    } else {
        sandbox.network.join(", ")
    };
    let tools: Vec<String> = response
        .tools
        .iter()
        .map(|t| format!("{} ({})", t.name, t.source))
        .collect();
    output.fields(&[
        ("bundle", reference_of(&bundle)),
        (
            "digest",
            bundle
                .r#ref
                .as_ref()
                .map(|r| r.digest.clone())
                .unwrap_or_default(),
        ),
        ("description", bundle.description.clone()),
        ("installed", rfc3339(bundle.installed_at.as_ref())),
        (
            "size",
            format!(
                "{} in {} files",
                human_size(bundle.size_bytes),
                bundle.file_count
            ),
        ),
        ("agents", agents_label(&bundle)),
        ("tools", tools.join(", ")),
        ("sandbox", format!("{mode} · network: {network}")),
    ])?;
    let with_servers: Vec<Vec<String>> = response
        .agents
        .iter()
        .filter(|a| !a.mcp_servers.is_empty())
        .map(|a| {
            vec![
                a.id.clone(),
                super::catalog::mcp_servers_label(&a.mcp_servers),
            ]
        })
        .collect();
    if !with_servers.is_empty() {
        output.line("")?;
        output.table(&["AGENT", "MCP SERVERS"], &with_servers)?;
    }
    let with_remotes: Vec<Vec<String>> = response
        .agents
        .iter()
        .filter(|a| !a.a2a_agents.is_empty())
        .map(|a| {
            vec![
                a.id.clone(),
                super::catalog::a2a_agents_label(&a.a2a_agents),
            ]
        })
        .collect();
    if !with_remotes.is_empty() {
        output.line("")?;
        output.table(&["AGENT", "A2A AGENTS"], &with_remotes)?;
    }
    if !response.skills.is_empty() {
        output.line("")?;
        let rows: Vec<Vec<String>> = response
            .skills
            .iter()
            .map(|s| vec![s.name.clone(), skill_description(s)])
            .collect();
        output.table(&["SKILL", "DESCRIPTION"], &rows)?;
    }
    Ok(())
}

/// A skill's description, or what is wrong with it (a front matter that cannot be read, a
/// server skill that cannot be used).
pub(crate) fn skill_description(skill: &pb::SkillInfo) -> String {
    if skill.error.is_empty() {
        render::shorten(&skill.description, 80)
    } else {
        format!("(problem: {})", render::shorten(&skill.error, 70))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_refuses_non_empty_folders() {
        let dir = tempfile::tempdir().unwrap();
        assert!(refuse_non_empty(&dir.path().join("new")).is_ok());
        assert!(refuse_non_empty(dir.path()).is_ok());
        std::fs::write(dir.path().join("x"), "").unwrap();
        assert!(matches!(
            refuse_non_empty(dir.path()),
            Err(CliError::Usage(_))
        ));
    }

    #[test]
    fn references_name_namespace_and_version() {
        let bundle = pb::Bundle {
            r#ref: Some(pb::BundleRef {
                namespace: "local".into(),
                name: "demo".into(),
                version: "0.1.0".into(),
                digest: "sha256:abc".into(),
            }),
            agent_ids: vec!["guide".into(), "helper".into()],
            default_agent_id: "guide".into(),
            ..Default::default()
        };
        assert_eq!(reference_of(&bundle), "local/demo@0.1.0");
        assert_eq!(agents_label(&bundle), "guide (default), helper");
    }
}
