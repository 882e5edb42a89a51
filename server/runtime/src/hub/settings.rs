//! The hub's settings: the default registry, credentials per registry host, and which hosts
//! may be reached over plain HTTP.

use std::collections::HashMap;
use std::net::IpAddr;

use super::credentials::{RegistryCredentials, registry_host_key};
use super::error::HubError;

/// The default registry: a registry on this machine, over plain HTTP.
pub const DEFAULT_HUB: &str = "http://127.0.0.1:8473";

/// Where bundles are pushed and pulled, and how to reach each registry. Comes from the
/// server's configuration only: a request never carries credentials or a scheme.
#[derive(Clone, Debug)]
pub struct HubSettings {
    /// The registry for references that name no host, as a URL (`http://127.0.0.1:8473`,
    /// `https://hub.example.com`). Its scheme is used for that host.
    pub default_registry: String,
    /// Credentials by registry host (`host` or `host:port`, as references write it). They
    /// are only ever offered to that host.
    pub credentials: HashMap<String, RegistryCredentials>,
    /// Hosts (`host[:port]`) reached over plain HTTP. Loopback hosts always are; every
    /// other host needs TLS unless listed here.
    pub insecure_hosts: Vec<String>,
}

impl Default for HubSettings {
    fn default() -> Self {
        Self {
            default_registry: DEFAULT_HUB.to_owned(),
            credentials: HashMap::new(),
            insecure_hosts: Vec::new(),
        }
    }
}

/// The scheme a registry host is reached with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scheme {
    Http,
    Https,
}

/// Settings checked and normalized once, at startup.
#[derive(Clone, Debug)]
pub(crate) struct ResolvedSettings {
    /// `host[:port]` of the default registry.
    pub default_host: String,
    default_scheme: Scheme,
    credentials: HashMap<String, RegistryCredentials>,
    insecure_hosts: Vec<String>,
}

impl ResolvedSettings {
    pub fn new(settings: &HubSettings) -> Result<Self, HubError> {
        let (default_host, default_scheme) = parse_registry_url(&settings.default_registry)?;
        let credentials = settings
            .credentials
            .iter()
            .map(|(host, creds)| (registry_host_key(host), creds.clone()))
            .collect();
        let insecure_hosts = settings
            .insecure_hosts
            .iter()
            .map(|h| registry_host_key(h))
            .collect();
        Ok(Self {
            default_host,
            default_scheme,
            credentials,
            insecure_hosts,
        })
    }

    /// Plain HTTP for the default registry when its URL says so, for loopback hosts and for
    /// hosts the operator listed; TLS for everything else.
    pub fn scheme_for(&self, host: &str) -> Scheme {
        let key = registry_host_key(host);
        if key == self.default_host {
            self.default_scheme
        } else if is_loopback(&key) || self.insecure_hosts.contains(&key) {
            Scheme::Http
        } else {
            Scheme::Https
        }
    }

    /// The credentials configured for exactly this host, if any.
    pub fn credentials_for(&self, host: &str) -> Option<&RegistryCredentials> {
        self.credentials.get(&registry_host_key(host))
    }
}

/// Checks a registry URL the way the `hub` setting takes it, so a bad one is refused
/// while the configuration is read (naming where it came from), not at startup.
pub fn check_registry_url(text: &str) -> Result<(), HubError> {
    parse_registry_url(text).map(drop)
}

/// `http(s)://host[:port]` into the host as references write it and its scheme.
fn parse_registry_url(text: &str) -> Result<(String, Scheme), HubError> {
    let shown = without_userinfo(text);
    let bad = |message: &str| HubError::config("hub", format!("`{shown}`: {message}"));
    if !text.contains("://") {
        return Err(bad(
            "the URL needs a scheme: http(s)://host[:port], e.g. http://127.0.0.1:8473",
        ));
    }
    let url = reqwest::Url::parse(text.trim())
        .map_err(|e| bad(&format!("not a URL ({e}); expected http(s)://host[:port]")))?;
    let scheme = match url.scheme() {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        _ => return Err(bad("the scheme must be http or https")),
    };
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad(
            "credentials do not go in the URL; use the registry credentials file",
        ));
    }
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return Err(bad(
            "a registry is served from the root of its host; remove the path",
        ));
    }
    let host = url.host_str().ok_or_else(|| bad("the URL names no host"))?;
    let host = match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    };
    Ok((registry_host_key(&host), scheme))
}

/// The URL as it may be echoed: anything before an `@` in its authority is a credential.
fn without_userinfo(text: &str) -> String {
    let Some((scheme, rest)) = text.split_once("://") else {
        return text.to_owned();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://…@{}", &rest[at + 1..]),
        None => text.to_owned(),
    }
}

/// Whether `host[:port]` names this machine: `localhost` or a loopback address.
pub(crate) fn is_loopback(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(bracketed) => bracketed.split_once(']').map_or(bracketed, |(ip, _)| ip),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}
