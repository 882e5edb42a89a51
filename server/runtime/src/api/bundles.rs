//! Bundle operations. The store's work is file I/O, so it runs on blocking threads.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::OdysseyRuntime;
use crate::bundle::{
    self, AgentDefinition, BundleId, BundleReference, BundleStore, InstallOptions, InstalledBundle,
    McpServerSource,
};
use crate::error::{Result, RuntimeError};
use crate::model::ModelSpec;
use crate::model_override::find_override;
use crate::paging::{Page, PageRequest, paginate};

/// Whether the server has what an agent's model needs.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelAvailability {
    pub agent_id: String,
    /// The model the agent's sessions run on when the client names none.
    pub model: ModelSpec,
    /// The bundle's own model, when an operator's override replaces it.
    pub bundle_model: Option<ModelSpec>,
    pub available: bool,
    pub detail: String,
}

/// An agent as this server runs it: its definition with the model its sessions get when
/// the client names none (the operator's override, else the bundle's), and the bundle's
/// own model where an override replaces it.
#[derive(Clone, Debug, PartialEq)]
pub struct ServedAgent {
    pub agent: AgentDefinition,
    pub bundle_model: Option<ModelSpec>,
    /// The MCP servers the agent uses, in the order its `agent.yaml` lists them.
    pub mcp_servers: Vec<AgentMcpServer>,
    /// The remote A2A agents the agent delegates to, in the order its `agent.yaml` lists
    /// them.
    pub a2a_agents: Vec<AgentA2aAgent>,
}

/// A remote A2A agent an agent delegates to, as clients are shown it: its name and URL
/// without query or credentials, never the operator's headers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentA2aAgent {
    pub name: String,
    /// `None` for an operator's agent this server's configuration does not have (the
    /// agent's sessions are refused until it does).
    pub url: Option<String>,
    /// Whether the operator's configuration provides it (`[a2a.agents.NAME]`).
    pub operator: bool,
}

/// An MCP server an agent uses, as clients are shown it: its name and how it is reached,
/// never its command, environment, URL or headers (an operator's may hold credentials).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentMcpServer {
    pub name: String,
    /// `None` for an operator's server this server's configuration does not have (the
    /// agent's sessions are refused until it does).
    pub kind: Option<McpServerKind>,
    /// Whether the operator's configuration provides it (`[mcp.servers.NAME]`), rather
    /// than the bundle.
    pub operator: bool,
}

/// How an MCP server is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum McpServerKind {
    /// A program speaking MCP on its stdin and stdout, run in the session's sandbox cell.
    Stdio,
    /// A remote server over streamable HTTP.
    Url,
}

impl McpServerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stdio => "stdio",
            Self::Url => "url",
        }
    }
}

