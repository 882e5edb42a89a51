//! The operator's side of delegation to remote A2A agents: server-wide agents bundles ask
//! for by name (the only ones that carry credentials), the URLs bundles may point at, and
//! the limits of a call. [`A2aSettings::resolve`] turns what an agent asks for into what
//! its session may call, or refuses naming the setting.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use crate::bundle::{AgentDefinition, BundleManifest};
use crate::error::{Result, RuntimeError};
use crate::provider::UrlPattern;
use crate::secrets::MASK;

/// `[a2a]` of the server's configuration (the delegation part).
#[derive(Clone, Debug)]
pub struct A2aSettings {
    /// Server-wide remote agents, by name (`[a2a.agents.NAME]`).
    pub agents: BTreeMap<String, OperatorA2aAgent>,
    /// The URLs a bundle's remote agent may have (`a2a.allowed_urls`); empty: none.
    pub allowed_urls: Vec<UrlPattern>,
    /// The wall clock of one call's remote work (each exchange with the remote agent; the
    /// wait for a local approval is bounded by the approval timeout instead).
    pub call_timeout: Duration,
    /// The most bytes of the remote answer given to the model; the rest is cut with a note.
    pub max_output_bytes: usize,
    /// How long a fetched agent card is reused before it is fetched again.
    pub card_ttl: Duration,
}

impl Default for A2aSettings {
    fn default() -> Self {
        Self {
            agents: BTreeMap::new(),
            allowed_urls: Vec::new(),
            call_timeout: Duration::from_secs(600),
            max_output_bytes: 64 * 1024,
            card_ttl: Duration::from_secs(300),
        }
    }
}

/// One `[a2a.agents.NAME]`: where the agent is, and the headers only the operator may give
/// it (`Authorization`, API keys).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct OperatorA2aAgent {
    pub url: String,
    /// Headers of every request to the agent (they may hold keys).
    pub headers: BTreeMap<String, String>,
}

impl fmt::Debug for OperatorA2aAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<(&String, &str)> = self.headers.keys().map(|k| (k, MASK)).collect();
        f.debug_struct("OperatorA2aAgent")
            .field("url", &super::client::public_url(&self.url))
            .field("headers", &headers)
            .finish()
    }
}

/// A remote agent a session may call, with everything a call needs.
#[derive(Clone, PartialEq, Eq)]
pub struct ResolvedA2aAgent {
    pub name: String,
    pub url: String,
    /// The operator's headers; always empty for an agent the bundle points at.
    pub headers: BTreeMap<String, String>,
    /// `a2a.allowed_urls` when the bundle gave the URL (the card's endpoint must match it
    /// too); empty for the operator's agents.
    pub allowed_urls: Vec<UrlPattern>,
}

impl fmt::Debug for ResolvedA2aAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResolvedA2aAgent")
            .field("name", &self.name)
            .field("url", &super::client::public_url(&self.url))
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl A2aSettings {
    /// The remote agents `agent` uses, checked against the operator's settings: a URL the
    /// bundle gives must be allowed (`a2a.allowed_urls`), and an agent asked for by name
    /// must be one of the operator's (`a2a.agents.NAME`). Refusals are `PermissionDenied`
    /// naming the setting.
    pub fn resolve(
        &self,
        manifest: &BundleManifest,
        agent: &AgentDefinition,
    ) -> Result<Vec<ResolvedA2aAgent>> {
        agent
            .a2a_agents
            .iter()
            .map(|name| {
                let spec = manifest.a2a_agent(name).ok_or_else(|| {
                    RuntimeError::invalid(
                        "spec.a2a_agents",
                        format!(
                            "agent `{}` uses A2A agent `{name}`, which the bundle does not declare",
                            agent.id
                        ),
                    )
                })?;
                match &spec.url {
                    Some(url) => {
                        self.check_url(name, url)?;
                        Ok(ResolvedA2aAgent {
                            name: name.clone(),
                            url: url.clone(),
                            headers: BTreeMap::new(),
                            allowed_urls: self.allowed_urls.clone(),
                        })
                    }
                    None => self.operator_agent(name),
                }
            })
            .collect()
    }

    fn check_url(&self, name: &str, url: &str) -> Result<()> {
        let parsed = reqwest::Url::parse(url)
            .map_err(|e| RuntimeError::invalid("spec.a2a_agents.url", e.to_string()))?;
        if self.allowed_urls.iter().any(|p| p.matches(&parsed)) {
            Ok(())
        } else {
            Err(denied(
                "a2a.allowed_urls",
                format!(
                    "A2A agent `{name}` is at {}, which this server does not allow",
                    super::client::public_url(url)
                ),
            ))
        }
    }

    fn operator_agent(&self, name: &str) -> Result<ResolvedA2aAgent> {
        let Some(agent) = self.agents.get(name) else {
            let offered: Vec<&str> = self.agents.keys().map(String::as_str).collect();
            return Err(denied(
                &format!("a2a.agents.{name}"),
                format!(
                    "the bundle asks for the server's A2A agent `{name}`, which this server \
                     does not offer{}",
                    if offered.is_empty() {
                        String::new()
                    } else {
                        format!(" (it offers: {})", offered.join(", "))
                    }
                ),
            ));
        };
        Ok(ResolvedA2aAgent {
            name: name.to_owned(),
            url: agent.url.clone(),
            headers: agent.headers.clone(),
            allowed_urls: Vec::new(),
        })
    }
}

