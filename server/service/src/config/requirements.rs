//! The `[requirements]` section: operator caps that later layers and clients cannot
//! exceed.
//!
//! Only `/etc/odyssey/config.toml` and the `--config` file may set requirements: both are
//! chosen by whoever starts the server, while `<home>/config.toml` lives in a folder the
//! server itself writes to, and the environment and flags are per-invocation. When both
//! files set the same requirement, the `--config` file may only narrow it. After layering,
//! every other setting must fit within the requirements (no `allow_danger_full_access`
//! under a `workspace_write` cap, no provider URL outside `allowed_base_urls`, ...); the
//! runtime then holds every client request to them.

use std::collections::BTreeMap;

use toml::Value;

use super::error::ConfigError;
use super::source::{Layer, Source};
use super::{Entry, ServerConfig};
use odyssey_runtime::provider::UrlPattern;
use odyssey_runtime::{SandboxMode, requirements as names};

/// The layers whose files may set requirements.
pub const REQUIREMENT_LAYERS: [Layer; 2] = [Layer::SystemFile, Layer::ConfigFile];

fn mode(value: &Value) -> Result<SandboxMode, String> {
    value
        .as_str()
        .and_then(SandboxMode::parse)
        .ok_or_else(|| format!("`{value}` is not a sandbox mode"))
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn url_patterns(value: &Value) -> Result<Vec<UrlPattern>, String> {
    strings(value).iter().map(|text| text.parse()).collect()
}

/// A later `max_sandbox_mode` may be stricter, never more permissive.
pub fn narrow_mode(earlier: &Value, later: &Value) -> Result<(), String> {
    let (earlier, later) = (mode(earlier)?, mode(later)?);
    if later > earlier {
        return Err(format!("{later} is more permissive than {earlier}"));
    }
    Ok(())
}

/// A later `allowed_providers` may drop providers, never add one.
pub fn narrow_providers(earlier: &Value, later: &Value) -> Result<(), String> {
    let allowed = strings(earlier);
    match strings(later).into_iter().find(|p| !allowed.contains(p)) {
        Some(extra) => Err(format!(
            "`{extra}` is not among the allowed providers ({})",
            allowed.join(", ")
        )),
        None => Ok(()),
    }
}

/// Every later `allowed_base_urls` pattern must lie within an earlier one.
pub fn narrow_urls(earlier: &Value, later: &Value) -> Result<(), String> {
    let allowed = url_patterns(earlier)?;
    for pattern in url_patterns(later)? {
        if !allowed.iter().any(|wide| pattern.within(wide)) {
            return Err(format!(
                "`{pattern}` is not within the allowed base URLs ({})",
                allowed
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    Ok(())
}

/// Refuses settings that ask for more than the requirements allow, naming both.
pub fn check_within(
    config: &ServerConfig,
    entries: &BTreeMap<String, Entry>,
) -> Result<(), ConfigError> {
    let requirements = &config.runtime.requirements;
    let source = |key: &str| {
        entries
            .get(key)
            .map(|e| e.source.clone())
            .unwrap_or(Source::Default)
    };
    let exceeds = |key: &str, message: String, requirement: &str| ConfigError::ExceedsRequirement {
        at: source(key),
        key: key.to_owned(),
        message,
        requirement: requirement.to_owned(),
        requirement_at: Box::new(source(requirement)),
    };

    if let Some(max) = requirements.max_sandbox_mode {
        if let Some(forced) = config.runtime.sandbox_mode_override
            && forced > max
        {
            let message = format!("forces sandbox mode {forced}, above {max}");
            return Err(exceeds(
                "sandbox.force_mode",
                message,
                names::MAX_SANDBOX_MODE,
            ));
        }
        if config.runtime.allow_danger_full_access && max < SandboxMode::DangerFullAccess {
            let message = format!("allows danger_full_access, above {max}");
            return Err(exceeds(
                "sandbox.allow_danger_full_access",
                message,
                names::MAX_SANDBOX_MODE,
            ));
        }
    }

    if requirements.allowed_providers.is_some() {
        for rule in &config.runtime.model_overrides {
            if !requirements.allows_provider(&rule.model.provider) {
                let message = format!(
                    "uses provider `{}`, which is not allowed",
                    rule.model.provider
                );
                return Err(exceeds(
                    "models.override",
                    message,
                    names::ALLOWED_PROVIDERS,
                ));
            }
        }
    }

    if let Some(allowed) = &requirements.allowed_base_urls {
        let mut names: Vec<&String> = config.runtime.providers.keys().collect();
        names.sort();
        for name in names {
            let settings = &config.runtime.providers[name];
            if let Some(base_url) = &settings.base_url
                && let Ok(url) = reqwest::Url::parse(base_url)
                && !requirements.allows_base_url(&url)
            {
                let key = format!("providers.{name}.base_url");
                let message = format!("points at {base_url}, which is not allowed");
                return Err(exceeds(&key, message, names::ALLOWED_BASE_URLS));
            }
            if let Some(pattern) = settings
                .allowed_base_urls
                .iter()
                .find(|p| !allowed.iter().any(|wide| p.within(wide)))
            {
                let key = format!("providers.{name}.allowed_base_urls");
                let message = format!("allows {pattern}, which is outside the requirement");
                return Err(exceeds(&key, message, names::ALLOWED_BASE_URLS));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Value {
        Value::Array(items.iter().map(|s| Value::from(*s)).collect())
    }

    #[test]
    fn modes_only_narrow() {
        let ww = Value::from("workspace_write");
        assert!(narrow_mode(&ww, &Value::from("read_only")).is_ok());
        assert!(narrow_mode(&ww, &ww).is_ok());
        let e = narrow_mode(&ww, &Value::from("danger_full_access")).unwrap_err();
        assert!(e.contains("more permissive"), "{e}");
    }

    #[test]
    fn provider_lists_only_shrink() {
        let earlier = list(&["openai", "replay"]);
        assert!(narrow_providers(&earlier, &list(&["replay"])).is_ok());
        let e = narrow_providers(&earlier, &list(&["replay", "anthropic"])).unwrap_err();
        assert!(e.contains("`anthropic`"), "{e}");
    }

    #[test]
    fn url_lists_only_shrink() {
        let earlier = list(&["https://proxy.example.com/*"]);
        assert!(narrow_urls(&earlier, &list(&["https://proxy.example.com/openai/v1"])).is_ok());
        let e = narrow_urls(&earlier, &list(&["https://api.openai.com/v1"])).unwrap_err();
        assert!(e.contains("api.openai.com"), "{e}");
    }
}
