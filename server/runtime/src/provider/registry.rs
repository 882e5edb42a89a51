//! Which provider serves a [`ModelSpec`], with which key, URL and limits.
//!
//! Keys and base URLs are the operator's: they come from [`ProviderSettings`] and the
//! server's environment, never from a bundle or a request. A model config's `base_url`
//! (from a bundle or a request, so from a client) is honoured only where the operator
//! allows it: for a provider whose key the server holds, when it matches the provider's
//! [`ProviderSettings::allowed_base_urls`]; for a local provider that needs no key, also
//! when it points at this machine (loopback). Anything else is refused with
//! PERMISSION_DENIED naming the setting, never silently ignored, so a client cannot send
//! the operator's key to a server of its choosing. A model config may pick one of the
//! operator's named credentials (`config.credential = "NAME"`, see [`CredentialSettings`]),
//! for its provider and the base URLs it allows; it never carries a key itself (one that
//! looks like it does is refused). [`Requirements`] cap all of it: the
//! providers sessions may use and every URL a model call may go to. Tests point a provider
//! at a loopback server through [`ProviderSettings::base_url`].

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use super::ModelProvider;
use super::anthropic::AnthropicProvider;
use super::credential::{CREDENTIAL_KEY, CredentialSettings};
use super::error::ProviderError;
use super::openai::{self, Endpoint, OpenAiConfig, OpenAiProvider, WireAuth};
use super::replay::{CassetteCache, ReplayProvider, cassette_path};
use super::retry::RetryPolicy;
use super::url_pattern::{UrlPattern, is_loopback};
use crate::model::ModelSpec;
use crate::requirements::{self, Requirements};
use crate::secrets;
use custom::CustomProviders;
use google::{GOOGLE_NAMES, GoogleSlot};

/// The name of the deterministic cassette provider.
const REPLAY: &str = "replay";

/// Longest model name accepted. A model's spec is copied into its session's record and
/// into every turn's first event, so it stays small; real names are far shorter.
const MAX_MODEL_NAME_BYTES: usize = 256;
/// Largest model config accepted, as JSON (see [`MAX_MODEL_NAME_BYTES`]).
const MAX_MODEL_CONFIG_BYTES: usize = 16 * 1024;
/// Deepest nesting of objects and arrays in a model config: it becomes a protobuf
/// `Struct` in every turn's first event, and decoders refuse deep ones.
const MAX_MODEL_CONFIG_DEPTH: usize = 20;

/// Provider instances kept per slot for model-config base URLs; beyond it, a URL's
/// provider is built per turn. Clients choose these URLs (within the operator's
/// allowlist, which may be a prefix), so the cache must not grow with their choices.
const MAX_CACHED_URLS: usize = 16;

/// A provider reached over HTTP: its wire format, where it lives, how it authenticates.
struct WireProvider {
    name: &'static str,
    format: WireFormat,
    /// `None`: there is no public endpoint, the operator must give one.
    default_base_url: Option<&'static str>,
    /// An environment variable that may hold the base URL (Azure's resource endpoint).
    base_url_env: Option<&'static str>,
    /// `None`: a local server that needs no key (one from the settings is still sent).
    default_key_env: Option<&'static str>,
}

/// How requests are shaped and authenticated.
#[derive(Clone, Copy, PartialEq)]
enum WireFormat {
    /// `POST {base}/chat/completions`, `Authorization: Bearer`.
    OpenAiChat,
    /// Chat completions at `{base}/openai/deployments/{model}/chat/completions?api-version=`
    /// with an `api-key` header.
    AzureOpenAi,
    /// Anthropic's Messages API.
    Anthropic,
}

impl WireProvider {
    /// A hosted service with a bearer key.
    const fn hosted(name: &'static str, base_url: &'static str, key_env: &'static str) -> Self {
        Self {
            name,
            format: WireFormat::OpenAiChat,
            default_base_url: Some(base_url),
            base_url_env: None,
            default_key_env: Some(key_env),
        }
    }

    /// A server on the operator's machine: no key, its usual loopback port.
    const fn local(name: &'static str, base_url: &'static str) -> Self {
        Self {
            name,
            format: WireFormat::OpenAiChat,
            default_base_url: Some(base_url),
            base_url_env: None,
            default_key_env: None,
        }
    }
}

