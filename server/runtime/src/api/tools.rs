//! The tools a turn may call: the builtin and host tools its bundle declares.

use super::OdysseyRuntime;
use crate::bundle::InstalledBundle;
use crate::error::Result;
use crate::tools::ToolSet;

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
}
