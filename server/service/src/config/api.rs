//! The settings of the API's listeners (gRPC, gRPC-Web and the HTTP gateway) that the
//! configuration decides. The gRPC and HTTP sides add what only the running server has
//! (the TLS identity it loaded, the metrics it counts into).

use std::time::Duration;

use http::HeaderValue;

use super::MASK;

/// What the operator decides about the API, whichever listener serves it.
#[derive(Clone)]
pub struct ApiSettings {
    /// When set, every RPC but health checks and reflection needs `authorization: Bearer
    /// <token>`.
    pub auth_token: Option<String>,
    /// Interval of heartbeats on idle SubscribeSession streams.
    pub heartbeat: Duration,
    /// Largest request or response message, in bytes.
    pub max_message_bytes: usize,
    /// Browser origins allowed to call the API cross-origin (gRPC-Web); none by default.
    pub cors_origins: Vec<HeaderValue>,
    /// Host names requests may name besides IP literals, `localhost` and the certificate's
    /// names; `*` turns the check off.
    pub allowed_hosts: Vec<String>,
    /// The agent A2A requests without a tenant, and the well-known agent card, are for
    /// (`<bundle>.<agent>`); unset: the default agent of the first installed bundle.
    pub a2a_default_agent: Option<String>,
    /// Where A2A push notifications may be sent (`a2a.push_allowed_urls`); empty: nowhere,
    /// and cards say `pushNotifications: false`.
    pub a2a_push_allowed_urls: Vec<odyssey_runtime::provider::UrlPattern>,
}

impl Default for ApiSettings {
    fn default() -> Self {
        Self {
            auth_token: None,
            heartbeat: Duration::from_secs(15),
            max_message_bytes: 4 * 1024 * 1024,
            cors_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            a2a_default_agent: None,
            a2a_push_allowed_urls: Vec::new(),
        }
    }
}

/// The token stays out of debug output.
impl std::fmt::Debug for ApiSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiSettings")
            .field("auth_token", &self.auth_token.as_ref().map(|_| MASK))
            .field("heartbeat", &self.heartbeat)
            .field("max_message_bytes", &self.max_message_bytes)
            .field("cors_origins", &self.cors_origins)
            .field("allowed_hosts", &self.allowed_hosts)
            .finish()
    }
}
