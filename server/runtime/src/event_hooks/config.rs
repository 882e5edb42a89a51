//! What an operator configures for one event hook, and the checks every configuration
//! passes before a hook starts (from the file, a flag or an embedding program).

use std::time::Duration;

use reqwest::Url;

use crate::events::EventPayload;
use crate::provider::is_loopback;

/// Longest hook name: it is a metric label and appears in every log line of the hook.
const MAX_NAME_LEN: usize = 64;

/// One operator event hook.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventHookConfig {
    /// Names the hook in log lines and in the `hook` label of its metrics:
    /// letters, digits, `-`, `_` and `.`.
    pub name: String,
    pub target: HookTarget,
    /// The event types it receives (`turn_completed`, ...); empty: every type.
    pub events: Vec<String>,
    /// Events that may wait for the hook; when it falls further behind, new events are
    /// dropped for it (and counted) rather than held.
    pub queue_capacity: usize,
    /// How long one delivery may take: a write to the command, or a webhook request.
    pub timeout: Duration,
}

/// Where a hook's events go.
#[derive(Clone, PartialEq, Eq)]
pub enum HookTarget {
    /// A long-running program (and its arguments, run directly, not through a shell)
    /// that reads one JSON event per line on its stdin. It is restarted when it exits.
    Command(Vec<String>),
    /// An HTTP endpoint that receives each event as a POST of its JSON.
    Webhook {
        url: String,
        /// Allows `http://` to a host that is not loopback (events would cross the
        /// network unencrypted).
        allow_http: bool,
    },
}

/// A webhook URL may carry a token (`?token=`, `user:password@`): masked in debug output.
impl std::fmt::Debug for HookTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Command(argv) => f.debug_tuple("Command").field(argv).finish(),
            Self::Webhook { url, allow_http } => f
                .debug_struct("Webhook")
                .field("url", &crate::secrets::mask_url(url))
                .field("allow_http", allow_http)
                .finish(),
        }
    }
}

impl EventHookConfig {
    pub const DEFAULT_QUEUE_CAPACITY: usize = 1024;
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

    /// A hook with the default queue and timeout, receiving every event type.
    pub fn new(name: impl Into<String>, target: HookTarget) -> Self {
        Self {
            name: name.into(),
            target,
            events: Vec::new(),
            queue_capacity: Self::DEFAULT_QUEUE_CAPACITY,
            timeout: Self::DEFAULT_TIMEOUT,
        }
    }

    /// Why this configuration cannot run, if it cannot; the message names the hook.
    pub fn check(&self) -> Result<(), String> {
        let name = &self.name;
        let name_ok = !name.is_empty()
            && name.len() <= MAX_NAME_LEN
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !name_ok {
            return Err(format!(
                "event hook name `{name}` must be 1 to {MAX_NAME_LEN} letters, digits, `-`, `_` or `.`"
            ));
        }
        match &self.target {
            HookTarget::Command(argv) => {
                if argv.first().is_none_or(|program| program.trim().is_empty()) {
                    return Err(format!("event hook `{name}`: `command` names no program"));
                }
            }
            HookTarget::Webhook { url, allow_http } => check_url(name, url, *allow_http)?,
        }
        if let Some(unknown) = self
            .events
            .iter()
            .find(|e| !EventPayload::TYPE_NAMES.contains(&e.as_str()))
        {
            return Err(format!(
                "event hook `{name}`: unknown event type `{unknown}`; the types are: {}",
                EventPayload::TYPE_NAMES.join(", ")
            ));
        }
        if self.queue_capacity == 0 {
            return Err(format!(
                "event hook `{name}`: the queue must hold at least 1 event"
            ));
        }
        if self.timeout.is_zero() {
            return Err(format!(
                "event hook `{name}`: the timeout must be at least 1 ms"
            ));
        }
        Ok(())
    }

