//! The tools a turn may call: the builtin and host tools its bundle declares, and the
//! tools of the MCP servers its agent uses.

use super::OdysseyRuntime;
use crate::bundle::{AgentDefinition, InstalledBundle};
use crate::error::Result;
use crate::tools::{ToolContext, ToolSet};

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
        for tool in self.inner.mcp.tools(ctx, &servers, offered).await {
            tools.insert(tool);
        }
        Ok(())
    }
}