impl OdysseyRuntime {
    pub(super) async fn with_store<T: Send + 'static>(
        &self,
        work: impl FnOnce(&BundleStore) -> std::result::Result<T, bundle::BundleError> + Send + 'static,
    ) -> Result<T> {
        let store = self.inner.bundles.clone();
        tokio::task::spawn_blocking(move || work(&store))
            .await
            .map_err(|e| RuntimeError::storage("bundle store", std::io::Error::other(e)))?
            .map_err(RuntimeError::from)
    }

    pub(crate) async fn resolve_bundle(&self, reference: String) -> Result<Arc<InstalledBundle>> {
        if let Some(bundle) = self.inner.bundles.cached(&reference) {
            return Ok(bundle);
        }
        let again = reference.clone();
        match self
            .with_store(move |store| store.resolve(&reference))
            .await
        {
            // Installed through another server sharing the store: the catalog catches up.
            Err(e) if e.kind() == crate::ErrorKind::NotFound && self.shares_store() => {
                // A session's pin names a digest: that one bundle is unpacked here.
                if let Ok(BundleReference::Digest { digest, .. }) = BundleReference::parse(&again) {
                    self.inner.stored_bundles.bundle_by_digest(digest).await?;
                } else {
                    self.inner.stored_bundles.refresh_catalog().await?;
                }
                self.with_store(move |store| store.resolve(&again)).await
            }
            found => found,
        }
    }

    /// The bundle a session is pinned to. With a shared store, one another server
    /// installed is unpacked here by its digest first.
    pub(crate) async fn pinned_bundle(
        &self,
        pin: &crate::session::BundlePin,
    ) -> Result<Arc<InstalledBundle>> {
        match self.resolve_bundle(pin.reference()).await {
            Err(e) if e.kind() == crate::ErrorKind::NotFound && self.shares_store() => {
                self.inner
                    .stored_bundles
                    .bundle_by_digest(pin.digest.clone())
                    .await?;
                self.resolve_bundle(pin.reference()).await
            }
            found => found,
        }
    }

    /// A bundle installed here from a project, also given to a shared store, so that
    /// every server sharing it has it.
    async fn share_installed(
        &self,
        installed: Arc<InstalledBundle>,
        options: InstallOptions,
    ) -> Result<Arc<InstalledBundle>> {
        if !self.shares_store() {
            return Ok(installed);
        }
        let digest = installed.id.digest.clone();
        let archive = self
            .with_store(move |store| {
                let mut archive = Vec::new();
                store.export(&format!("@{digest}"), &mut archive)?;
                Ok(archive)
            })
            .await?;
        Ok(self
            .inner
            .stored_bundles
            .install_archive(archive, options)
            .await?)
    }

    /// Writes a ready-to-edit scaffold project (a working hello agent) into `dir`.
    pub async fn init(&self, dir: PathBuf, name: String) -> Result<()> {
        tokio::task::spawn_blocking(move || bundle::write_scaffold(&dir, &name))
            .await
            .map_err(|e| RuntimeError::storage("init bundle", std::io::Error::other(e)))?
            .map_err(RuntimeError::from)
    }

    /// The scaffold project as a tar + gzip archive.
    pub fn init_archive(&self, name: &str) -> Result<Vec<u8>> {
        Ok(bundle::scaffold_archive(name)?)
    }

    /// Validates and installs a project folder on this machine.
    pub async fn build_and_install(
        &self,
        project: &Path,
        options: InstallOptions,
    ) -> Result<Arc<InstalledBundle>> {
        let project = project.to_path_buf();
        let shared = options.clone();
        let installed = self
            .with_store(move |store| store.build_and_install(&project, &options))
            .await?;
        self.share_installed(installed, shared).await
    }

    /// Validates a project and writes its bundle archive to `output`, installing nothing.
    pub async fn build_to(project: &Path, output: &Path) -> Result<BundleId> {
        let (project, output) = (project.to_path_buf(), output.to_path_buf());
        tokio::task::spawn_blocking(move || bundle::build_to(&project, &output))
            .await
            .map_err(|e| RuntimeError::storage("build bundle", std::io::Error::other(e)))?
            .map_err(RuntimeError::from)
    }

    /// Installs a project sent as an archive (BuildBundle).
    pub async fn install_project_archive(
        &self,
        archive: Vec<u8>,
        options: InstallOptions,
    ) -> Result<Arc<InstalledBundle>> {
        let shared = options.clone();
        let installed = self
            .with_store(move |store| store.install_project_archive(archive.as_slice(), &options))
            .await?;
        self.share_installed(installed, shared).await
    }

    /// Installs a bundle archive made by export or `build_to` (ImportBundle).
    pub async fn import_bundle(
        &self,
        archive: Vec<u8>,
        options: InstallOptions,
    ) -> Result<Arc<InstalledBundle>> {
        Ok(self
            .inner
            .stored_bundles
            .install_archive(archive, options)
            .await?)
    }

    pub async fn inspect_bundle(&self, reference: &str) -> Result<Arc<InstalledBundle>> {
        self.resolve_bundle(reference.to_string()).await
    }

    /// Installed bundles sorted by namespace, name and version.
    pub async fn list_bundles(
        &self,
        namespace: Option<String>,
        page: PageRequest,
    ) -> Result<Page<Arc<InstalledBundle>>> {
        if self.shares_store() {
            self.inner.stored_bundles.refresh_catalog().await?;
        }
        let bundles = self
            .with_store(move |store| store.list(namespace.as_deref()))
            .await?;
        let position = |b: &Arc<InstalledBundle>| {
            (
                b.id.namespace.clone(),
                b.id.name.clone(),
                b.id.version.clone(),
            )
        };
        paginate(
            bundles,
            &page,
            |b| format!("{}/{}@{}", b.id.namespace, b.id.name, b.id.version),
            parse_bundle_key,
            |b, key| position(b) > *key,
            |_| true,
        )
    }

    pub async fn delete_bundle(&self, reference: &str) -> Result<Arc<InstalledBundle>> {
        if let Ok(BundleReference::Digest { name: None, digest }) =
            BundleReference::parse(reference)
        {
            return Ok(self.inner.stored_bundles.delete_bundle(digest).await?);
        }
        if self.shares_store() {
            // Deleted from the store, for every server sharing it.
            let digest = self
                .resolve_bundle(reference.to_string())
                .await?
                .id
                .digest
                .clone();
            return Ok(self.inner.stored_bundles.delete_bundle(digest).await?);
        }
        let reference = reference.to_string();
        self.with_store(move |store| store.delete(&reference)).await
    }

    /// The installed bundle as a tar + gzip archive.
    pub async fn export_bundle(&self, reference: &str) -> Result<(Arc<InstalledBundle>, Vec<u8>)> {
        let reference = reference.to_string();
        self.with_store(move |store| {
            let mut archive = Vec::new();
            let bundle = store.export(&reference, &mut archive)?;
            Ok((bundle, archive))
        })
        .await
    }

    /// A bundle's agents, each with the model this server runs it on.
    pub async fn list_agents(&self, reference: &str) -> Result<Vec<ServedAgent>> {
        Ok(self.served_agents(&*self.inspect_bundle(reference).await?))
    }

    /// `bundle`'s agents, each with the model this server runs it on.
    pub fn served_agents(&self, bundle: &InstalledBundle) -> Vec<ServedAgent> {
        bundle
            .manifest
            .agents
            .iter()
            .map(|agent| {
                let (model, bundle_model) = self.default_model(&bundle.id, agent);
                ServedAgent {
                    agent: AgentDefinition {
                        model,
                        ..agent.clone()
                    },
                    bundle_model,
                    mcp_servers: self.agent_mcp_servers(bundle, agent),
                    a2a_agents: self.agent_a2a_agents(bundle, agent),
                }
            })
            .collect()
    }

    /// The MCP servers `agent` uses, each with how it is reached: the bundle's own as it
    /// declares them, the operator's as this server's configuration has them.
    pub(crate) fn agent_mcp_servers(
        &self,
        bundle: &InstalledBundle,
        agent: &AgentDefinition,
    ) -> Vec<AgentMcpServer> {
        let operator = &self.inner.config.mcp.servers;
        agent
            .mcp_servers
            .iter()
            .map(|name| {
                let source = bundle.manifest.mcp_server(name).map(|s| &s.source);
                let (kind, by_operator) = match source {
                    Some(McpServerSource::Stdio { .. }) => (Some(McpServerKind::Stdio), false),
                    Some(McpServerSource::Url(_)) => (Some(McpServerKind::Url), false),
                    Some(McpServerSource::Operator) | None => {
                        let kind = operator.get(name).map(|s| {
                            if s.url.is_some() {
                                McpServerKind::Url
                            } else {
                                McpServerKind::Stdio
                            }
                        });
                        (kind, true)
                    }
                };
                AgentMcpServer {
                    name: name.clone(),
                    kind,
                    operator: by_operator,
                }
            })
            .collect()
    }

    /// The remote A2A agents `agent` delegates to, each with its public URL: the bundle's
    /// as it declares it, the operator's as this server's configuration has it.
    fn agent_a2a_agents(
        &self,
        bundle: &InstalledBundle,
        agent: &AgentDefinition,
    ) -> Vec<AgentA2aAgent> {
        let operator = &self.inner.config.a2a.agents;
        agent
            .a2a_agents
            .iter()
            .map(|name| {
                let declared = bundle.manifest.a2a_agent(name).and_then(|a| a.url.as_ref());
                match declared {
                    Some(url) => AgentA2aAgent {
                        name: name.clone(),
                        url: Some(crate::tools::a2a::public_url(url)),
                        operator: false,
                    },
                    None => AgentA2aAgent {
                        name: name.clone(),
                        url: operator
                            .get(name)
                            .map(|a| crate::tools::a2a::public_url(&a.url)),
                        operator: true,
                    },
                }
            })
            .collect()
    }

    /// The model sessions of `agent` run on when the client names none: the operator's
    /// override for it, else the agent's own; with the agent's own when it was replaced.
    pub(super) fn default_model(
        &self,
        bundle: &BundleId,
        agent: &AgentDefinition,
    ) -> (ModelSpec, Option<ModelSpec>) {
        match find_override(&self.inner.config.model_overrides, bundle, &agent.id) {
            Some(model) if *model != agent.model => (model.clone(), Some(agent.model.clone())),
            _ => (agent.model.clone(), None),
        }
    }

    /// The models a bundle's agents run on here, and whether this server can serve each.
    /// Local servers are probed, all at once, so the answer waits at most one probe
    /// timeout.
    pub async fn list_models(&self, reference: &str) -> Result<Vec<ModelAvailability>> {
        let bundle = self.inspect_bundle(reference).await?;
        let providers = &self.inner.providers;
        let agents = self.served_agents(&bundle);
        let checks = agents.into_iter().map(|served| async {
            let (available, detail) = providers
                .check_availability(&served.agent.model, &bundle.root)
                .await;
            ModelAvailability {
                agent_id: served.agent.id,
                model: served.agent.model,
                bundle_model: served.bundle_model,
                available,
                detail,
            }
        });
        Ok(futures::future::join_all(checks).await)
    }
}

fn parse_bundle_key(key: &str) -> Option<(String, String, semver::Version)> {
    let (path, version) = key.rsplit_once('@')?;
    let (namespace, name) = path.split_once('/')?;
    Some((
        namespace.into(),
        name.into(),
        semver::Version::parse(version).ok()?,
    ))
}
