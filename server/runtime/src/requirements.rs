//! Operator caps that neither the rest of the configuration nor any client can exceed: the
//! most permissive sandbox mode, the model providers sessions may use, and the base URLs
//! model calls may go to. The server refuses a configuration that contradicts them at
//! startup; the runtime refuses requests beyond them with PERMISSION_DENIED naming the
//! requirement.

use crate::policy::SandboxMode;
use crate::provider::UrlPattern;

/// Setting names, as errors and `odyssey config show` spell them.
pub const MAX_SANDBOX_MODE: &str = "requirements.max_sandbox_mode";
pub const ALLOWED_PROVIDERS: &str = "requirements.allowed_providers";
pub const ALLOWED_BASE_URLS: &str = "requirements.allowed_base_urls";

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Requirements {
    /// The most permissive sandbox mode a session may run in; `None` caps nothing beyond
    /// the other settings (`danger_full_access` still needs `allow_danger_full_access`).
    pub max_sandbox_mode: Option<SandboxMode>,
    /// The providers sessions and turns may use; `None` allows every known provider.
    pub allowed_providers: Option<Vec<String>>,
    /// Where model calls may go, whoever chose the URL (the operator's provider settings,
    /// a provider's default endpoint, or a model config's `base_url`); `None` leaves it to
    /// the provider settings.
    pub allowed_base_urls: Option<Vec<UrlPattern>>,
}

impl Requirements {
    /// Whether sessions may run in `mode`.
    pub fn allows_mode(&self, mode: SandboxMode) -> bool {
        self.max_sandbox_mode.is_none_or(|max| mode <= max)
    }

    /// Whether sessions may use `provider`.
    pub fn allows_provider(&self, provider: &str) -> bool {
        self.allowed_providers
            .as_ref()
            .is_none_or(|allowed| allowed.iter().any(|p| p == provider))
    }

    /// Whether model calls may go to `url`.
    pub fn allows_base_url(&self, url: &reqwest::Url) -> bool {
        self.allowed_base_urls
            .as_ref()
            .is_none_or(|allowed| allowed.iter().any(|p| p.matches(url)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_requirements_allow_everything() {
        let open = Requirements::default();
        assert!(open.allows_mode(SandboxMode::DangerFullAccess));
        assert!(open.allows_provider("anything"));
        assert!(open.allows_base_url(&"https://example.com/v1".parse().unwrap()));
    }

    #[test]
    fn set_requirements_cap_modes_providers_and_urls() {
        let strict = Requirements {
            max_sandbox_mode: Some(SandboxMode::WorkspaceWrite),
            allowed_providers: Some(vec!["replay".into(), "ollama".into()]),
            allowed_base_urls: Some(vec!["http://127.0.0.1:11434/*".parse().unwrap()]),
        };
        assert!(strict.allows_mode(SandboxMode::ReadOnly));
        assert!(strict.allows_mode(SandboxMode::WorkspaceWrite));
        assert!(!strict.allows_mode(SandboxMode::DangerFullAccess));
        assert!(strict.allows_provider("ollama"));
        assert!(!strict.allows_provider("openai"));
        assert!(strict.allows_base_url(&"http://127.0.0.1:11434/v1".parse().unwrap()));
        assert!(!strict.allows_base_url(&"https://api.openai.com/v1".parse().unwrap()));
    }
}
