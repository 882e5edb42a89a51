//! The server's configuration, in layers (a later layer wins):
//!
//! 1. built-in defaults,
//! 2. `/etc/odyssey/config.toml` (optional),
//! 3. `<home>/config.toml` (optional; it cannot move the home itself),
//! 4. the `--config FILE` (must exist when given),
//! 5. `ODYSSEY_*` environment variables (`ODYSSEY_` + a flag's name: `ODYSSEY_WORKER_COUNT`),
//! 6. command-line flags, when given.
//!
//! Each file is TOML with the sections `[server]`, `[turns]`, `[sandbox]`, `[approvals]`,
//! `[metrics]`, `[database]`, `[[hooks.event]]`, `[providers.<name>]`, `[requirements]` and
//! `[[models.override]]`; `settings.rs` lists every key. Unknown keys and bad values are
//! errors naming the file, line and key.
//! Every value remembers where it came from, for `odyssey config show --sources`, and
//! secrets (the auth token, provider keys) are masked in every output.

mod api;
mod database;
mod error;
mod event_hooks;
mod files;
mod flags;
mod layers;
mod names;
mod requirements;
mod schema;
mod secret;
mod setting;
mod settings;
mod show;
mod source;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use api::ApiSettings;
pub use database::{
    DatabaseSettings, PASSWORD_VARIABLE, check_replica_id, check_url, shared_store_snapshots,
};
pub use error::ConfigError;
pub use flags::{LogFormat, SandboxModeArg, ServeArgs};
pub use names::{parse_allowed_host, parse_origin};
pub use secret::{MASK, Secret};
pub use show::{to_json, to_toml};
pub use source::{Layer, Source};

use self::files::Leaf;
use self::schema::Schema;
use self::settings::Draft;
use odyssey_runtime::RuntimeConfig;

/// Where operators put the machine-wide configuration.
pub const SYSTEM_FILE: &str = "/etc/odyssey/config.toml";
/// The configuration file inside the home folder.
pub const HOME_FILE: &str = "config.toml";
/// Where `odysseyd` listens unless told otherwise.
pub const DEFAULT_LISTEN: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 8472);

/// Everything `odysseyd` runs with.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub runtime: RuntimeConfig,
    /// The API's settings, whichever listener serves it.
    pub grpc: ApiSettings,
    pub listen: SocketAddr,
    /// Allow a non-loopback address without an auth token.
    pub insecure: bool,
    pub log_format: LogFormat,
    /// How long running turns may take to finish on shutdown.
    pub shutdown_grace: Duration,
    /// Serve TLS with this certificate chain and key (PEM files).
    pub tls: Option<TlsFiles>,
    /// Also serve the HTTP gateway (server-sent events, approvals) here.
    pub http_listen: Option<SocketAddr>,
    /// Serve the web console (and gRPC-Web for it) on the HTTP gateway's address.
    pub console: bool,
    /// Serve Prometheus metrics (`GET /metrics`) here.
    pub metrics_listen: Option<SocketAddr>,
    /// A bearer token that reads metrics only, accepted beside the API token.
    pub metrics_auth_token: Option<Secret>,
    /// The PostgreSQL database (`[database]`) the server serves from when its URL is set,
    /// and this server's replica id there.
    pub database: DatabaseSettings,
}

impl ServerConfig {
    /// Built-in defaults around a runtime configuration.
    pub fn defaults(runtime: RuntimeConfig) -> Self {
        Self {
            runtime,
            grpc: ApiSettings::default(),
            listen: DEFAULT_LISTEN,
            insecure: false,
            log_format: LogFormat::Text,
            shutdown_grace: Duration::from_secs(10),
            tls: None,
            http_listen: None,
            console: false,
            metrics_listen: None,
            metrics_auth_token: None,
            database: DatabaseSettings::default(),
        }
    }
}

/// The certificate chain and private key of the gRPC port, as PEM files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// What, besides the flags, the configuration is read from.
#[derive(Clone, Debug, Default)]
pub struct Sources {
    /// The machine-wide file; `None` skips it.
    pub system_file: Option<PathBuf>,
    /// Whether `<home>/config.toml` is read.
    pub home_file: bool,
    /// The environment: `ODYSSEY_*` variables, and `HOME` for the default home.
    pub env: BTreeMap<String, String>,
}

impl Sources {
    /// What `odysseyd` reads: the system file, the home file and this process's
    /// environment.
    pub fn process() -> Self {
        let env = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .filter(|(k, _)| k.starts_with("ODYSSEY_") || k == "HOME")
            .collect();
        Self {
            system_file: Some(PathBuf::from(SYSTEM_FILE)),
            home_file: true,
            env,
        }
    }

    /// Flags (and a `--config` file, when one is named) over the defaults, nothing else:
    /// for servers started by programs and tests, which must not depend on the machine's
    /// configuration. The default home still follows `$HOME`.
    pub fn flags_only() -> Self {
        let env = std::env::var("HOME")
            .ok()
            .map(|home| ("HOME".to_owned(), home))
            .into_iter()
            .collect();
        Self {
            env,
            ..Self::default()
        }
    }
}

/// One effective value and where it came from.
#[derive(Clone, PartialEq)]
pub struct Entry {
    pub value: toml::Value,
    pub source: Source,
    /// Masked in every output.
    pub secret: bool,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let value = if self.secret {
            toml::Value::from(MASK)
        } else {
            show::masked(&self.value)
        };
        f.debug_struct("Entry")
            .field("value", &value)
            .field("source", &self.source)
            .finish()
    }
}

