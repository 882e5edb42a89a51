//! `[[hooks.event]]` tables and the `--event-hook` flag: the file's shape of an operator
//! event hook, turned into the runtime's [`EventHookConfig`].
//!
//! ```toml
//! [[hooks.event]]
//! name = "audit"                                   # the `hook` label of its metrics
//! url = "https://audit.example.com/odyssey"        # or: command = ["/usr/local/bin/sink"]
//! events = ["turn_started", "turn_completed"]      # default: every type
//! queue_capacity = 1024
//! timeout_ms = 5000
//! allow_http = false                               # http:// to a host that is not loopback
//! ```

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::setting::{EnvText, ValueError};
use odyssey_runtime::event_hooks::{EventHookConfig, HookTarget};

/// One `[[hooks.event]]` table.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookEntry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    /// The program and its arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    command: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    events: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    queue_capacity: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    timeout_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    allow_http: bool,
}

impl HookEntry {
    /// `--event-hook` given a URL (`http://`, `https://`) or a program.
    pub fn from_flag(text: &str) -> Self {
        let text = text.trim();
        let is_url = ["http://", "https://"]
            .iter()
            .any(|scheme| text.to_ascii_lowercase().starts_with(scheme));
        if is_url {
            Self {
                url: Some(text.to_owned()),
                ..Self::default()
            }
        } else {
            Self {
                command: Some(vec![text.to_owned()]),
                ..Self::default()
            }
        }
    }

    /// The runtime's hook for the entry at `index` (which names it unless it has a name).
    fn into_config(self, index: usize) -> Result<EventHookConfig, String> {
        let target = match (self.url, self.command) {
            (Some(url), None) => HookTarget::Webhook {
                url,
                allow_http: self.allow_http,
            },
            (None, Some(command)) => HookTarget::Command(command),
            (Some(_), Some(_)) => {
                return Err("give either `url` or `command`, not both".into());
            }
            (None, None) => {
                return Err("needs a `url` (a webhook) or a `command` (a program)".into());
            }
        };
        let mut config = EventHookConfig::new(
            self.name.unwrap_or_else(|| format!("hook-{}", index + 1)),
            target,
        );
        config.events = self.events;
        if let Some(capacity) = self.queue_capacity {
            config.queue_capacity = capacity;
        }
        if let Some(ms) = self.timeout_ms {
            config.timeout = Duration::from_millis(ms);
        }
        config.check()?;
        Ok(config)
    }
}

impl From<&EventHookConfig> for HookEntry {
    fn from(config: &EventHookConfig) -> Self {
        let (url, command, allow_http) = match &config.target {
            HookTarget::Webhook { url, allow_http } => (Some(url.clone()), None, *allow_http),
            HookTarget::Command(argv) => (None, Some(argv.clone()), false),
        };
        Self {
            name: Some(config.name.clone()),
            url,
            command,
            events: config.events.clone(),
            queue_capacity: Some(config.queue_capacity),
            timeout_ms: u64::try_from(config.timeout.as_millis()).ok(),
            allow_http,
        }
    }
}

/// `ODYSSEY_EVENT_HOOK`: hooks separated by `,`, each a URL or a program.
impl EnvText for Vec<HookEntry> {
    fn from_env(text: &str) -> Result<Self, String> {
        Ok(text
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(HookEntry::from_flag)
            .collect())
    }
}

/// The hooks of a `hooks.event` value, each checked; an error names the entry.
pub fn parse(entries: Vec<toml::Value>) -> Result<Vec<EventHookConfig>, ValueError> {
    let mut hooks: Vec<EventHookConfig> = Vec::with_capacity(entries.len());
    for (index, entry) in entries.into_iter().enumerate() {
        let at = |message: String| ValueError {
            message,
            index: Some(index),
        };
        let entry = HookEntry::deserialize(entry).map_err(|e| at(e.message().to_owned()))?;
        let hook = entry.into_config(index).map_err(at)?;
        if hooks.iter().any(|earlier| earlier.name == hook.name) {
            return Err(at(format!(
                "another event hook is named `{}`; names must differ",
                hook.name
            )));
        }
        hooks.push(hook);
    }
    Ok(hooks)
}
