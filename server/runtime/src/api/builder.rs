//! [`RuntimeBuilder`]: a runtime with the embedding program's own model providers and
//! tools, registered before it starts.
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use odyssey_runtime::{OdysseyRuntime, RuntimeConfig};
//! # use odyssey_runtime::provider::ModelProvider;
//! # use odyssey_runtime::tools::Tool;
//! # async fn demo(mine: Arc<dyn ModelProvider>, clock: Arc<dyn Tool>) -> odyssey_runtime::Result<()> {
//! let runtime = OdysseyRuntime::builder(RuntimeConfig::with_home("/tmp/odyssey-home"))
//!     .provider("mine", mine) // bundles say `model: { provider: mine, name: … }`
//!     .tool(clock) // bundles say `tools: [{ name: Clock, source: host }]`
//!     .start()
//!     .await?;
//! # Ok(()) }
//! ```

use std::sync::Arc;

use super::OdysseyRuntime;
use crate::config::RuntimeConfig;
use crate::error::Result;
use crate::provider::{ModelProvider, ProviderRegistry};
use crate::store::Store;
use crate::tools::{HostTools, Tool};

/// Collects custom providers and tools; [`RuntimeBuilder::start`] checks their names and
/// starts the runtime.
pub struct RuntimeBuilder {
    config: RuntimeConfig,
    providers: Vec<(String, Arc<dyn ModelProvider>)>,
    tools: Vec<Arc<dyn Tool>>,
    store: Option<Store>,
}

impl RuntimeBuilder {
    pub(super) fn new(config: RuntimeConfig) -> Self {
        Self {
            config,
            providers: Vec::new(),
            tools: Vec::new(),
            store: None,
        }
    }

    /// Serves model specs whose `provider` is `name` (lowercase `a-z`, `0-9`, `_`, `-`;
    /// not a built-in provider's name). Validation at session creation, `ListModels` and
    /// the server's list of known providers all include it.
    pub fn provider(mut self, name: impl Into<String>, provider: Arc<dyn ModelProvider>) -> Self {
        self.providers.push((name.into(), provider));
        self
    }

    /// Offers `tool`, under the name its spec gives, to bundles that declare it with
    /// `source: host`. The agent's permission rules decide its calls like any other tool's.
    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// Keeps sessions, their logs, the queue and bundles in `store` rather than in the
    /// one the configuration names ([`Store::open`]). A store serves one runtime.
    pub fn store(mut self, store: Store) -> Self {
        self.store = Some(store);
        self
    }

    /// Checks every registration (a name taken twice, or a built-in's name, is an
    /// `InvalidArgument` naming it), then starts as [`OdysseyRuntime::start`] does.
    pub async fn start(self) -> Result<OdysseyRuntime> {
        let mut providers = ProviderRegistry::new(self.config.providers.clone())
            .with_requirements(self.config.requirements.clone())
            .with_credentials(self.config.credentials.clone());
        for (name, provider) in self.providers {
            providers.register(&name, provider)?;
        }
        let mut host_tools = HostTools::default();
        for tool in self.tools {
            host_tools.register(tool)?;
        }
        OdysseyRuntime::open(self.config, self.store, providers, host_tools).await
    }
}
