//! Which provider serves a [`ModelSpec`], with which key, URL and limits.
//!
//! Keys and base URLs are the operator's: they come from [`ProviderSettings`] and the
//! server's environment, never from a bundle or a request. A model config's `base_url` is
//! therefore ignored for every provider whose key the server holds (today: all of them),
//! because honouring it would let a client send the operator's key to a server of the
//! client's choosing. Tests point a provider at a loopback server through
//! [`ProviderSettings::base_url`].

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use super::ModelProvider;
use super::error::ProviderError;
use super::openai::{self, OpenAiConfig, OpenAiProvider};
use super::replay::{CassetteCache, ReplayProvider, cassette_path};
use super::retry::RetryPolicy;
use crate::runtime::model::ModelSpec;
use google::{GOOGLE_NAMES, GoogleSlot};

/// The name of the deterministic cassette provider.
const REPLAY: &str = "replay";

/// A provider speaking the OpenAI chat-completions wire format.
struct WireProvider {
    name: &'static str,
    default_base_url: &'static str,
    default_key_env: &'static str,
}

/// Adding an OpenAI-compatible provider is one line here.
const WIRE_PROVIDERS: [WireProvider; 1] = [WireProvider {
    name: "openai",
    default_base_url: "https://api.openai.com/v1",
    default_key_env: "OPENAI_API_KEY",
}];

/// Operator settings for one provider; every field has a sensible default.
#[derive(Clone)]
pub struct ProviderSettings {
    /// Where requests go; `None` is the provider's public endpoint.
    pub base_url: Option<String>,
    /// The key itself; when `None`, it is read from `api_key_env`.
    pub api_key: Option<String>,
    /// The environment variable holding the key; `None` is the provider's usual one
    /// (`OPENAI_API_KEY` for `openai`).
    pub api_key_env: Option<String>,
    /// Connecting plus receiving the response headers.
    pub request_timeout: Duration,
    /// Longest silence between two pieces of a streamed answer. Generous by default:
    /// reasoning models can think for a long time before their first visible token.
    pub idle_timeout: Duration,
    /// Retries of a call that failed to start (429, 5xx, connection failure).
    pub max_retries: u32,
    /// Longest single wait between retries; a provider asking for more is not retried.
    pub max_retry_delay: Duration,
}

impl Default for ProviderSettings {
    fn default() -> Self {
        Self {
            base_url: None,
            api_key: None,
            api_key_env: None,
            request_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(300),
            max_retries: 3,
            max_retry_delay: Duration::from_secs(8),
        }
    }
}

/// Keys never appear in logs, not even through `{:?}` of the settings.
impl std::fmt::Debug for ProviderSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderSettings")
            .field("base_url", &self.base_url)
            .field(
                "api_key",
                &self.api_key.as_ref().map(|_| super::error::REDACTED),
            )
            .field("api_key_env", &self.api_key_env)
            .field("request_timeout", &self.request_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("max_retries", &self.max_retries)
            .field("max_retry_delay", &self.max_retry_delay)
            .finish()
    }
}

/// Where a provider's key came from, for ListModels.
enum KeySource {
    Settings,
    Env(String),
}

/// One OpenAI-wire provider, its key resolved, its client built on first use.
struct WireSlot {
    spec: &'static WireProvider,
    settings: ProviderSettings,
    key: Result<(String, KeySource), String>,
    provider: Mutex<Option<Arc<OpenAiProvider>>>,
}

/// Resolves model specs to providers, caching what is expensive to build.
pub struct ProviderRegistry {
    wire: Vec<WireSlot>,
    google: Vec<GoogleSlot>,
    cassettes: CassetteCache,
}

impl ProviderRegistry {
    /// `settings` overrides defaults per provider name; keys not given there are read from
    /// the process environment now, once.
    pub fn new(settings: HashMap<String, ProviderSettings>) -> Self {
        Self::with_env(settings, |name| std::env::var(name).ok())
    }

    /// Like [`ProviderRegistry::new`], reading keys through `env` instead of the process
    /// environment (embedders with their own secret store; tests).
    pub fn with_env(
        mut settings: HashMap<String, ProviderSettings>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Self {
        let wire = WIRE_PROVIDERS
            .iter()
            .map(|spec| {
                let settings = settings.remove(spec.name).unwrap_or_default();
                let env_var = settings
                    .api_key_env
                    .clone()
                    .unwrap_or_else(|| spec.default_key_env.to_owned());
                let key = match settings.api_key.clone().filter(|k| !k.is_empty()) {
                    Some(key) => Ok((key, KeySource::Settings)),
                    None => match env(&env_var).filter(|k| !k.trim().is_empty()) {
                        Some(key) => Ok((key.trim().to_owned(), KeySource::Env(env_var))),
                        None => Err(env_var),
                    },
                };
                WireSlot {
                    spec,
                    settings,
                    key,
                    provider: Mutex::new(None),
                }
            })
            .collect();
        let google = GoogleSlot::all(&mut settings, &env);
        for name in settings.keys().filter(|name| name.as_str() != REPLAY) {
            tracing::warn!(provider = %name, "settings for an unknown model provider are ignored");
        }
        Self {
            wire,
            google,
            cassettes: CassetteCache::default(),
        }
    }

    /// Provider names a model spec may use.
    pub fn known_providers(&self) -> Vec<&'static str> {
        WIRE_PROVIDERS
            .iter()
            .map(|p| p.name)
            .chain(GOOGLE_NAMES)
            .chain([REPLAY])
            .collect()
    }

