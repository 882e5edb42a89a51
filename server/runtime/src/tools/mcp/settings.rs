//! The operator's side of MCP: server-wide servers bundles ask for by name, the URLs
//! bundles may point at, and how long servers live. [`McpSettings::resolve`] turns what
//! an agent asks for into what its session may start, or refuses naming the setting.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use crate::access::AccessLimits;
use crate::bundle::{AgentDefinition, BundleManifest, McpServerSource};
use crate::error::{Result, RuntimeError};
use crate::provider::UrlPattern;
use crate::secrets::MASK;

/// `[mcp]` of the server's configuration.
#[derive(Clone, Debug)]
pub struct McpSettings {
    /// Server-wide servers, by name (`[mcp.servers.NAME]`).
    pub servers: BTreeMap<String, OperatorMcpServer>,
    /// The URLs a bundle's remote server may have (`mcp.allowed_urls`); empty: none.
    pub allowed_urls: Vec<UrlPattern>,
    /// A stdio server no call used for this long is stopped (started again when needed).
    pub idle_timeout: Duration,
    /// How long a server may take from its start to its answer to `initialize` and
    /// `tools/list`.
    pub start_timeout: Duration,
    /// The wall clock of one tool call.
    pub call_timeout: Duration,
    /// The most bytes of a result given to the model; the rest is cut with a note.
    pub max_output_bytes: usize,
    /// The most bytes of a server's stderr kept in the server log per start.
    pub max_stderr_log_bytes: usize,
}

impl Default for McpSettings {
    fn default() -> Self {
        Self {
            servers: BTreeMap::new(),
            allowed_urls: Vec::new(),
            idle_timeout: Duration::from_secs(600),
            start_timeout: Duration::from_secs(30),
            call_timeout: Duration::from_millis(crate::tools::bash::DEFAULT_TIMEOUT_MS),
            max_output_bytes: 64 * 1024,
            max_stderr_log_bytes: 64 * 1024,
        }
    }
}

/// One `[mcp.servers.NAME]`: a stdio program or a URL, with what only the operator may
/// give it (literal environment values, HTTP headers such as `Authorization`).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct OperatorMcpServer {
    pub command: Vec<String>,
    /// Variables of the program, with their values (they may hold keys).
    pub env: BTreeMap<String, String>,
    pub url: Option<String>,
    /// Headers of every request to `url` (they may hold keys).
    pub headers: BTreeMap<String, String>,
}

impl fmt::Debug for OperatorMcpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let masked = |map: &BTreeMap<String, String>| -> Vec<(String, &'static str)> {
            map.keys().map(|k| (k.clone(), MASK)).collect()
        };
        f.debug_struct("OperatorMcpServer")
            .field("command", &self.command)
            .field("env", &masked(&self.env))
            .field("url", &self.url)
            .field("headers", &masked(&self.headers))
            .finish()
    }
}

/// A server a session may start, with everything it needs.
#[derive(Clone, PartialEq, Eq)]
pub struct ResolvedMcpServer {
    pub name: String,
    pub launch: McpLaunch,
}

impl fmt::Debug for ResolvedMcpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let launch = match &self.launch {
            McpLaunch::Stdio { command, env } => {
                format!("stdio {command:?} env {:?}", env.keys().collect::<Vec<_>>())
            }
            McpLaunch::Http { url, headers } => format!(
                "http {url} headers {:?}",
                headers.keys().collect::<Vec<_>>()
            ),
        };
        f.debug_struct("ResolvedMcpServer")
            .field("name", &self.name)
            .field("launch", &launch)
            .finish()
    }
}

/// How a server is reached.
#[derive(Clone, PartialEq, Eq)]
pub enum McpLaunch {
    /// A program in the session's sandbox cell; `env` holds values.
    Stdio {
        command: Vec<String>,
        env: BTreeMap<String, String>,
    },
    /// Streamable HTTP.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

impl McpSettings {
    /// The servers `agent` uses, checked against the operator's settings: a bundle's
    /// stdio server maps only allowed host variables (`sandbox.env_allow`), its URL must
    /// be allowed (`mcp.allowed_urls`), and a server asked for by name must be one of the
    /// operator's (`mcp.servers.NAME`). Refusals are `PermissionDenied` naming the setting.
    pub fn resolve(
        &self,
        manifest: &BundleManifest,
        agent: &AgentDefinition,
        access: &AccessLimits,
    ) -> Result<Vec<ResolvedMcpServer>> {
        agent
            .mcp_servers
            .iter()
            .map(|name| {
                let spec = manifest.mcp_server(name).ok_or_else(|| {
                    // Checked when the bundle was built; kept total for older installs.
                    RuntimeError::invalid(
                        "spec.mcp_servers",
                        format!("agent `{}` uses MCP server `{name}`, which the bundle does not declare", agent.id),
                    )
                })?;
                let launch = match &spec.source {
                    McpServerSource::Stdio { command, env } => McpLaunch::Stdio {
                        command: command.clone(),
                        env: self.host_env(name, env, access)?,
                    },
                    McpServerSource::Url(url) => {
                        self.check_url(name, url)?;
                        McpLaunch::Http {
                            url: url.clone(),
                            headers: BTreeMap::new(),
                        }
                    }
                    McpServerSource::Operator => self.operator_server(name)?,
                };
                Ok(ResolvedMcpServer {
                    name: name.clone(),
                    launch,
                })
            })
            .collect()
    }

