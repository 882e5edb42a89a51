//! Whether the server a local model provider lives at is up, for ListModels.
//!
//! A local server (llama.cpp, Ollama, vLLM, LM Studio) needs no key, so "has a key" says
//! nothing about whether a turn would work; what matters is whether something listens at
//! its base URL. The same holds for any provider the operator pointed at a loopback address
//! (a local gateway or proxy). Hosted endpoints are never probed: their reachability is
//! not something the operator can act on from here, and probing them on every ListModels
//! would cost a round trip to the internet.
//!
//! The probe is a TCP connect bounded by [`PROBE_TIMEOUT`]: it needs no key, sends nothing,
//! and answers at once on loopback (a refused connection is immediate). Checks of several
//! agents run concurrently, so a request waits at most one timeout.

use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use reqwest::Url;

use super::{ProviderRegistry, google::GOOGLE_NAMES};
use crate::model::ModelSpec;

/// Longest wait for a connection: loopback answers in microseconds, and a LAN machine
/// in milliseconds; a server that takes longer than this to accept is not usable anyway.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

impl ProviderRegistry {
    /// [`ProviderRegistry::availability`], plus, for a local server, whether it is up.
    pub async fn check_availability(&self, spec: &ModelSpec, bundle_root: &Path) -> (bool, String) {
        let (available, detail) = self.availability(spec, bundle_root);
        let Some(url) = available.then(|| self.local_server(spec)).flatten() else {
            return (available, detail);
        };
        match probe(&url, PROBE_TIMEOUT).await {
            Ok(()) if detail.contains(&url) => (true, format!("{detail}; reachable")),
            Ok(()) => (true, format!("{detail}; {url} is reachable")),
            Err(why) => (
                false,
                format!(
                    "{url} is not reachable ({why}); start the `{}` server or point the \
                     provider's base_url at it",
                    spec.provider
                ),
            ),
        }
    }

    /// The base URL to probe for `spec`: that of a provider needing no key, or any base
    /// URL on a loopback address. `None` for hosted endpoints.
    fn local_server(&self, spec: &ModelSpec) -> Option<String> {
        let (base_url, keyless) = if GOOGLE_NAMES.contains(&spec.provider.as_str()) {
            let slot = self.google_slot(spec)?;
            (slot.base_url().to_owned(), false)
        } else {
            let slot = self.wire_slot(spec).ok()?;
            (slot.base_url.clone()?, slot.spec.default_key_env.is_none())
        };
        let url = Url::parse(&base_url).ok()?;
        (keyless || is_loopback(&url)).then_some(base_url)
    }
}

/// The URL's host without the brackets of an IPv6 literal.
fn host(url: &Url) -> Option<&str> {
    url.host_str()
        .map(|h| h.trim_start_matches('[').trim_end_matches(']'))
}

fn is_loopback(url: &Url) -> bool {
    match host(url) {
        None => false,
        Some(name) => match name.parse::<IpAddr>() {
            Ok(ip) => ip.is_loopback(),
            Err(_) => {
                let name = name.trim_end_matches('.').to_ascii_lowercase();
                name == "localhost" || name.ends_with(".localhost")
            }
        },
    }
}

/// Connects to the host and port of `base_url` and hangs up; `Err` says why it failed.
async fn probe(base_url: &str, timeout: Duration) -> Result<(), String> {
    let url = Url::parse(base_url).map_err(|e| format!("not a URL: {e}"))?;
    let port = url
        .port_or_known_default()
        .ok_or_else(|| format!("no port for scheme `{}`", url.scheme()))?;
    let host = host(&url).ok_or("the URL has no host")?;
    let connect = tokio::net::TcpStream::connect((host, port));
    match tokio::time::timeout(timeout, connect).await {
        Ok(Ok(_stream)) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {} ms", timeout.as_millis())),
    }
}

#[cfg(test)]
#[path = "reachability_tests.rs"]
mod tests;
