//! The tools a turn may call: the builtin and host tools its bundle declares, and the
//! tools of the MCP servers its agent uses.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::OdysseyRuntime;
use crate::bundle::{AgentDefinition, InstalledBundle};
use crate::error::{Result, RuntimeError};
use crate::paging::{Page, PageRequest, paginate};
use crate::permissions::PermissionRules;
use crate::provider::ToolSpec;
use crate::sandbox::ProcessView;
use crate::session::EventSink;
use crate::tools::a2a::{A2aTool, CallLimits, RemoteInput, TOOL_PREFIX, tool_name};
use crate::tools::mcp::TurnMcpTools;
use crate::tools::{Tool, ToolContext, ToolSet};

impl OdysseyRuntime {
    /// The bundle's tools that `offered` accepts. A host tool the bundle declares but this
    /// runtime was not given fails the turn, as it fails session creation: the agent was
    /// written to use it.
    pub(crate) fn turn_tools(
        &self,
        bundle: &InstalledBundle,
        offered: impl Fn(&str) -> bool,
    ) -> Result<ToolSet> {
        let declared = &bundle.manifest.tools;
        let host_tools = &self.inner.host_tools;
        host_tools.check_declared(&bundle.id.to_string(), declared)?;
        Ok(ToolSet::for_bundle(
            declared,
            &self.inner.sandbox,
            host_tools,
            offered,
        ))
    }

    /// Adds the tools of the MCP servers `agent` uses to `tools`, those `offered` accepts,
    /// starting the servers in the session's cell when needed. The servers are checked
    /// against the operator's settings again: they may have changed since the session
    /// was created.
    pub(crate) async fn add_mcp_tools(
        &self,
        bundle: &InstalledBundle,
        agent: &AgentDefinition,
        tools: &mut ToolSet,
        ctx: &ToolContext,
        offered: impl Fn(&str) -> bool,
    ) -> Result<()> {
        if agent.mcp_servers.is_empty() {
            return Ok(());
        }
        let config = &self.inner.config;
        let servers = config
            .mcp
            .resolve(&bundle.manifest, agent, &config.access)?;
        let listed = TurnMcpTools::list(&self.inner.mcp, ctx, servers, offered).await;
        tools.set_mcp(Arc::new(listed));
        Ok(())
    }

    /// Adds a tool `a2a__<name>` for each remote A2A agent `agent` uses that `offered`
    /// accepts. The agents are checked against the operator's settings again: they may
    /// have changed since the session was created. `input` is how a remote question
    /// reaches a human (`None` where no turn runs).
    pub(crate) fn add_a2a_tools(
        &self,
        bundle: &InstalledBundle,
        agent: &AgentDefinition,
        tools: &mut ToolSet,
        input: Option<RemoteInput>,
        offered: impl Fn(&str) -> bool,
    ) -> Result<()> {
        if agent.a2a_agents.is_empty() {
            return Ok(());
        }
        let settings = &self.inner.config.a2a;
        let limits = CallLimits {
            call_timeout: settings.call_timeout,
            max_output_bytes: settings.max_output_bytes,
        };
        for remote in settings.resolve(&bundle.manifest, agent)? {
            if !offered(&tool_name(&remote.name)) {
                continue;
            }
            tools.insert(Arc::new(A2aTool::new(
                remote,
                self.inner.a2a.clone(),
                limits.clone(),
                input.clone(),
            )));
        }
        Ok(())
    }
}

/// A tool the session's agent is offered, as the model is told of it.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionTool {
    pub spec: ToolSpec,
    pub source: SessionToolSource,
}

/// Where a session's tool comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionToolSource {
    /// One of this server's own tools the bundle declares.
    Builtin,
    /// A tool the embedder gave the runtime (`source: host`).
    Host,
    /// A tool of the named MCP server.
    Mcp(String),
    /// The named remote A2A agent (`a2a__<name>`).
    A2a(String),
}

impl SessionToolSource {
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Builtin => "builtin",
            Self::Host => "host",
            Self::Mcp(_) => "mcp",
            Self::A2a(_) => "a2a",
        }
    }
}