/// Every HTTP provider; adding an OpenAI-compatible one is one line here.
const WIRE_PROVIDERS: &[WireProvider] = &[
    WireProvider::hosted("openai", "https://api.openai.com/v1", "OPENAI_API_KEY"),
    WireProvider {
        name: "azure_openai",
        format: WireFormat::AzureOpenAi,
        default_base_url: None,
        base_url_env: Some("AZURE_OPENAI_ENDPOINT"),
        default_key_env: Some("AZURE_OPENAI_API_KEY"),
    },
    WireProvider::hosted(
        "deepseek",
        "https://api.deepseek.com/v1",
        "DEEPSEEK_API_KEY",
    ),
    WireProvider::hosted("groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    WireProvider::hosted(
        "openrouter",
        "https://openrouter.ai/api/v1",
        "OPENROUTER_API_KEY",
    ),
    WireProvider::hosted("xai", "https://api.x.ai/v1", "XAI_API_KEY"),
    WireProvider::hosted("minimax", "https://api.minimax.io/v1", "MINIMAX_API_KEY"),
    // Phind documents no public API endpoint: the operator names the server.
    WireProvider {
        name: "phind",
        format: WireFormat::OpenAiChat,
        default_base_url: None,
        base_url_env: None,
        default_key_env: Some("PHIND_API_KEY"),
    },
    WireProvider::local("llama_cpp", "http://127.0.0.1:8080/v1"),
    WireProvider::local("ollama", "http://127.0.0.1:11434/v1"),
    WireProvider::local("vllm", "http://127.0.0.1:8000/v1"),
    WireProvider::local("lmstudio", "http://127.0.0.1:1234/v1"),
    WireProvider {
        name: "anthropic",
        format: WireFormat::Anthropic,
        default_base_url: Some("https://api.anthropic.com"),
        base_url_env: None,
        default_key_env: Some("ANTHROPIC_API_KEY"),
    },
];

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
    /// Base URLs a model config's `base_url` may point this provider at, with this
    /// server's key (see [`UrlPattern`] for exact and prefix patterns). Empty: a model
    /// config's `base_url` is refused, except loopback URLs for a provider without a key.
    pub allowed_base_urls: Vec<UrlPattern>,
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
            allowed_base_urls: Vec::new(),
        }
    }
}

/// Keys never appear in logs, not even through `{:?}` of the settings.
impl std::fmt::Debug for ProviderSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderSettings")
            .field(
                "base_url",
                &self.base_url.as_deref().map(crate::secrets::mask_url),
            )
            .field(
                "api_key",
                &self.api_key.as_ref().map(|_| super::error::REDACTED),
            )
            .field("api_key_env", &self.api_key_env)
            .field("request_timeout", &self.request_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("max_retries", &self.max_retries)
            .field("max_retry_delay", &self.max_retry_delay)
            .field("allowed_base_urls", &self.allowed_base_urls)
            .finish()
    }
}

/// Where a provider's key came from, for ListModels.
enum KeySource {
    Settings,
    Env(String),
    /// A local server: no key needed, none sent.
    NotNeeded,
}

/// One HTTP provider, its key and base URL resolved, its client built on first use.
struct WireSlot {
    spec: &'static WireProvider,
    settings: ProviderSettings,
    key: Result<(String, KeySource), String>,
    /// `None` when the provider has no public endpoint and the operator gave none.
    base_url: Option<String>,
    providers: ProviderCache,
}

/// One slot's provider instances, by base URL: the operator's (or the default) and the
/// model-config URLs the operator allowed.
#[derive(Default)]
struct ProviderCache(Mutex<HashMap<String, Arc<dyn ModelProvider>>>);