    fn host_env(
        &self,
        server: &str,
        mapping: &BTreeMap<String, String>,
        access: &AccessLimits,
    ) -> Result<BTreeMap<String, String>> {
        let mut env = BTreeMap::new();
        for (inside, host) in mapping {
            if !access.env_allowlist.iter().any(|allowed| allowed == host) {
                return Err(denied(
                    "sandbox.env_allow",
                    format!(
                        "MCP server `{server}` maps host variable `{host}` into `{inside}`, \
                         which this server does not allow"
                    ),
                ));
            }
            if let Ok(value) = std::env::var(host) {
                env.insert(inside.clone(), value);
            }
        }
        Ok(env)
    }

    fn check_url(&self, server: &str, url: &str) -> Result<()> {
        let parsed = reqwest::Url::parse(url)
            .map_err(|e| RuntimeError::invalid("spec.mcp_servers.url", e.to_string()))?;
        if self.allowed_urls.iter().any(|p| p.matches(&parsed)) {
            Ok(())
        } else {
            Err(denied(
                "mcp.allowed_urls",
                format!("MCP server `{server}` is at {url}, which this server does not allow"),
            ))
        }
    }

    fn operator_server(&self, name: &str) -> Result<McpLaunch> {
        let Some(server) = self.servers.get(name) else {
            let offered: Vec<&str> = self.servers.keys().map(String::as_str).collect();
            return Err(denied(
                &format!("mcp.servers.{name}"),
                format!(
                    "the bundle asks for the server's MCP server `{name}`, which this server \
                     does not offer{}",
                    if offered.is_empty() {
                        String::new()
                    } else {
                        format!(" (it offers: {})", offered.join(", "))
                    }
                ),
            ));
        };
        Ok(match &server.url {
            Some(url) => McpLaunch::Http {
                url: url.clone(),
                headers: server.headers.clone(),
            },
            None => McpLaunch::Stdio {
                command: server.command.clone(),
                env: server.env.clone(),
            },
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
    use crate::bundle::McpServerSpec;

    fn bundle(servers: Vec<(&str, McpServerSource)>) -> BundleManifest {
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
            mcp_servers: servers.iter().map(|(n, _)| (*n).to_owned()).collect(),
            a2a_agents: Vec::new(),
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
            mcp_servers: servers
                .into_iter()
                .map(|(name, source)| McpServerSpec {
                    name: name.to_owned(),
                    source,
                })
                .collect(),
            a2a_agents: Vec::new(),
        }
    }

    fn refusal(settings: &McpSettings, manifest: &BundleManifest, access: &AccessLimits) -> String {
        match settings.resolve(manifest, manifest.default_agent(), access) {
            Err(RuntimeError::PermissionDenied { setting, message }) => {
                format!("{setting}: {message}")
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn what_a_bundle_asks_for_is_refused_unless_the_operator_allows_it() {
        let settings = McpSettings::default();
        let access = AccessLimits::default();
        let stdio = bundle(vec![(
            "fs",
            McpServerSource::Stdio {
                command: vec!["node".into()],
                env: BTreeMap::from([("TOKEN".into(), "MCP_TEST_HOST_VAR".into())]),
            },
        )]);
        let err = refusal(&settings, &stdio, &access);
        assert!(
            err.starts_with("sandbox.env_allow: ") && err.contains("MCP_TEST_HOST_VAR"),
            "{err}"
        );
        let allowed = AccessLimits {
            env_allowlist: vec!["MCP_TEST_HOST_VAR".into()],
            ..AccessLimits::default()
        };
        let resolved = settings
            .resolve(&stdio, stdio.default_agent(), &allowed)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            matches!(&resolved[0].launch, McpLaunch::Stdio { command, .. } if command == &["node"])
        );

        let remote = bundle(vec![(
            "docs",
            McpServerSource::Url("https://mcp.example.com/mcp".into()),
        )]);
        let err = refusal(&settings, &remote, &access);
        assert!(
            err.starts_with("mcp.allowed_urls: ") && err.contains("https://mcp.example.com/mcp"),
            "{err}"
        );
        let open = McpSettings {
            allowed_urls: vec![
                "https://mcp.example.com/*"
                    .parse()
                    .unwrap_or_else(|e| panic!("{e}")),
            ],
            ..McpSettings::default()
        };
        let resolved = open
            .resolve(&remote, remote.default_agent(), &access)
            .unwrap_or_else(|e| panic!("{e}"));
        // A bundle's remote server never gets the operator's headers.
        assert!(
            matches!(&resolved[0].launch, McpLaunch::Http { headers, .. } if headers.is_empty())
        );

        let named = bundle(vec![("github", McpServerSource::Operator)]);
        let err = refusal(&settings, &named, &access);
        assert!(err.starts_with("mcp.servers.github: "), "{err}");
        let offered = McpSettings {
            servers: BTreeMap::from([(
                "github".into(),
                OperatorMcpServer {
                    command: vec!["github-mcp".into()],
                    env: BTreeMap::from([("GITHUB_TOKEN".into(), "ghp_secret".into())]),
                    ..OperatorMcpServer::default()
                },
            )]),
            ..McpSettings::default()
        };
        let resolved = offered
            .resolve(&named, named.default_agent(), &access)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            matches!(&resolved[0].launch, McpLaunch::Stdio { env, .. } if env["GITHUB_TOKEN"] == "ghp_secret")
        );
        // Keys never reach a log line through Debug.
        assert!(!format!("{resolved:?}{offered:?}").contains("ghp_secret"));
    }
}