    /// Bit `i` is set when the hook receives events of type `TYPE_NAMES[i]`.
    pub(super) fn type_mask(&self) -> u32 {
        if self.events.is_empty() {
            return u32::MAX;
        }
        EventPayload::TYPE_NAMES
            .iter()
            .enumerate()
            .filter(|(_, name)| self.events.iter().any(|e| e == *name))
            .fold(0, |mask, (i, _)| mask | 1 << i)
    }
}

/// Checks a list of hooks: each one, and that no two share a name.
pub fn check_all(hooks: &[EventHookConfig]) -> Result<(), String> {
    for (at, hook) in hooks.iter().enumerate() {
        hook.check()?;
        if hooks[..at].iter().any(|earlier| earlier.name == hook.name) {
            return Err(format!(
                "two event hooks are named `{}`; names must differ",
                hook.name
            ));
        }
    }
    Ok(())
}

/// A webhook URL: http(s), no credentials in it (they would show in `config show`), and
/// https unless the host is loopback or the operator allowed plain HTTP.
fn check_url(name: &str, url: &str, allow_http: bool) -> Result<(), String> {
    let parsed =
        Url::parse(url).map_err(|e| format!("event hook `{name}`: `{url}` is not a URL: {e}"))?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(format!(
            "event hook `{name}`: the URL must not carry credentials"
        ));
    }
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if allow_http || is_loopback(&parsed) => Ok(()),
        "http" => Err(format!(
            "event hook `{name}`: {url} would send events unencrypted to a host that is not \
             loopback; use https, or set allow_http = true for this hook"
        )),
        other => Err(format!(
            "event hook `{name}`: a webhook URL must be http or https, not `{other}`"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn webhook(url: &str, allow_http: bool) -> EventHookConfig {
        EventHookConfig::new(
            "w",
            HookTarget::Webhook {
                url: url.into(),
                allow_http,
            },
        )
    }

    #[test]
    fn webhooks_need_https_off_loopback_unless_allowed() {
        assert!(
            webhook("https://hooks.example.com/odyssey", false)
                .check()
                .is_ok()
        );
        assert!(
            webhook("http://127.0.0.1:9000/events", false)
                .check()
                .is_ok()
        );
        assert!(
            webhook("http://localhost:9000/events", false)
                .check()
                .is_ok()
        );
        let refused = webhook("http://hooks.example.com/odyssey", false).check();
        assert!(
            refused.as_ref().is_err_and(|e| e.contains("allow_http")),
            "{refused:?}"
        );
        assert!(
            webhook("http://hooks.example.com/odyssey", true)
                .check()
                .is_ok()
        );
        assert!(webhook("ftp://hooks.example.com/", true).check().is_err());
        assert!(
            webhook("https://user:pw@hooks.example.com/", false)
                .check()
                .is_err()
        );
    }

    #[test]
    fn names_types_and_sizes_are_checked() {
        let mut hook = EventHookConfig::new("audit", HookTarget::Command(vec!["/bin/cat".into()]));
        assert!(hook.check().is_ok());
        hook.events = vec!["turn_completed".into(), "turn_startd".into()];
        let error = hook.check().unwrap_err();
        assert!(
            error.contains("turn_startd") && error.contains("turn_started"),
            "{error}"
        );
        hook.events = vec!["turn_completed".into()];
        assert_eq!(hook.type_mask(), 1 << 1);
        hook.queue_capacity = 0;
        assert!(hook.check().is_err());
        hook.queue_capacity = 1;
        let bad_name = EventHookConfig::new("a b", HookTarget::Command(vec!["x".into()]));
        assert!(bad_name.check().is_err());
        let no_program = EventHookConfig::new("c", HookTarget::Command(Vec::new()));
        assert!(no_program.check().is_err());
        let twins = [
            hook.clone(),
            EventHookConfig {
                queue_capacity: 1,
                ..hook
            },
        ];
        assert!(check_all(&twins).unwrap_err().contains("two event hooks"));
    }
}
