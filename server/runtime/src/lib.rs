//! The embeddable core of Odyssey: bundles, event-sourced sessions, turns, providers.
//! Nothing in here knows about gRPC or an HTTP API (the crate cannot: it does not depend
//! on them); `odyssey-server` translates.

pub mod access;
mod api;
pub mod bundle;
pub mod chat;
pub mod config;
pub mod error;
pub mod event_bounds;
pub mod event_hooks;
pub mod events;
pub mod execution;
pub mod hub;
pub mod memory;
pub mod metrics;
pub mod model;
pub mod model_override;
pub mod paging;
pub mod permissions;
pub mod policy;
pub mod prompt;
pub mod provider;
pub mod quoted;
pub mod requirements;
pub mod sandbox;
pub mod secrets;
pub mod session;
pub mod skills;
pub mod snapshot;
pub mod store;
pub(crate) mod sync;
pub mod text;
pub mod textfile;
pub mod tools;

pub use api::SessionTurn;
pub use api::{
    Activity, AgentA2aAgent, AgentMcpServer, CommandEvent, CommandEvents, CommandLine,
    CommandResult, InputDisposition, InputReceipt, McpServerKind, ModelAvailability,
    OdysseyRuntime, PulledBundle, PushedBundle, RuntimeBuilder, RuntimeCollector,
    SandboxCapabilities, ServedAgent, ServerInfo, SessionCommand, SessionFilter, SessionInput,
    SessionSpec, SessionTool, SessionToolSource, SessionTools,
};
pub use api::{ForkPoint, Rewound};
pub use bundle::InstallOptions;
pub use config::RuntimeConfig;
pub use error::{ErrorKind, Result, RuntimeError};
pub use events::InputMode;
pub use execution::{ExecutionHandle, ExecutionRequest, ExecutionState, ExecutionStatus};
pub use model::ModelSpec;
pub use model_override::ModelOverride;
pub use paging::{Page, PageRequest};
pub use policy::{ApprovalPolicy, SandboxMode};
pub use requirements::Requirements;

#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