impl ProviderCache {
    /// The provider for `base_url`, built by `build` the first time. The slot's own URL
    /// (`own`) is always kept; model-config URLs while there is room.
    fn get_or_build(
        &self,
        base_url: &str,
        own: bool,
        build: impl FnOnce() -> Result<Arc<dyn ModelProvider>, ProviderError>,
    ) -> Result<Arc<dyn ModelProvider>, ProviderError> {
        let mut cached = crate::sync::lock(&self.0);
        if let Some(provider) = cached.get(base_url) {
            return Ok(provider.clone());
        }
        let provider = build()?;
        if own || cached.len() < MAX_CACHED_URLS {
            cached.insert(base_url.to_owned(), provider.clone());
        }
        Ok(provider)
    }
}

/// What the allowlist checks need to know about a provider's slot.
struct SlotFacts<'a> {
    settings: &'a ProviderSettings,
    /// The server holds no key for it (a local server).
    keyless: bool,
    /// The server holds a key for it.
    has_key: bool,
    /// Where it calls unless a model config says otherwise.
    base_url: Option<&'a str>,
}

/// An operator credential a model config picked: its name and settings.
type Credential<'a> = (&'a str, &'a CredentialSettings);

/// What a checked spec calls with: a model-config base URL the operator allows, and the
/// credential it picked.
struct Target<'a> {
    chosen: Option<String>,
    credential: Option<Credential<'a>>,
}

/// Every provider name a model spec may use, whatever the settings.
pub fn known_provider_names() -> Vec<&'static str> {
    WIRE_PROVIDERS
        .iter()
        .map(|p| p.name)
        .chain(GOOGLE_NAMES)
        .chain([REPLAY])
        .collect()
}

