//! The Agent2Agent protocol (A2A v1.0) over the runtime core: the gRPC binding,
//! `lf.a2a.v1.A2AService` on the main gRPC port beside `odyssey.v1`, and the JSON-RPC
//! binding on the HTTP listener ([`jsonrpc`], translated by the gRPC binding's code), both
//! behind the same token and TLS.
//!
//! The mapping: a request's `tenant` names the agent (`<bundle>.<agent>`, empty for the
//! server's default agent, see [`tenant`]); a `contextId` is a session (a message without
//! one opens a new session on that agent); a task is one turn. Translation only: what a
//! task shows is read from the turn's status and the session's event log.

mod answer;
pub mod card;
mod error;
pub mod jsonrpc;
mod list;
mod push;
pub mod rest;
mod service;
mod stream;
mod task;
mod tenant;

pub use answer::DECISION_EXTENSION;
pub use card::{CardOptions, DETAILS_EXTENSION, Site};
pub use error::{A2A_ERROR_DOMAIN, A2aError};
pub use service::A2a;
pub use task::{MESSAGE_ID_KEY, SEQUENCE_KEY};

/// The operator's A2A settings and the push registrations, shared by every binding.
#[derive(Clone, Debug, Default)]
pub struct A2aOptions {
    /// The agent of requests without a tenant (`a2a.default_agent`).
    pub default_agent: Option<String>,
    /// Where push notifications may be sent (`a2a.push_allowed_urls`).
    pub push_allowed_urls: Vec<odyssey_runtime::provider::UrlPattern>,
    /// The push notification configs of live tasks.
    pub push: push::PushRegistry,
    /// Where the bindings listen, for the interfaces of extended cards.
    pub site: card::Site,
}

impl A2aOptions {
    pub fn new(
        default_agent: Option<String>,
        push_allowed_urls: Vec<odyssey_runtime::provider::UrlPattern>,
    ) -> Self {
        Self {
            default_agent,
            push_allowed_urls,
            push: push::PushRegistry::default(),
            site: card::Site::default(),
        }
    }
}

/// The fully qualified name of the A2A service.
pub const SERVICE_NAME: &str = "lf.a2a.v1.A2AService";
