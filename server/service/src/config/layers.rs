//! The environment and flag layers, and the merge of all layers into one value per key
//! with its source. Later layers replace earlier values (a list is replaced whole, never
//! appended to, except by `--allow-base-url`, which adds to a provider's
//! `allowed_base_urls`); requirements may only be set by the files allowed to hold them, and
//! only narrowed by a later one.

use std::collections::BTreeMap;

use super::Entry;
use super::ServeArgs;
use super::error::ConfigError;
use super::files::Leaf;
use super::requirements::REQUIREMENT_LAYERS;
use super::schema::{Key, Schema};
use super::setting::env_var_of;
use super::source::{Layer, Source};

/// The flag (and, through [`env_var_of`], the variable) that sets providers' base URLs.
const PROVIDER_BASE_URL_FLAG: &str = "--provider-base-url";
/// The flag (and variable) that adds to a provider's `allowed_base_urls`.
const ALLOW_BASE_URL_FLAG: &str = "--allow-base-url";

/// Values from `ODYSSEY_*` variables. An empty variable counts as unset.
pub fn env_leaves(
    schema: &Schema,
    env: &BTreeMap<String, String>,
) -> Result<Vec<Leaf>, ConfigError> {
    let mut leaves = Vec::new();
    for setting in &schema.server {
        let Some(var) = setting.env_var() else {
            continue;
        };
        let Some(text) = env.get(&var).filter(|t| !t.is_empty()) else {
            continue;
        };
        let Some(parsed) = setting.parse_env(text) else {
            continue;
        };
        let at = Source::Env(var);
        let value = parsed.map_err(|message| ConfigError::Value {
            at: at.clone(),
            key: setting.key.to_owned(),
            message,
        })?;
        leaves.push(leaf(setting.key.to_owned(), value, at));
    }
    for (flag, field) in [
        (PROVIDER_BASE_URL_FLAG, ProviderUrl::BaseUrl),
        (ALLOW_BASE_URL_FLAG, ProviderUrl::Allowed),
    ] {
        let var = env_var_of(flag);
        if let Some(text) = env.get(&var).filter(|t| !t.is_empty()) {
            for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
                leaves.push(provider_url(
                    schema,
                    field,
                    entry,
                    Source::Env(var.clone()),
                )?);
            }
        }
    }
    Ok(leaves)
}

/// Values of the flags actually given.
pub fn flag_leaves(schema: &Schema, args: &ServeArgs) -> Result<Vec<Leaf>, ConfigError> {
    let mut leaves: Vec<Leaf> = schema
        .server
        .iter()
        .filter_map(|setting| {
            let value = setting.flag_value(args)?;
            Some(leaf(
                setting.key.to_owned(),
                value,
                Source::Flag(setting.flag?),
            ))
        })
        .collect();
    for entry in &args.provider_base_urls {
        leaves.push(provider_url(
            schema,
            ProviderUrl::BaseUrl,
            entry,
            Source::Flag(PROVIDER_BASE_URL_FLAG),
        )?);
    }
    for entry in &args.allow_base_urls {
        leaves.push(provider_url(
            schema,
            ProviderUrl::Allowed,
            entry,
            Source::Flag(ALLOW_BASE_URL_FLAG),
        )?);
    }
    Ok(leaves)
}

/// Which provider key a `NAME=URL` flag sets.
#[derive(Clone, Copy)]
enum ProviderUrl {
    /// `providers.NAME.base_url`.
    BaseUrl,
    /// One more pattern of `providers.NAME.allowed_base_urls`.
    Allowed,
}

/// `NAME=URL` as `providers.NAME.base_url`, or as a one-pattern `allowed_base_urls` that
/// [`merge`] adds to the earlier layers' list.
fn provider_url(
    schema: &Schema,
    field: ProviderUrl,
    entry: &str,
    at: Source,
) -> Result<Leaf, ConfigError> {
    let field_name = match field {
        ProviderUrl::BaseUrl => "base_url",
        ProviderUrl::Allowed => "allowed_base_urls",
    };
    let (name, url) = entry
        .split_once('=')
        .map(|(n, u)| (n.trim(), u.trim()))
        .filter(|(n, u)| !n.is_empty() && !u.is_empty())
        .ok_or_else(|| ConfigError::Value {
            at: at.clone(),
            key: format!("providers.<name>.{field_name}"),
            message: format!("`{entry}` is not NAME=URL"),
        })?;
    let key = format!("providers.{name}.{field_name}");
    if !schema.is_leaf(&key) {
        return Err(ConfigError::UnknownKey {
            hint: schema.hint(super::schema::PROVIDERS),
            at,
            key,
        });
    }
    let value = match field {
        ProviderUrl::BaseUrl => toml::Value::from(url),
        ProviderUrl::Allowed => toml::Value::Array(vec![toml::Value::from(url)]),
    };
    Ok(leaf(key, value, at))
}