/// A page of the tools of a session, and the agent's MCP servers that offer none.
#[derive(Clone, Debug)]
pub struct SessionTools {
    /// Sorted by name.
    pub tools: Page<SessionTool>,
    /// `(server, why)` for each MCP server that could not be started or listed.
    pub mcp_server_errors: Vec<(String, String)>,
}

impl OdysseyRuntime {
    /// The tools the session's agent is offered, as its next turn's model would see them:
    /// the bundle's builtin and host tools and its MCP servers' tools that the agent's
    /// rules do not deny. MCP servers not running are started in the session's cell, as a
    /// turn starts them.
    pub async fn list_session_tools(&self, id: Uuid, page: PageRequest) -> Result<SessionTools> {
        self.ensure_running()?;
        // A token this list did not issue is refused before any server is started.
        page.after_key()?;
        let session = self.inner.sessions.get(id).await?;
        let record = session.record().clone();
        let bundle = self.pinned_bundle(&record.bundle).await?;
        let agent = bundle
            .manifest
            .agent(&record.agent_id)
            .ok_or_else(|| {
                RuntimeError::FailedPrecondition(format!(
                    "agent `{}` is no longer in bundle {}",
                    record.agent_id, bundle.id
                ))
            })?
            .clone();
        let rules = PermissionRules::from_tool_rules(&agent.tools)?;
        let mut declared = self.turn_tools(&bundle, |name| rules.offered(name))?;
        self.add_a2a_tools(&bundle, &agent, &mut declared, None, |name| {
            rules.offered(name)
        })?;
        let mut tools: Vec<SessionTool> = declared
            .specs()
            .into_iter()
            .map(|spec| {
                let host = bundle
                    .manifest
                    .tools
                    .iter()
                    .any(|entry| entry.name == spec.name && entry.is_host());
                let source = if host {
                    SessionToolSource::Host
                } else if let Some(remote) = spec.name.strip_prefix(TOOL_PREFIX) {
                    SessionToolSource::A2a(remote.to_owned())
                } else {
                    SessionToolSource::Builtin
                };
                SessionTool { spec, source }
            })
            .collect();
        let mut mcp_server_errors = Vec::new();
        if !agent.mcp_servers.is_empty() {
            let config = &self.inner.config;
            let servers = config
                .mcp
                .resolve(&bundle.manifest, &agent, &config.access)?;
            let access = config.access.grant(&bundle.manifest.sandbox)?;
            let cell = self.prepare_cell(&session, &bundle).await?;
            let view = ProcessView::new(record.sandbox_mode, &cell);
            let ctx = ToolContext {
                session_id: record.id,
                turn_id: Uuid::nil(),
                call_id: String::new(),
                parent_session_ids: record
                    .parent
                    .as_ref()
                    .map(|p| p.ancestors.clone())
                    .unwrap_or_default(),
                cwd: view.workspace.clone(),
                view,
                cell,
                bundle: bundle.clone(),
                mode: record.sandbox_mode,
                sandbox_user: self.inner.sandbox.user(),
                mounts_read: access.mounts_read,
                mounts_write: access.mounts_write,
                network: access.network,
                env: access.env,
                memory_mb: access.memory_mb,
                events: EventSink::new(session.clone(), None),
                cancel: CancellationToken::new(),
                person: Default::default(),
                skills: Arc::default(),
            };
            let listings = self
                .inner
                .mcp
                .listings(&ctx, &servers, |name| rules.offered(name))
                .await;
            for listing in listings {
                match listing.tools {
                    Ok(offered) => tools.extend(offered.iter().map(|tool| SessionTool {
                        spec: tool.spec(),
                        source: SessionToolSource::Mcp(listing.server.clone()),
                    })),
                    Err(why) => {
                        // The server is named beside the reason: not again inside it.
                        let prefix = format!("MCP server `{}`: ", listing.server);
                        let why = why.strip_prefix(&prefix).map_or(why.clone(), str::to_owned);
                        mcp_server_errors.push((listing.server, why));
                    }
                }
            }
        }
        tools.sort_by(|a, b| a.spec.name.cmp(&b.spec.name));
        let tools = paginate(
            tools,
            &page,
            |tool| tool.spec.name.clone(),
            |key| Some(key.to_owned()),
            |tool, key| tool.spec.name > *key,
            |_| true,
        )?;
        Ok(SessionTools {
            tools,
            mcp_server_errors,
        })
    }
}
