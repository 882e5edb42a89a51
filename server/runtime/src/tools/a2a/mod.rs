//! Remote A2A agents as tools: a bundle declares them (`spec.a2a_agents`), the operator
//! allows their URLs and holds their credentials (`[a2a]`), and the agent calls each as
//! `a2a__<name>` over A2A's JSON-RPC binding.

mod client;
mod input;
mod settings;
mod tool;
mod wire;

pub use client::{A2aCallError, A2aClient, public_url};
pub use input::{Answer, RemoteInput};
pub use settings::{A2aSettings, OperatorA2aAgent, ResolvedA2aAgent};
pub use tool::{A2aTool, CallLimits, TOOL_PREFIX, tool_name};