    /// Checks what can be checked without a bundle or a network: the provider exists, the
    /// model has a name and its config values have the right types.
    pub fn validate(&self, spec: &ModelSpec) -> Result<(), ProviderError> {
        if spec.name.trim().is_empty() {
            return Err(ProviderError::invalid_model(
                spec.to_string(),
                "the model name is empty",
            ));
        }
        if spec.provider == REPLAY {
            return cassette_path(spec).map(drop);
        }
        if GOOGLE_NAMES.contains(&spec.provider.as_str()) {
            return openai::validate_config(spec);
        }
        self.wire_slot(spec)?;
        openai::validate_config(spec)
    }

    /// The provider serving `spec`. Cheap enough to call per turn: clients and parsed
    /// cassettes are cached. `bundle_root` locates replay cassettes.
    pub fn resolve(
        &self,
        spec: &ModelSpec,
        bundle_root: &Path,
    ) -> Result<Arc<dyn ModelProvider>, ProviderError> {
        self.validate(spec)?;
        if spec.provider == REPLAY {
            let cassette = self.cassettes.get(bundle_root, &cassette_path(spec)?)?;
            return Ok(Arc::new(ReplayProvider::new(cassette)));
        }
        if let Some(slot) = self.google_slot(spec) {
            return slot.provider();
        }
        let slot = self.wire_slot(spec)?;
        if spec.config_value("base_url").is_some() {
            tracing::debug!(model = %spec, "model config base_url ignored: the server holds this provider's key");
        }
        Ok(slot.provider()?)
    }

    /// Whether `spec` can be used right now and why, for ListModels. Never contains a key.
    pub fn availability(&self, spec: &ModelSpec, bundle_root: &Path) -> (bool, String) {
        if let Err(e) = self.validate(spec) {
            return (false, e.to_string());
        }
        if spec.provider == REPLAY {
            let path = match cassette_path(spec) {
                Ok(path) => path,
                Err(e) => return (false, e.to_string()),
            };
            return match self.cassettes.get(bundle_root, &path) {
                Ok(c) => (
                    true,
                    format!("cassette {} ({} entries)", c.path, c.entries.len()),
                ),
                Err(e) => (false, e.to_string()),
            };
        }
        let key = match self.google_slot(spec) {
            Some(slot) => Ok(&slot.key),
            None => self.wire_slot(spec).map(|slot| &slot.key),
        };
        match key {
            Ok(Ok((_, KeySource::Env(var)))) => (true, format!("key from {var}")),
            Ok(Ok((_, KeySource::Settings))) => (true, "key from server settings".into()),
            Ok(Err(var)) => (false, format!("missing {var}")),
            Err(e) => (false, e.to_string()),
        }
    }

    fn google_slot(&self, spec: &ModelSpec) -> Option<&GoogleSlot> {
        self.google.iter().find(|slot| slot.name == spec.provider)
    }

    fn wire_slot(&self, spec: &ModelSpec) -> Result<&WireSlot, ProviderError> {
        self.wire
            .iter()
            .find(|slot| slot.spec.name == spec.provider)
            .ok_or_else(|| ProviderError::UnknownProvider {
                name: spec.provider.clone(),
                known: self.known_providers(),
            })
    }
}

impl WireSlot {
    /// The shared provider instance, built (with its HTTP client) on first use.
    fn provider(&self) -> Result<Arc<OpenAiProvider>, ProviderError> {
        let (key, _) = self
            .key
            .as_ref()
            .map_err(|env_var| ProviderError::NotConfigured {
                provider: self.spec.name.to_owned(),
                env_var: env_var.clone(),
            })?;
        let mut cached = self
            .provider
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(provider) = cached.as_ref() {
            return Ok(provider.clone());
        }
        let settings = &self.settings;
        let base_url = settings
            .base_url
            .clone()
            .unwrap_or_else(|| self.spec.default_base_url.to_owned());
        // A typo in the operator's URL is a setup problem, not a provider outage.
        if let Err(e) = reqwest::Url::parse(&base_url) {
            return Err(ProviderError::Setup {
                provider: self.spec.name.to_owned(),
                message: format!("base_url `{base_url}` is not a URL: {e}"),
            });
        }
        let provider = Arc::new(OpenAiProvider::new(OpenAiConfig {
            name: self.spec.name.to_owned(),
            base_url,
            api_key: key.clone(),
            client: http_client(self.spec.name, settings.request_timeout)?,
            request_timeout: settings.request_timeout,
            idle_timeout: settings.idle_timeout,
            retry: RetryPolicy {
                max_retries: settings.max_retries,
                max_delay: settings.max_retry_delay,
            },
        }));
        *cached = Some(provider.clone());
        Ok(provider)
    }
}

/// One client per provider: it owns the connection pool, so sharing it is what makes
/// per-turn calls reuse connections.
fn http_client(
    provider: &str,
    connect_timeout: Duration,
) -> Result<reqwest::Client, ProviderError> {
    install_crypto_provider();
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .user_agent(concat!("odysseyd/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| ProviderError::Setup {
            provider: provider.to_owned(),
            message: super::sse::error_chain(&e),
        })
}

/// reqwest is built without a TLS crypto provider so the whole process agrees on one;
/// ring is installed unless the embedding program installed its own first.
fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // An error means a provider is already installed, which is just as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

mod google;
#[cfg(test)]
mod tests;
