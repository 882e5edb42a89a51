//! The shape of the configuration file: which keys exist, which are sections, which hold
//! secrets or requirements, and where each value goes.

use super::setting::{Setting, ValueError};
use super::settings::{Draft, credential_settings, provider_settings, server_settings};
use odyssey_runtime::provider::{
    CredentialSettings, ProviderSettings, credential_name_problem, known_provider_names,
};

/// The section holding one table per provider name.
pub const PROVIDERS: &str = "providers";
/// The section holding one table per named credential.
pub const CREDENTIALS: &str = "credentials";

/// A key of the file, resolved.
pub enum Key<'a> {
    Server(&'a Setting<Draft>),
    Provider {
        name: &'a str,
        setting: &'a Setting<ProviderSettings>,
    },
    Credential {
        name: &'a str,
        setting: &'a Setting<CredentialSettings>,
    },
}

pub struct Schema {
    pub server: Vec<Setting<Draft>>,
    pub provider: Vec<Setting<ProviderSettings>>,
    pub credential: Vec<Setting<CredentialSettings>>,
    providers: Vec<&'static str>,
}

impl Schema {
    pub fn new() -> Self {
        Self {
            server: server_settings(),
            provider: provider_settings(),
            credential: credential_settings(),
            providers: known_provider_names(),
        }
    }

    pub fn lookup<'a>(&'a self, key: &'a str) -> Option<Key<'a>> {
        if let Some(rest) = key.strip_prefix("providers.") {
            let (name, field) = rest.split_once('.')?;
            if !self.providers.contains(&name) {
                return None;
            }
            let setting = self.provider.iter().find(|s| s.key == field)?;
            return Some(Key::Provider { name, setting });
        }
        if let Some(rest) = key.strip_prefix("credentials.") {
            let (name, field) = rest.split_once('.')?;
            if credential_name_problem(name).is_some() {
                return None;
            }
            let setting = self.credential.iter().find(|s| s.key == field)?;
            return Some(Key::Credential { name, setting });
        }
        self.server.iter().find(|s| s.key == key).map(Key::Server)
    }

    pub fn is_leaf(&self, key: &str) -> bool {
        self.lookup(key).is_some()
    }

    /// Whether `path` names a table of the file (`server`, `providers.openai`).
    pub fn is_section(&self, path: &str) -> bool {
        if path == PROVIDERS {
            return true;
        }
        if let Some(name) = path.strip_prefix("providers.") {
            return self.providers.contains(&name);
        }
        if path == CREDENTIALS {
            return true;
        }
        if let Some(name) = path.strip_prefix("credentials.") {
            return credential_name_problem(name).is_none();
        }
        let prefix = format!("{path}.");
        self.server.iter().any(|s| s.key.starts_with(&prefix))
    }

    /// What may appear in `section`, for unknown-key errors.
    pub fn hint(&self, section: &str) -> String {
        if section.is_empty() {
            let mut sections: Vec<&str> = self
                .server
                .iter()
                .filter_map(|s| s.key.split_once('.').map(|(section, _)| section))
                .collect();
            sections.dedup();
            let at = sections
                .iter()
                .position(|s| *s == "requirements")
                .unwrap_or(sections.len());
            sections.insert(at, CREDENTIALS);
            sections.insert(at, PROVIDERS);
            return format!("the sections are: {}", sections.join(", "));
        }
        if section == PROVIDERS {
            return format!("known providers: {}", self.providers.join(", "));
        }
        if section == CREDENTIALS {
            return "a table per credential, [credentials.NAME] (NAME: letters, digits, `_`, `-`)"
                .to_owned();
        }
        let keys: Vec<&str> = if section.starts_with("providers.") {
            self.provider.iter().map(|s| s.key).collect()
        } else if section.starts_with("credentials.") {
            self.credential.iter().map(|s| s.key).collect()
        } else {
            let prefix = format!("{section}.");
            self.server
                .iter()
                .filter_map(|s| s.key.strip_prefix(&prefix))
                .collect()
        };
        format!("the keys of [{section}] are: {}", keys.join(", "))
    }

    pub fn is_secret(&self, key: &str) -> bool {
        match self.lookup(key) {
            Some(Key::Server(s)) => s.secret,
            Some(Key::Provider { setting, .. }) => setting.secret,
            Some(Key::Credential { setting, .. }) => setting.secret,
            None => false,
        }
    }

    /// Stores `value` under `key` in `draft`, checked.
    pub fn write(
        &self,
        draft: &mut Draft,
        key: &str,
        value: toml::Value,
    ) -> Result<(), ValueError> {
        match self.lookup(key) {
            Some(Key::Server(setting)) => setting.write(draft, value),
            Some(Key::Provider { name, setting }) => {
                let settings = draft
                    .server
                    .runtime
                    .providers
                    .entry(name.to_owned())
                    .or_default();
                setting.write(settings, value)
            }
            Some(Key::Credential { name, setting }) => {
                let credential = draft
                    .server
                    .runtime
                    .credentials
                    .entry(name.to_owned())
                    .or_default();
                setting.write(credential, value)
            }
            None => Err(format!("unknown key `{key}`").into()),
        }
    }
}