/// Whether a leaf adds to the list before it rather than replacing it: only
/// `--allow-base-url` (and its variable) does, so an operator can allow one more URL
/// without restating a configuration file's list.
fn extends(source: &Source) -> bool {
    match source {
        Source::Flag(flag) => *flag == ALLOW_BASE_URL_FLAG,
        Source::Env(var) => *var == env_var_of(ALLOW_BASE_URL_FLAG),
        _ => false,
    }
}

fn leaf(key: String, value: toml::Value, source: Source) -> Leaf {
    Leaf {
        key,
        value,
        source,
        element_lines: Vec::new(),
    }
}

/// Checks every value of a layer on its own, so a bad value is reported with its own
/// source even when a later layer replaces it.
pub fn validate(schema: &Schema, leaves: &[Leaf]) -> Result<(), ConfigError> {
    let mut scratch = super::settings::Draft::defaults(Default::default());
    for leaf in leaves {
        if let Err(e) = schema.write(&mut scratch, &leaf.key, leaf.value.clone()) {
            let mut at = leaf.source.clone();
            if let (Some(index), Source::File { line, .. }) = (e.index, &mut at)
                && let Some(element_line) = leaf.element_lines.get(index)
            {
                *line = *element_line;
            }
            let key = match e.index {
                Some(index) => format!("{}[{index}]", leaf.key),
                None => leaf.key.clone(),
            };
            // serde's messages quote the value, which must not be echoed for a secret.
            let message = if schema.is_secret(&leaf.key) {
                "must be a string (the value is a secret, so it is not shown)".to_owned()
            } else {
                e.message
            };
            return Err(ConfigError::Value { at, key, message });
        }
    }
    Ok(())
}

/// Merges layers, lowest first, enforcing where requirements and the home may be set.
pub fn merge(
    schema: &Schema,
    layers: Vec<Vec<Leaf>>,
) -> Result<BTreeMap<String, Entry>, ConfigError> {
    let mut entries: BTreeMap<String, Entry> = BTreeMap::new();
    for leaf in layers.into_iter().flatten() {
        let layer = leaf.source.layer();
        let narrowing = match schema.lookup(&leaf.key) {
            Some(Key::Server(setting)) => setting.narrowing,
            _ => None,
        };
        if narrowing.is_some() && !REQUIREMENT_LAYERS.contains(&layer) {
            return Err(ConfigError::Misplaced {
                at: leaf.source,
                key: leaf.key,
                why:
                    "requirements may only be set in /etc/odyssey/config.toml or the --config file"
                        .into(),
            });
        }
        if leaf.key == "server.home" && layer == Layer::HomeFile {
            return Err(ConfigError::Misplaced {
                at: leaf.source,
                key: leaf.key,
                why: "the home's own config.toml cannot move the home; set it in \
                      /etc/odyssey/config.toml, the --config file, ODYSSEY_HOME or --home"
                    .into(),
            });
        }
        if let (Some(narrowing), Some(earlier)) = (narrowing, entries.get(&leaf.key)) {
            narrowing(&earlier.value, &leaf.value).map_err(|message| ConfigError::Loosened {
                at: leaf.source.clone(),
                key: leaf.key.clone(),
                earlier: Box::new(earlier.source.clone()),
                message,
            })?;
        }
        let secret = schema.is_secret(&leaf.key);
        let earlier = entries
            .get(&leaf.key)
            .filter(|_| extends(&leaf.source))
            .map(|earlier| &earlier.value);
        let value = match (earlier, leaf.value) {
            (Some(toml::Value::Array(before)), toml::Value::Array(added)) => {
                toml::Value::Array(before.iter().cloned().chain(added).collect())
            }
            (_, value) => value,
        };
        entries.insert(
            leaf.key,
            Entry {
                value,
                source: leaf.source,
                secret,
            },
        );
    }
    Ok(entries)
}