fn denied(setting: &str, message: String) -> RuntimeError {
    RuntimeError::PermissionDenied {
        setting: setting.to_owned(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::A2aAgentSpec;

    fn bundle(agents: Vec<(&str, Option<&str>)>) -> BundleManifest {
        let agent = AgentDefinition {
            id: "a".into(),
            name: "a".into(),
            version: "1.0.0".into(),
            description: String::new(),
            prompt: "p".into(),
            model: crate::model::ModelSpec {
                provider: "openai".into(),
                name: "m".into(),
                config: None,
            },
            tools: Default::default(),
            memory: Default::default(),
            delegates: Vec::new(),
            mcp_servers: Vec::new(),
            a2a_agents: agents.iter().map(|(n, _)| (*n).to_owned()).collect(),
            is_default: true,
        };
        BundleManifest {
            name: "b".into(),
            version: semver::Version::new(1, 0, 0),
            readme: None,
            description: String::new(),
            agents: vec![agent],
            skills: Vec::new(),
            tools: Vec::new(),
            sandbox: Default::default(),
            mcp_servers: Vec::new(),
            a2a_agents: agents
                .into_iter()
                .map(|(name, url)| A2aAgentSpec {
                    name: name.to_owned(),
                    url: url.map(str::to_owned),
                })
                .collect(),
        }
    }

    fn refusal(settings: &A2aSettings, manifest: &BundleManifest) -> String {
        match settings.resolve(manifest, manifest.default_agent()) {
            Err(RuntimeError::PermissionDenied { setting, message }) => {
                format!("{setting}: {message}")
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn what_a_bundle_asks_for_is_refused_unless_the_operator_allows_it() {
        let closed = A2aSettings::default();
        let remote = bundle(vec![("helper", Some("https://agents.example.com/helper"))]);
        let err = refusal(&closed, &remote);
        assert!(
            err.starts_with("a2a.allowed_urls: ") && err.contains("agents.example.com/helper"),
            "{err}"
        );
        let open = A2aSettings {
            allowed_urls: vec![
                "https://agents.example.com/*"
                    .parse()
                    .unwrap_or_else(|e| panic!("{e}")),
            ],
            agents: BTreeMap::from([(
                "helper".into(),
                OperatorA2aAgent {
                    url: "https://elsewhere.example.com/".into(),
                    headers: BTreeMap::from([("Authorization".into(), "Bearer k-123".into())]),
                },
            )]),
            ..A2aSettings::default()
        };
        let resolved = open
            .resolve(&remote, remote.default_agent())
            .unwrap_or_else(|e| panic!("{e}"));
        // A bundle's remote agent never gets the operator's headers, even under their name.
        assert!(resolved[0].headers.is_empty());
        assert_eq!(resolved[0].url, "https://agents.example.com/helper");
        assert_eq!(resolved[0].allowed_urls.len(), 1);

        let named = bundle(vec![("research", None)]);
        let err = refusal(&open, &named);
        assert!(
            err.starts_with("a2a.agents.research: ") && err.contains("it offers: helper"),
            "{err}"
        );
        let by_name = bundle(vec![("helper", None)]);
        let resolved = open
            .resolve(&by_name, by_name.default_agent())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(resolved[0].url, "https://elsewhere.example.com/");
        assert_eq!(resolved[0].headers["Authorization"], "Bearer k-123");
        // Keys never reach a log line through Debug.
        assert!(!format!("{resolved:?}{open:?}").contains("k-123"));
    }
}
