//! Which model a session or turn talks to.

use serde::{Deserialize, Serialize};

use crate::secrets;

/// A provider name (`openai`, `replay`, ...), a model name and its free-form config
/// (`temperature`, `max_tokens`, `base_url`, ...). Never holds an API key.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    pub provider: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<serde_json::Map<String, serde_json::Value>>,
}

impl ModelSpec {
    pub fn new(provider: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            provider: provider.into(),
            name: name.into(),
            config: None,
        }
    }

    /// Parses `provider/name` (the name may itself contain `/`).
    pub fn parse(text: &str) -> Option<Self> {
        let (provider, name) = text.split_once('/')?;
        (!provider.is_empty() && !name.is_empty()).then(|| Self::new(provider, name))
    }

    /// A config value by key.
    pub fn config_value(&self, key: &str) -> Option<&serde_json::Value> {
        self.config.as_ref()?.get(key)
    }

    pub fn config_str(&self, key: &str) -> Option<&str> {
        self.config_value(key)?.as_str()
    }

    /// Masks whatever in the config looks like a credential (see [`secrets`]); says whether
    /// anything did. Requests and bundles holding one are refused, so this only matters
    /// when a path forgets that: what is written or streamed is masked all the same.
    pub fn mask_secrets(&mut self) -> bool {
        self.config.as_mut().is_some_and(secrets::mask_secrets)
    }
}

impl std::fmt::Display for ModelSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.provider, self.name)
    }
}
