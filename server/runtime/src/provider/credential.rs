//! Named operator credentials (`[credentials.NAME]`): keys a request may pick by name,
//! with `config.credential = "NAME"` in its model config, never by value. Each credential
//! is for one provider and, unless it lists others, only that provider's own base URL, so
//! a caller choosing among the operator's keys can never point one at a server of its
//! choosing.

use std::path::PathBuf;

use super::url_pattern::UrlPattern;

/// The model config key that names a credential.
pub const CREDENTIAL_KEY: &str = "credential";

/// Longest credential name, and the characters it may hold.
const MAX_NAME_CHARS: usize = 64;

/// One named credential, as the operator configured it.
#[derive(Clone, Default, PartialEq)]
pub struct CredentialSettings {
    /// The provider it is for (`openai`, `anthropic`, ...).
    pub provider: String,
    /// The key itself, when given in the configuration.
    pub api_key: Option<String>,
    /// The file the key was read from, when given so.
    pub api_key_file: Option<PathBuf>,
    /// The key read from `api_key_file`.
    pub file_key: Option<String>,
    /// Base URLs it may be sent to. Empty: the provider's own base URL only (the operator's
    /// `providers.<name>.base_url`, or the public endpoint).
    pub allowed_base_urls: Vec<UrlPattern>,
}

impl CredentialSettings {
    /// The key, from the configuration or its file.
    pub fn key(&self) -> Option<&str> {
        self.api_key
            .as_deref()
            .or(self.file_key.as_deref())
            .filter(|k| !k.is_empty())
    }
}

/// Keys never appear in debug output.
impl std::fmt::Debug for CredentialSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CredentialSettings")
            .field("provider", &self.provider)
            .field(
                "api_key",
                &self.api_key.as_ref().map(|_| super::error::REDACTED),
            )
            .field("api_key_file", &self.api_key_file)
            .field("allowed_base_urls", &self.allowed_base_urls)
            .finish()
    }
}

/// Why `name` cannot name a credential, if it cannot: 1 to 64 letters, digits, `_`, `-`.
pub fn credential_name_problem(name: &str) -> Option<String> {
    let ok = !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    (!ok).then(|| {
        format!(
            "`{name}` is not a credential name: 1 to {MAX_NAME_CHARS} letters, digits, `_` or `-`"
        )
    })
}

/// Reads a key file: its content, trimmed; an empty file is an error.
pub fn read_key_file(path: &std::path::Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the key file {}: {e}", path.display()))?;
    let key = text.trim();
    if key.is_empty() {
        return Err(format!("the key file {} is empty", path.display()));
    }
    Ok(key.to_owned())
}