/// A configuration after layering.
pub struct Loaded {
    pub config: ServerConfig,
    /// Every set key (`server.listen`, `providers.openai.base_url`), with its source.
    pub entries: BTreeMap<String, Entry>,
    /// The files that were read, in layer order.
    pub files: Vec<PathBuf>,
    /// Things the operator should know (a secret in a file others can read).
    pub warnings: Vec<String>,
}

/// Layers the configuration for a server started with `args`.
pub fn load(args: &ServeArgs, sources: &Sources) -> Result<Loaded, ConfigError> {
    let schema = Schema::new();
    let default_home = sources
        .env
        .get("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
        .join(".odyssey");
    let defaults = Draft::defaults(default_home.clone());
    let default_leaves: Vec<Leaf> = schema
        .server
        .iter()
        .filter_map(|setting| {
            Some(Leaf {
                key: setting.key.to_owned(),
                value: setting.read(&defaults)?,
                source: Source::Default,
                element_lines: Vec::new(),
            })
        })
        .collect();

    // Each file read, by layer, so they are listed in layer order.
    let mut read_files: BTreeMap<Layer, PathBuf> = BTreeMap::new();
    let mut read = |path: &Path, layer, required| -> Result<Vec<Leaf>, ConfigError> {
        let leaves = files::read(path, layer, required, &schema)?;
        if leaves.is_some() {
            read_files.insert(layer, path.to_owned());
        }
        Ok(leaves.unwrap_or_default())
    };
    let system = match &sources.system_file {
        Some(path) => read(path, Layer::SystemFile, false)?,
        None => Vec::new(),
    };
    let config_file = match &args.config {
        Some(path) => read(path, Layer::ConfigFile, true)?,
        None => Vec::new(),
    };
    let env = layers::env_leaves(&schema, &sources.env)?;
    let flags = layers::flag_leaves(&schema, args)?;
    // The home decides where the home file is, so it comes from the other layers.
    let home = [&flags, &env, &config_file, &system]
        .iter()
        .find_map(|layer| layer.iter().rev().find(|leaf| leaf.key == "server.home"))
        .and_then(|leaf| leaf.value.as_str().map(PathBuf::from))
        .unwrap_or(default_home);
    let home_file = if sources.home_file {
        read(&home.join(HOME_FILE), Layer::HomeFile, false)?
    } else {
        Vec::new()
    };
    let files = read_files.into_values().collect();

    let layers = [default_leaves, system, home_file, config_file, env, flags];
    for layer in &layers {
        layers::validate(&schema, layer)?;
    }
    let mut warnings: Vec<String> = layers
        .iter()
        .flatten()
        .filter(|leaf| schema.is_secret(&leaf.key))
        .filter_map(|leaf| match &leaf.source {
            Source::File { path, .. } => readable_by_others(path).then(|| {
                format!(
                    "{} holds a secret ({}) and can be read by every user; chmod 600 it",
                    path.display(),
                    leaf.key
                )
            }),
            _ => None,
        })
        .collect();
    let mut entries = layers::merge(&schema, layers.into())?;
    fill_provider_defaults(&schema, &mut entries);

    let mut draft = Draft::defaults(home);
    for (key, entry) in &entries {
        // Every value was checked in its layer; this cannot fail, but stays honest.
        schema
            .write(&mut draft, key, entry.value.clone())
            .map_err(|e| ConfigError::Value {
                at: entry.source.clone(),
                key: key.clone(),
                message: e.message,
            })?;
    }
    let config = draft.finish().map_err(ConfigError::Inconsistent)?;
    let mut key_files: Vec<_> = config
        .runtime
        .credentials
        .iter()
        .filter_map(|(name, c)| Some((name, c.api_key_file.as_ref()?)))
        .filter(|(_, file)| readable_by_others(file))
        .map(|(name, file)| {
            format!(
                "{} holds the key of credentials.{name} and can be read by every user; chmod 600 it",
                file.display()
            )
        })
        .collect();
    key_files.sort();
    warnings.extend(key_files);
    if config.database.url.is_some() && config.runtime.workspace_root.is_none() {
        warnings.push(format!(
            "database.url is set but server.workspace_root is not: sessions' workspaces stay \
             in {}, which other replicas cannot see; give every replica the same shared \
             folder",
            config.runtime.sandbox_dir().display()
        ));
    }
    if let Some(file) = &config.database.password_file
        && readable_by_others(file)
    {
        warnings.push(format!(
            "{} holds the database password (database.password_file) and can be read by \
             every user; chmod 600 it",
            file.display()
        ));
    }
    requirements::check_within(&config, &entries)?;
    Ok(Loaded {
        config,
        entries,
        files,
        warnings,
    })
}

/// A provider named by any layer is shown with all its keys, defaults included.
fn fill_provider_defaults(schema: &Schema, entries: &mut BTreeMap<String, Entry>) {
    let names: Vec<String> = entries
        .keys()
        .filter_map(|key| key.strip_prefix("providers.")?.split_once('.'))
        .map(|(name, _)| name.to_owned())
        .collect();
    let defaults = odyssey_runtime::provider::ProviderSettings::default();
    for name in names {
        for setting in &schema.provider {
            let key = format!("providers.{name}.{}", setting.key);
            if entries.contains_key(&key) {
                continue;
            }
            if let Some(value) = setting.read(&defaults) {
                entries.insert(
                    key,
                    Entry {
                        value,
                        source: Source::Default,
                        secret: setting.secret,
                    },
                );
            }
        }
    }
}

#[cfg(unix)]
fn readable_by_others(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o004 != 0)
}

#[cfg(not(unix))]
fn readable_by_others(_path: &Path) -> bool {
    false
}
