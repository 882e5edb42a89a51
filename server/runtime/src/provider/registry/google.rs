//! The Gemini provider's place in the registry: one slot per name (`google` and `gemini`
//! are two names for the same API), each with its own operator settings.
//!
//! The key is read from `GEMINI_API_KEY`, or from `GOOGLE_API_KEY` when that is unset:
//! Google's own SDKs accept both, so either may be what an operator already has set. An
//! `api_key_env` in the settings replaces both.

use std::collections::HashMap;
use std::sync::Arc;

use super::super::ModelProvider;
use super::super::error::ProviderError;
use super::super::gemini::{DEFAULT_BASE_URL, GeminiConfig, GeminiProvider};
use super::super::retry::RetryPolicy;
use super::{
    Credential, KeySource, ProviderCache, ProviderSettings, SlotFacts, cache_key, http_client,
    slot_key,
};

/// The names the Gemini API is known by.
pub(super) const GOOGLE_NAMES: [&str; 2] = ["google", "gemini"];

/// Key variables, in order of preference.
const KEY_ENVS: [&str; 2] = ["GEMINI_API_KEY", "GOOGLE_API_KEY"];

/// One Gemini provider name, its key resolved, its client built on first use.
pub(super) struct GoogleSlot {
    pub name: &'static str,
    settings: ProviderSettings,
    /// The key and where it came from, or the variable(s) to set, for messages.
    pub key: Result<(String, KeySource), String>,
    providers: ProviderCache,
}

impl GoogleSlot {
    /// One slot per name, taking that name's settings out of `settings`.
    pub fn all(
        settings: &mut HashMap<String, ProviderSettings>,
        env: &impl Fn(&str) -> Option<String>,
    ) -> Vec<Self> {
        GOOGLE_NAMES
            .iter()
            .map(|&name| {
                let settings = settings.remove(name).unwrap_or_default();
                let key = resolve_key(&settings, env);
                Self {
                    name,
                    settings,
                    key,
                    providers: ProviderCache::default(),
                }
            })
            .collect()
    }

    /// Where calls go: the operator's `base_url`, else Google's public endpoint.
    pub fn base_url(&self) -> &str {
        self.settings
            .base_url
            .as_deref()
            .unwrap_or(DEFAULT_BASE_URL)
    }

    pub fn facts(&self) -> SlotFacts<'_> {
        SlotFacts {
            settings: &self.settings,
            keyless: false,
            has_key: self.key.is_ok(),
            base_url: Some(self.base_url()),
        }
    }

    /// The shared provider instance for `chosen` (an allowed model-config URL) or the
    /// slot's own base URL, with the picked credential's key or the slot's, built (with
    /// its HTTP client) on first use.
    pub fn provider(
        &self,
        chosen: Option<&str>,
        credential: Option<Credential<'_>>,
    ) -> Result<Arc<dyn ModelProvider>, ProviderError> {
        let key = slot_key(self.name, &self.key, credential)?;
        let base_url = chosen.unwrap_or(self.base_url()).to_owned();
        let cached_as = cache_key(&base_url, credential);
        self.providers
            .get_or_build(&cached_as, chosen.is_none(), || self.build(key, &base_url))
    }

    fn build(&self, key: &str, base_url: &str) -> Result<Arc<dyn ModelProvider>, ProviderError> {
        if let Err(e) = reqwest::Url::parse(base_url) {
            return Err(ProviderError::Setup {
                provider: self.name.to_owned(),
                message: format!("base_url `{base_url}` is not a URL: {e}"),
            });
        }
        let settings = &self.settings;
        Ok(Arc::new(GeminiProvider::new(GeminiConfig {
            name: self.name.to_owned(),
            base_url: base_url.to_owned(),
            api_key: key.to_owned(),
            client: http_client(self.name, settings.request_timeout)?,
            request_timeout: settings.request_timeout,
            idle_timeout: settings.idle_timeout,
            retry: RetryPolicy {
                max_retries: settings.max_retries,
                max_delay: settings.max_retry_delay,
            },
        })))
    }
}

fn resolve_key(
    settings: &ProviderSettings,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<(String, KeySource), String> {
    if let Some(key) = settings.api_key.clone().filter(|k| !k.is_empty()) {
        return Ok((key, KeySource::Settings));
    }
    let vars: Vec<String> = match &settings.api_key_env {
        Some(var) => vec![var.clone()],
        None => KEY_ENVS.iter().map(|v| (*v).to_owned()).collect(),
    };
    for var in &vars {
        if let Some(key) = env(var).filter(|k| !k.trim().is_empty()) {
            return Ok((key.trim().to_owned(), KeySource::Env(var.clone())));
        }
    }
    Err(vars.join(" or "))
}
