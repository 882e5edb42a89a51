//! Registry credentials: what they are, and reading them from a credentials file in the
//! format `docker login`, `podman login` and `oras login` write (`~/.docker/config.json`):
//!
//! ```json
//! {"auths": {
//!   "registry.example.com": {"auth": "<base64 of user:password>"},
//!   "ghcr.io": {"username": "ci", "password": "…"},
//!   "registry.internal:5000": {"registrytoken": "<bearer token>"}
//! }}
//! ```
//!
//! Keys may be written as hosts or as URLs (`https://index.docker.io/v1/`); each is reduced
//! to the `host[:port]` that references name, and credentials are only ever offered to
//! that exact host. Credential helpers (`credsStore`, `credHelpers`) are not run.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::Path;

use base64::Engine;
use serde::Deserialize;

use super::error::HubError;

/// How the server authenticates to one registry.
#[derive(Clone, PartialEq, Eq)]
pub enum RegistryCredentials {
    /// HTTP basic auth, or the username and password a token service exchanges for a token.
    Basic { username: String, password: String },
    /// A bearer token sent as is.
    Bearer { token: String },
}

/// Secrets never appear in logs, not even through `{:?}` of the settings.
impl fmt::Debug for RegistryCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Basic { username, .. } => f
                .debug_struct("Basic")
                .field("username", username)
                .field("password", &"<redacted>")
                .finish(),
            Self::Bearer { .. } => f
                .debug_struct("Bearer")
                .field("token", &"<redacted>")
                .finish(),
        }
    }
}

impl RegistryCredentials {
    pub(crate) fn to_oci(&self) -> oci_client::secrets::RegistryAuth {
        use oci_client::secrets::RegistryAuth;
        match self {
            Self::Basic { username, password } => {
                RegistryAuth::Basic(username.clone(), password.clone())
            }
            Self::Bearer { token } => RegistryAuth::Bearer(token.clone()),
        }
    }
}

/// `host[:port]` as references write it: a URL key loses its scheme and path, the host is
/// lowercased, and Docker Hub's aliases become `docker.io`.
pub fn registry_host_key(key: &str) -> String {
    let without_scheme = key
        .split_once("://")
        .map_or(key, |(_, rest)| rest)
        .trim_end_matches('/');
    let host = without_scheme
        .split_once('/')
        .map_or(without_scheme, |(host, _)| host)
        .to_ascii_lowercase();
    match host.as_str() {
        "index.docker.io" | "registry-1.docker.io" => "docker.io".to_owned(),
        _ => host,
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AuthFile {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
    #[serde(default)]
    creds_store: Option<String>,
    #[serde(default)]
    cred_helpers: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    registrytoken: Option<String>,
    #[serde(default)]
    identitytoken: Option<String>,
}

/// Reads a credentials file (see the module docs) into credentials by registry host.
/// Errors name the file and the entry, never a secret.
pub fn load_auth_file(path: &Path) -> Result<HashMap<String, RegistryCredentials>, HubError> {
    let text = std::fs::read_to_string(path).map_err(|source| HubError::CredentialsFile {
        path: path.to_path_buf(),
        source,
    })?;
    warn_if_readable_by_others(path);
    parse_auth_file(&text)
        .map_err(|message| HubError::config(format!("in {}", path.display()), message))
}

/// Parses the file's text; the error says which entry is wrong and why.
pub(crate) fn parse_auth_file(text: &str) -> Result<HashMap<String, RegistryCredentials>, String> {
    // serde_json's error can quote the input; only its position is kept.
    let file: AuthFile = serde_json::from_str(text).map_err(|e| {
        format!(
            "not a credentials file (JSON with an `auths` object) at line {} column {}",
            e.line(),
            e.column()
        )
    })?;
    if file.creds_store.is_some() || !file.cred_helpers.is_empty() {
        tracing::warn!(
            "the registry credentials file names credential helpers; odysseyd does not run \
             them, so only the hosts listed under `auths` get credentials"
        );
    }
    let mut credentials = HashMap::new();
    for (key, entry) in file.auths {
        let host = registry_host_key(&key);
        if host.is_empty() {
            return Err(format!("auths key `{key}` names no registry host"));
        }
        let Some(found) = entry_credentials(&entry).map_err(|m| format!("auths.{key}: {m}"))?
        else {
            continue;
        };
        if credentials.insert(host.clone(), found).is_some() {
            return Err(format!(
                "auths has two entries for the registry {host}; keep one"
            ));
        }
    }
    Ok(credentials)
}

fn entry_credentials(entry: &AuthEntry) -> Result<Option<RegistryCredentials>, String> {
    if entry
        .identitytoken
        .as_deref()
        .is_some_and(|t| !t.is_empty())
    {
        return Err(
            "`identitytoken` (an OAuth refresh token) is not supported; use `auth`, \
             `username` and `password`, or `registrytoken`"
                .to_owned(),
        );
    }
    if let Some(token) = entry.registrytoken.as_deref().filter(|t| !t.is_empty()) {
        return Ok(Some(RegistryCredentials::Bearer {
            token: token.to_owned(),
        }));
    }
    if let Some(auth) = entry.auth.as_deref().filter(|a| !a.is_empty()) {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(auth.trim())
            .map_err(|_| "`auth` is not base64".to_owned())?;
        let decoded =
            String::from_utf8(decoded).map_err(|_| "`auth` does not decode to text".to_owned())?;
        let (username, password) = decoded
            .split_once(':')
            .ok_or_else(|| "`auth` does not decode to `username:password`".to_owned())?;
        return Ok(Some(RegistryCredentials::Basic {
            username: username.to_owned(),
            password: password.to_owned(),
        }));
    }
    match (entry.username.as_deref(), entry.password.as_deref()) {
        (Some(username), Some(password)) if !username.is_empty() => {
            Ok(Some(RegistryCredentials::Basic {
                username: username.to_owned(),
                password: password.to_owned(),
            }))
        }
        (None, None) => Ok(None),
        _ => Err("`username` and `password` go together".to_owned()),
    }
}

/// Credentials belong to the server's user; a file others can read is worth a warning.
#[cfg(unix)]
fn warn_if_readable_by_others(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(meta) = std::fs::metadata(path)
        && meta.permissions().mode() & 0o077 != 0
    {
        tracing::warn!(
            path = %path.display(),
            "the registry credentials file is readable by other users; chmod 600 it"
        );
    }
}

#[cfg(not(unix))]
fn warn_if_readable_by_others(_path: &Path) {}