/// Resolves model specs to providers, caching what is expensive to build.
pub struct ProviderRegistry {
    wire: Vec<WireSlot>,
    google: Vec<GoogleSlot>,
    cassettes: CassetteCache,
    /// Registered by the program embedding the runtime.
    custom: CustomProviders,
    requirements: Requirements,
    /// Named operator credentials, by name; each has a key.
    credentials: HashMap<String, CredentialSettings>,
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
                let key = resolve_key(spec, &settings, &env);
                let base_url = settings
                    .base_url
                    .clone()
                    .or_else(|| spec.base_url_env.and_then(&env))
                    .map(|url| url.trim().to_owned())
                    .filter(|url| !url.is_empty())
                    .or_else(|| spec.default_base_url.map(str::to_owned));
                WireSlot {
                    spec,
                    settings,
                    key,
                    base_url,
                    providers: ProviderCache::default(),
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
            custom: CustomProviders::default(),
            requirements: Requirements::default(),
            credentials: HashMap::new(),
        }
    }

    /// The operator's named credentials, which model configs may pick by name. One without
    /// a key cannot be used and is left out (the server's configuration refuses it).
    pub fn with_credentials(mut self, credentials: HashMap<String, CredentialSettings>) -> Self {
        self.credentials = credentials
            .into_iter()
            .filter(|(name, credential)| {
                let usable = credential.key().is_some();
                if !usable {
                    tracing::warn!(credential = %name, "a credential without a key is ignored");
                }
                usable
            })
            .collect();
        self
    }

    /// Applies the operator's requirements to every spec validated or resolved from now
    /// on: providers outside `allowed_providers` and URLs outside `allowed_base_urls` are
    /// refused.
    pub fn with_requirements(mut self, requirements: Requirements) -> Self {
        self.requirements = requirements;
        self
    }

    /// Provider names a model spec may use.
    pub fn known_providers(&self) -> Vec<String> {
        known_provider_names()
            .into_iter()
            .chain(self.custom.names())
            .map(str::to_owned)
            .collect()
    }

    /// Checks what can be checked without a bundle or a network: the provider exists and
    /// is allowed, the model has a name, its config values have the right types and hold
    /// no credential, a config `base_url` is one the operator allows, and a config
    /// `credential` is one the operator defined for this provider and URL.
    pub fn validate(&self, spec: &ModelSpec) -> Result<(), ProviderError> {
        self.check(spec).map(drop)
    }

    /// [`ProviderRegistry::validate`], and the server can call the model now: it holds the
    /// provider's key (or the request picked a credential) and knows where to call. What
    /// sessions and turns are checked with, so a missing key is reported when a session is
    /// created (FAILED_PRECONDITION naming the variable), not at its first turn.
    pub fn check_usable(&self, spec: &ModelSpec) -> Result<(), ProviderError> {
        let target = self.check(spec)?;
        if spec.provider == REPLAY || self.custom.get(&spec.provider).is_some() {
            return Ok(());
        }
        let (key, name) = match self.google_slot(spec) {
            Some(slot) => (&slot.key, slot.name),
            None => {
                let slot = self.wire_slot(spec)?;
                if target.chosen.is_none() && slot.base_url.is_none() {
                    return Err(slot.missing_base_url());
                }
                (&slot.key, slot.spec.name)
            }
        };
        if target.credential.is_none()
            && let Err(env_var) = key
        {
            return Err(ProviderError::NotConfigured {
                provider: name.to_owned(),
                env_var: env_var.clone(),
            });
        }
        Ok(())
    }

    /// [`ProviderRegistry::validate`], returning what the call goes out with.
    fn check(&self, spec: &ModelSpec) -> Result<Target<'_>, ProviderError> {
        if spec.name.trim().is_empty() {
            return Err(ProviderError::invalid_model(
                spec.to_string(),
                "the model name is empty",
            ));
        }
        if spec.name.len() > MAX_MODEL_NAME_BYTES {
            return Err(ProviderError::invalid_model(
                spec.to_string(),
                format!("the model name is longer than {MAX_MODEL_NAME_BYTES} bytes"),
            ));
        }
        let config_bytes = spec
            .config
            .as_ref()
            .map_or(0, |c| serde_json::to_vec(c).map_or(usize::MAX, |b| b.len()));
        if config_bytes > MAX_MODEL_CONFIG_BYTES {
            return Err(ProviderError::invalid_model(
                spec.to_string(),
                format!("the model config is larger than {MAX_MODEL_CONFIG_BYTES} bytes as JSON"),
            ));
        }
        if let Some(config) = &spec.config {
            check_config_shape(spec, config)?;
        }
        super::context_window::validate(spec)?;
        let credential = self.credential(spec)?;
        let is_custom = self.custom.get(&spec.provider).is_some();
        if spec.provider == REPLAY || is_custom {
            if credential.is_some() {
                return Err(ProviderError::invalid_model(
                    spec.to_string(),
                    "config `credential` applies to providers called over HTTP with a key",
                ));
            }
            if !is_custom {
                cassette_path(spec)?;
            }
            self.authorize_provider(spec)?;
            return Ok(Target {
                chosen: None,
                credential: None,
            });
        }
        let facts = match self.google_slot(spec) {
            Some(slot) => slot.facts(),
            None => self.wire_slot(spec)?.facts(),
        };
        openai::validate_config(spec)?;
        self.authorize_provider(spec)?;
        let chosen = self.authorize_base_url(spec, &facts, credential)?;
        Ok(Target { chosen, credential })
    }

    /// The operator credential `config.credential` names, if any: it must exist and be for
    /// this provider.
    fn credential(&self, spec: &ModelSpec) -> Result<Option<Credential<'_>>, ProviderError> {
        let name = match spec.config_value(CREDENTIAL_KEY) {
            None | Some(serde_json::Value::Null) => return Ok(None),
            Some(serde_json::Value::String(name)) => name,
            Some(_) => {
                return Err(ProviderError::invalid_model(
                    spec.to_string(),
                    "config `credential` must be a string naming one of the server's credentials",
                ));
            }
        };
        let (name, credential) =
            self.credentials
                .get_key_value(name.as_str())
                .ok_or_else(|| ProviderError::UnknownCredential {
                    name: crate::error::shorten(name),
                })?;
        if credential.provider != spec.provider {
            return Err(ProviderError::CredentialNotAllowed {
                credential: name.clone(),
                provider: spec.provider.clone(),
                allowed: credential.provider.clone(),
            });
        }
        Ok(Some((name.as_str(), credential)))
    }

    fn authorize_provider(&self, spec: &ModelSpec) -> Result<(), ProviderError> {
        if self.requirements.allows_provider(&spec.provider) {
            return Ok(());
        }
        Err(ProviderError::ProviderNotAllowed {
            provider: spec.provider.clone(),
            allowed: self
                .requirements
                .allowed_providers
                .clone()
                .unwrap_or_default(),
            setting: requirements::ALLOWED_PROVIDERS,
        })
    }

    /// A model config's `base_url` must be allowed for the provider (or, for a provider
    /// without a key, be on this machine); with a credential, whichever URL the call goes
    /// to must be one the credential allows; and that URL must be within the requirements.
    /// Returns the config's URL.
    fn authorize_base_url(
        &self,
        spec: &ModelSpec,
        facts: &SlotFacts<'_>,
        credential: Option<Credential<'_>>,
    ) -> Result<Option<String>, ProviderError> {
        let chosen = match spec.config_value("base_url") {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::String(url)) => Some(url.trim().to_owned()),
            Some(_) => {
                return Err(ProviderError::invalid_model(
                    spec.to_string(),
                    "config `base_url` must be a string",
                ));
            }
        };
        let refuse = |url: &str, why: String, setting: String| ProviderError::BaseUrlNotAllowed {
            provider: spec.provider.clone(),
            base_url: url.to_owned(),
            why,
            setting,
        };
        let chosen_url = match &chosen {
            Some(text) => Some(reqwest::Url::parse(text).map_err(|e| {
                ProviderError::invalid_model(
                    spec.to_string(),
                    format!("config `base_url` `{text}` is not a URL: {e}"),
                )
            })?),
            None => None,
        };
        match (credential, &chosen, &chosen_url) {
            (Some((name, credential)), _, _) => {
                let target = chosen.as_deref().or(facts.base_url);
                // A malformed operator URL is reported as such when the provider is built.
                if let Some(text) = target
                    && let Ok(url) = reqwest::Url::parse(text)
                {
                    let allowed = if credential.allowed_base_urls.is_empty() {
                        chosen.is_none() || chosen.as_deref() == facts.base_url
                    } else {
                        credential.allowed_base_urls.iter().any(|p| p.matches(&url))
                    };
                    if !allowed {
                        let why = if credential.allowed_base_urls.is_empty() {
                            format!(
                                "credential `{name}` may only be sent to the provider's own base URL"
                            )
                        } else {
                            format!("credential `{name}` is not allowed for this URL")
                        };
                        let setting = format!("credentials.{name}.allowed_base_urls");
                        return Err(refuse(text, why, setting));
                    }
                }
            }
            (None, Some(text), Some(url)) => {
                let listed = facts
                    .settings
                    .allowed_base_urls
                    .iter()
                    .any(|p| p.matches(url));
                // The URL this provider calls anyway (the operator's `base_url`, or the
                // provider's own endpoint) is allowed by definition: the key goes there
                // already.
                let own = facts
                    .base_url
                    .filter(|own| !own.trim_end().ends_with("/*"))
                    .and_then(|own| own.parse::<UrlPattern>().ok())
                    .is_some_and(|own| own.matches(url));
                let local = facts.keyless && is_loopback(url);
                if !(listed || own || local) {
                    let why = if facts.keyless {
                        "the model config's base_url is neither on this machine nor allowed by the operator"
                    } else if facts.has_key {
                        "the server holds this provider's key and the operator has not allowed this URL for it"
                    } else {
                        "the operator has not allowed this URL for this provider"
                    };
                    let setting = format!("providers.{}.allowed_base_urls", spec.provider);
                    return Err(refuse(text, why.to_owned(), setting));
                }
            }
            _ => {}
        }
        if self.requirements.allowed_base_urls.is_some() {
            let target = chosen.as_deref().or(facts.base_url);
            // A malformed operator URL is reported as such when the provider is built.
            if let Some(text) = target
                && let Ok(url) = reqwest::Url::parse(text)
                && !self.requirements.allows_base_url(&url)
            {
                let why = "the operator's requirements do not allow this URL".to_owned();
                return Err(refuse(text, why, requirements::ALLOWED_BASE_URLS.into()));
            }
        }
        Ok(chosen)
    }

    /// The provider serving `spec`. Cheap enough to call per turn: clients and parsed
    /// cassettes are cached. `bundle_root` locates replay cassettes.
    pub fn resolve(
        &self,
        spec: &ModelSpec,
        bundle_root: &Path,
    ) -> Result<Arc<dyn ModelProvider>, ProviderError> {
        let target = self.check(spec)?;
        if let Some(provider) = self.custom.get(&spec.provider) {
            return Ok(provider.clone());
        }
        if spec.provider == REPLAY {
            let cassette = self.cassettes.get(bundle_root, &cassette_path(spec)?)?;
            return Ok(Arc::new(ReplayProvider::new(cassette)));
        }
        let chosen = target.chosen.as_deref();
        if let Some(slot) = self.google_slot(spec) {
            return slot.provider(chosen, target.credential);
        }
        self.wire_slot(spec)?.provider(chosen, target.credential)
    }

    /// Whether `spec` can be used right now and why, for ListModels. Never contains a key.
    pub fn availability(&self, spec: &ModelSpec, bundle_root: &Path) -> (bool, String) {
        let (chosen, credential) = match self.check(spec) {
            Ok(target) => (target.chosen, target.credential),
            Err(e) => return (false, e.to_string()),
        };
        if self.custom.get(&spec.provider).is_some() {
            return (
                true,
                "registered by the program embedding the runtime".into(),
            );
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
        let (key, base_url) = match self.google_slot(spec) {
            Some(slot) => (&slot.key, slot.base_url()),
            None => {
                let slot = match self.wire_slot(spec) {
                    Ok(slot) => slot,
                    Err(e) => return (false, e.to_string()),
                };
                let Some(base_url) = chosen.as_deref().or(slot.base_url.as_deref()) else {
                    return (false, slot.missing_base_url().to_string());
                };
                (&slot.key, base_url)
            }
        };
        let base_url = chosen.as_deref().unwrap_or(base_url);
        if let Some((name, _)) = credential {
            return (true, format!("key from credential {name}"));
        }
        match key {
            Ok((_, KeySource::Env(var))) => (true, format!("key from {var}")),
            Ok((_, KeySource::Settings)) => (true, "key from server settings".into()),
            Ok((_, KeySource::NotNeeded)) => (true, format!("no key needed; calls {base_url}")),
            Err(var) => (false, format!("missing {var}")),
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

/// The key from the settings, else from the environment; `Err` names the variable that
/// should hold it. Local servers run without one.
fn resolve_key(
    spec: &WireProvider,
    settings: &ProviderSettings,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<(String, KeySource), String> {
    if let Some(key) = settings.api_key.clone().filter(|k| !k.is_empty()) {
        return Ok((key, KeySource::Settings));
    }
    let env_var = settings
        .api_key_env
        .clone()
        .or_else(|| spec.default_key_env.map(str::to_owned));
    let Some(env_var) = env_var else {
        return Ok((String::new(), KeySource::NotNeeded));
    };
    match env(&env_var).filter(|k| !k.trim().is_empty()) {
        Some(key) => Ok((key.trim().to_owned(), KeySource::Env(env_var))),
        // An operator-named variable on a local server is optional, like the key itself.
        None if spec.default_key_env.is_none() => Ok((String::new(), KeySource::NotNeeded)),
        None => Err(env_var),
    }
}

impl WireSlot {
    fn facts(&self) -> SlotFacts<'_> {
        SlotFacts {
            settings: &self.settings,
            keyless: matches!(self.key, Ok((_, KeySource::NotNeeded))),
            has_key: matches!(self.key, Ok((_, KeySource::Settings | KeySource::Env(_)))),
            base_url: self.base_url.as_deref(),
        }
    }

    /// The shared provider instance for `chosen` (an allowed model-config URL) or the
    /// slot's own base URL, with the picked credential's key or the slot's, built (with
    /// its HTTP client) on first use.
    fn provider(
        &self,
        chosen: Option<&str>,
        credential: Option<Credential<'_>>,
    ) -> Result<Arc<dyn ModelProvider>, ProviderError> {
        let key = slot_key(self.spec.name, &self.key, credential)?;
        let base_url = match chosen {
            Some(url) => url.to_owned(),
            None => self
                .base_url
                .clone()
                .ok_or_else(|| self.missing_base_url())?,
        };
        let cached_as = cache_key(&base_url, credential);
        self.providers
            .get_or_build(&cached_as, chosen.is_none(), || self.build(key, &base_url))
    }

    fn build(&self, key: &str, base_url: &str) -> Result<Arc<dyn ModelProvider>, ProviderError> {
        // A typo in the operator's URL is a setup problem, not a provider outage.
        if let Err(e) = reqwest::Url::parse(base_url) {
            return Err(ProviderError::Setup {
                provider: self.spec.name.to_owned(),
                message: format!("base_url `{base_url}` is not a URL: {e}"),
            });
        }
        let base_url = base_url.to_owned();
        let settings = &self.settings;
        let config = OpenAiConfig {
            name: self.spec.name.to_owned(),
            base_url,
            api_key: key.to_owned(),
            client: http_client(self.spec.name, settings.request_timeout)?,
            request_timeout: settings.request_timeout,
            idle_timeout: settings.idle_timeout,
            retry: RetryPolicy {
                max_retries: settings.max_retries,
                max_delay: settings.max_retry_delay,
            },
            auth: WireAuth::Bearer,
            endpoint: Endpoint::ChatCompletions,
        };
        let provider: Arc<dyn ModelProvider> = match self.spec.format {
            WireFormat::OpenAiChat => Arc::new(OpenAiProvider::new(config)),
            WireFormat::AzureOpenAi => Arc::new(OpenAiProvider::new(OpenAiConfig {
                auth: WireAuth::ApiKeyHeader,
                endpoint: Endpoint::AzureDeployment,
                ..config
            })),
            WireFormat::Anthropic => Arc::new(AnthropicProvider::new(config)),
        };
        Ok(provider)
    }

    fn missing_base_url(&self) -> ProviderError {
        let env = self
            .spec
            .base_url_env
            .map(|var| format!(" or {var} in the server's environment"))
            .unwrap_or_default();
        ProviderError::NoBaseUrl {
            provider: self.spec.name.to_owned(),
            hint: format!("set `base_url` in the server's provider settings{env}"),
        }
    }
}

/// The key a call goes out with: the picked credential's, else the slot's own.
fn slot_key<'a>(
    provider: &str,
    own: &'a Result<(String, KeySource), String>,
    credential: Option<Credential<'a>>,
) -> Result<&'a str, ProviderError> {
    match credential {
        Some((_, credential)) => Ok(credential.key().unwrap_or_default()),
        None => own
            .as_ref()
            .map(|(key, _)| key.as_str())
            .map_err(|env_var| ProviderError::NotConfigured {
                provider: provider.to_owned(),
                env_var: env_var.clone(),
            }),
    }
}

/// Providers are cached by base URL and, when one was picked, credential.
fn cache_key(base_url: &str, credential: Option<Credential<'_>>) -> String {
    match credential {
        Some((name, _)) => format!("{base_url} credential:{name}"),
        None => base_url.to_owned(),
    }
}

/// A model config's shape: no credential in it, not nested too deep.
fn check_config_shape(
    spec: &ModelSpec,
    config: &serde_json::Map<String, serde_json::Value>,
) -> Result<(), ProviderError> {
    if let Some(found) = secrets::find_secret(config) {
        return Err(ProviderError::SecretInConfig {
            model: crate::error::shorten(&spec.to_string()),
            why: found.why(),
            field: found.path,
        });
    }
    fn depth(value: &serde_json::Value) -> usize {
        match value {
            serde_json::Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
            serde_json::Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
            _ => 0,
        }
    }
    if 1 + config.values().map(depth).max().unwrap_or(0) > MAX_MODEL_CONFIG_DEPTH {
        return Err(ProviderError::invalid_model(
            spec.to_string(),
            format!("the model config nests deeper than {MAX_MODEL_CONFIG_DEPTH} levels"),
        ));
    }
    Ok(())
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
            message: crate::error::chain(&e),
        })
}

/// reqwest is built without a TLS crypto provider so the whole process agrees on one;
/// ring is installed unless the embedding program installed its own first.
pub(crate) fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // An error means a provider is already installed, which is just as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

mod custom;
mod google;
mod reachability;
#[cfg(test)]
mod tests;
