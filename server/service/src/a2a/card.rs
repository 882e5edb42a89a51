//! Agent cards on the HTTP listener, generated from the installed bundles: the server's
//! default agent at `/.well-known/agent-card.json`, and every installed agent at
//! `/a2a/agents/{bundle}/{agent}/agent-card.json` (`{bundle}` is the bundle's name, or
//! `namespace%2Fname` outside the `local` namespace). Cards are public, as A2A discovery
//! needs: they tell an agent's name, description, skills and how to reach it (gRPC on the
//! gRPC port, JSON-RPC and HTTP+JSON on this listener), and declare the bearer token the API itself needs.
//!
//! The extended card ([`extended_card`], `GetExtendedAgentCard` on every binding, behind
//! the token) is the same card with what only a client of the server needs to know: the
//! agent's model, tools and permission rules, sub-agents, MCP servers and the sandbox it
//! asks for ([`DETAILS_EXTENSION`]). Never a secret: no environment mappings, no URLs of
//! MCP servers, no provider settings.

use axum::Json;
use axum::Router;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use odyssey_api::a2a::v1 as pb;
use odyssey_runtime::bundle::{AgentDefinition, DEFAULT_NAMESPACE, InstalledBundle};
use odyssey_runtime::{OdysseyRuntime, RuntimeError};

use super::tenant;
use crate::http::HttpError;

/// The A2A protocol version this server speaks.
pub const PROTOCOL_VERSION: &str = "1.0";

/// The name of the bearer scheme in cards.
pub const BEARER_SCHEME: &str = "bearer";

/// The extension under which the extended card tells the agent's details.
pub const DETAILS_EXTENSION: &str = "urn:odyssey:a2a:agent-details:v1";

/// Where the server's A2A bindings listen, for the interfaces of cards asked for on any
/// of them.
#[derive(Clone, Copy, Debug, Default)]
pub struct Site {
    /// The gRPC port, which serves `lf.a2a.v1.A2AService`.
    pub grpc_port: u16,
    /// The HTTP listener's port (JSON-RPC and HTTP+JSON), when it runs.
    pub http_port: Option<u16>,
    /// Whether the HTTP listener speaks HTTPS.
    pub http_tls: bool,
    /// Whether calls need `authorization: Bearer <token>`.
    pub bearer: bool,
}

/// The listener a card was asked for on, and the authority the client named to reach it.
#[derive(Clone, Debug)]
pub enum Reached {
    /// The HTTP listener (cards, JSON-RPC, HTTP+JSON).
    Http(Option<http::uri::Authority>),
    /// The gRPC port.
    Grpc(Option<http::uri::Authority>),
}

impl Site {
    /// Where a client that reached the server as `reached` finds each binding: the host
    /// it named, with each listener's port (the one it reached as it named it).
    pub fn urls(&self, reached: &Reached) -> Urls {
        let http = |authority: Option<String>, path: &str| {
            let scheme = if self.http_tls { "https" } else { "http" };
            authority.map(|authority| format!("{scheme}://{authority}{path}"))
        };
        match reached {
            Reached::Http(named) => {
                let authority = named
                    .as_ref()
                    .map(|a| a.as_str().to_owned())
                    .unwrap_or_else(|| "localhost".to_owned());
                Urls {
                    grpc: format!("{}:{}", host_of(named.as_ref()), self.grpc_port),
                    jsonrpc: http(Some(authority.clone()), super::jsonrpc::PATH),
                    rest: http(Some(authority), super::rest::BASE),
                }
            }
            Reached::Grpc(named) => {
                let host = host_of(named.as_ref());
                let grpc = named
                    .as_ref()
                    .filter(|a| a.port_u16().is_some())
                    .map(|a| a.as_str().to_owned())
                    .unwrap_or_else(|| format!("{host}:{}", self.grpc_port));
                let authority = self.http_port.map(|port| format!("{host}:{port}"));
                Urls {
                    grpc,
                    jsonrpc: http(authority.clone(), super::jsonrpc::PATH),
                    rest: http(authority, super::rest::BASE),
                }
            }
        }
    }
}

/// The host of `named` (an IPv6 literal in brackets), `localhost` without one.
fn host_of(named: Option<&http::uri::Authority>) -> String {
    named
        .map(|a| a.host().to_owned())
        .unwrap_or_else(|| "localhost".to_owned())
}

/// What a card says about how the server is reached.
#[derive(Clone, Debug, Default)]
pub struct CardOptions {
    /// The gRPC port, which serves `lf.a2a.v1.A2AService`.
    pub grpc_port: u16,
    /// Whether calls need `authorization: Bearer <token>`.
    pub bearer: bool,
    /// Whether the HTTP listener (which serves the JSON-RPC binding) speaks HTTPS.
    pub http_tls: bool,
    /// The A2A settings: the default agent (`a2a.default_agent`), whose card is the
    /// well-known one, and where push notifications may go.
    pub a2a: super::A2aOptions,
}

#[derive(Clone)]
struct Cards {
    runtime: OdysseyRuntime,
    options: CardOptions,
}

/// The card routes, with no authentication of their own.
pub fn routes(runtime: OdysseyRuntime, options: CardOptions) -> Router {
    Router::new()
        .route("/.well-known/agent-card.json", get(default_card))
        .route(
            "/a2a/agents/{bundle}/{agent}/agent-card.json",
            get(agent_card),
        )
        .with_state(Cards { runtime, options })
}

async fn default_card(State(cards): State<Cards>, parts: http::request::Parts) -> Response {
    let default = cards.options.a2a.default_agent.as_deref();
    let agent = match tenant::resolve(&cards.runtime, "", default).await {
        Ok(agent) => agent,
        Err(status) => {
            return HttpError::from(RuntimeError::not_found(
                "default agent",
                status.message().to_owned(),
            ))
            .into_response();
        }
    };
    served(&cards, &parts, &agent.reference, &agent.agent_id).await
}

async fn agent_card(
    State(cards): State<Cards>,
    Path((bundle, agent)): Path<(String, String)>,
    parts: http::request::Parts,
) -> Response {
    served(&cards, &parts, &bundle, &agent).await
}

async fn served(
    cards: &Cards,
    parts: &http::request::Parts,
    reference: &str,
    agent_id: &str,
) -> Response {
    let bundle = match cards.runtime.inspect_bundle(reference).await {
        Ok(bundle) => bundle,
        Err(e) => return HttpError::from(e).into_response(),
    };
    let Some(agent) = bundle.manifest.agent(agent_id) else {
        return HttpError::from(RuntimeError::not_found(
            "agent",
            format!("{agent_id} (bundle {} has no such agent)", bundle.id),
        ))
        .into_response();
    };
    let site = Site {
        grpc_port: cards.options.grpc_port,
        http_port: None,
        http_tls: cards.options.http_tls,
        bearer: cards.options.bearer,
    };
    let named = crate::grpc::host::NamedHost::of(&parts.uri, &parts.headers).map(|n| n.0);
    let urls = site.urls(&Reached::Http(named));
    let mut card = card(&bundle, agent, urls, cards.options.bearer);
    if let Some(capabilities) = card.capabilities.as_mut() {
        capabilities.push_notifications = Some(!cards.options.a2a.push_allowed_urls.is_empty());
    }
    match odyssey_api::json::to_value(&card) {
        Ok(json) => ([(http::header::CACHE_CONTROL, "max-age=60")], Json(json)).into_response(),
        Err(e) => HttpError::unencodable(&e).into_response(),
    }
}

/// Where a card says the agent is reached.
pub struct Urls {
    /// `host:port` of the gRPC listener.
    pub grpc: String,
    /// The JSON-RPC binding's URL on the HTTP listener, when it runs.
    pub jsonrpc: Option<String>,
    /// The HTTP+JSON binding's base URL on the HTTP listener, when it runs.
    pub rest: Option<String>,
}

/// The tenant that names `agent` of `bundle` in A2A requests.
pub fn tenant_of(bundle: &InstalledBundle, agent: &AgentDefinition) -> String {
    let id = &bundle.id;
    if id.namespace == DEFAULT_NAMESPACE {
        format!("{}.{}", id.name, agent.id)
    } else {
        format!("{}/{}.{}", id.namespace, id.name, agent.id)
    }
}

/// The card of `agent`, reached over gRPC, JSON-RPC and HTTP+JSON at `urls`.
pub fn card(
    bundle: &InstalledBundle,
    agent: &AgentDefinition,
    urls: Urls,
    bearer: bool,
) -> pb::AgentCard {
    let description = [&agent.description, &bundle.manifest.description]
        .into_iter()
        .find(|d| !d.trim().is_empty())
        .cloned()
        .unwrap_or_else(|| format!("Agent {} of bundle {}", agent.id, bundle.id.name));
    let text = || vec!["text/plain".to_owned()];
    let mut skills: Vec<pb::AgentSkill> = bundle
        .manifest
        .skills
        .iter()
        .filter(|s| s.error.is_none())
        .map(|s| pb::AgentSkill {
            id: s.name.clone(),
            name: s.name.clone(),
            description: s.description.clone(),
            tags: vec!["skill".into()],
            ..Default::default()
        })
        .collect();
    if skills.is_empty() {
        // A card lists what the agent does; without skills of its own, that is the agent.
        skills.push(pb::AgentSkill {
            id: agent.id.clone(),
            name: agent.name.clone(),
            description: description.clone(),
            tags: vec!["agent".into()],
            ..Default::default()
        });
    }
    let (security_schemes, security_requirements) = if bearer {
        (
            [(
                BEARER_SCHEME.to_owned(),
                pb::SecurityScheme {
                    scheme: Some(pb::security_scheme::Scheme::HttpAuthSecurityScheme(
                        pb::HttpAuthSecurityScheme {
                            description: "the server's API token".into(),
                            scheme: "Bearer".into(),
                            bearer_format: String::new(),
                        },
                    )),
                },
            )]
            .into(),
            vec![pb::SecurityRequirement {
                schemes: [(BEARER_SCHEME.to_owned(), pb::StringList::default())].into(),
            }],
        )
    } else {
        Default::default()
    };
    pb::AgentCard {
        name: agent.name.clone(),
        description,
        supported_interfaces: [
            (Some(urls.grpc), "GRPC"),
            (urls.jsonrpc, "JSONRPC"),
            (urls.rest, "HTTP+JSON"),
        ]
        .into_iter()
        .filter_map(|(url, binding)| {
            Some(pb::AgentInterface {
                url: url?,
                protocol_binding: binding.into(),
                tenant: tenant_of(bundle, agent),
                protocol_version: PROTOCOL_VERSION.into(),
            })
        })
        .collect(),
        provider: None,
        version: agent.version.clone(),
        documentation_url: None,
        capabilities: Some(pb::AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(false),
            extensions: vec![
                super::answer::extension(),
                super::task::sequence_extension(),
            ],
            // Behind the token: `GetExtendedAgentCard` on every binding.
            extended_agent_card: Some(true),
        }),
        security_schemes,
        security_requirements,
        default_input_modes: text(),
        default_output_modes: text(),
        skills,
        signatures: Vec::new(),
        icon_url: None,
    }
}

/// The extended card of `agent`: its card, with whether push notifications are offered
/// and the agent's details ([`DETAILS_EXTENSION`]).
pub fn extended_card(
    bundle: &InstalledBundle,
    agent: &AgentDefinition,
    urls: Urls,
    bearer: bool,
    push: bool,
) -> pb::AgentCard {
    let mut card = card(bundle, agent, urls, bearer);
    if let Some(capabilities) = card.capabilities.as_mut() {
        capabilities.push_notifications = Some(push);
        capabilities
            .extensions
            .push(details_extension(bundle, agent));
    }
    card
}

/// What the agent is made of, as the bundle declares it: a client of the server reads
/// what the agent may do before it sends a task. The sandbox and MCP servers are what the
/// bundle asks for; the operator's configuration may narrow them.
pub fn details(bundle: &InstalledBundle, agent: &AgentDefinition) -> serde_json::Value {
    let sandbox = &bundle.manifest.sandbox;
    serde_json::json!({
        "bundle": {
            "namespace": bundle.id.namespace,
            "name": bundle.id.name,
            "version": bundle.manifest.version.to_string(),
        },
        "agent": agent.id,
        "model": {"provider": agent.model.provider, "name": agent.model.name},
        "tools": bundle.manifest.tools.iter().map(|t| &t.name).collect::<Vec<_>>(),
        "permissions": {
            "allow": agent.tools.allow,
            "ask": agent.tools.ask,
            "deny": agent.tools.deny,
        },
        "subAgents": agent.delegates,
        "mcpServers": agent.mcp_servers,
        "memory": agent.memory.enabled,
        "sandbox": {
            "mode": sandbox.mode.as_str(),
            "network": sandbox.network,
            "cpu": sandbox.cpu,
            "memoryMb": sandbox.memory_mb,
        },
    })
}

fn details_extension(bundle: &InstalledBundle, agent: &AgentDefinition) -> pb::AgentExtension {
    let params = crate::grpc::convert::json_to_value(&details(bundle, agent));
    pb::AgentExtension {
        uri: DETAILS_EXTENSION.into(),
        description: "What the agent is made of, as its bundle declares it: model, tools and \
                      permission rules (ask: a call waits for a person, the task turns \
                      input-required), sub-agents, MCP servers, memory, and the sandbox it \
                      asks for (the operator may narrow it)."
            .into(),
        required: false,
        params: match params.kind {
            Some(prost_types::value::Kind::StructValue(s)) => Some(s),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(http_port: Option<u16>) -> Site {
        Site {
            grpc_port: 8472,
            http_port,
            http_tls: true,
            bearer: true,
        }
    }

    #[test]
    fn a_card_asked_for_over_grpc_names_the_host_the_client_dialled_for_every_binding() {
        let named = "[::1]:9000".parse().ok();
        let urls = site(Some(8474)).urls(&Reached::Grpc(named));
        assert_eq!(urls.grpc, "[::1]:9000");
        assert_eq!(
            urls.jsonrpc.as_deref(),
            Some("https://[::1]:8474/a2a/jsonrpc")
        );
        assert_eq!(urls.rest.as_deref(), Some("https://[::1]:8474/a2a"));
    }

    #[test]
    fn without_the_http_listener_a_card_asked_for_over_grpc_offers_grpc_alone() {
        let urls = site(None).urls(&Reached::Grpc("example.com".parse().ok()));
        assert_eq!(urls.grpc, "example.com:8472");
        assert_eq!((urls.jsonrpc, urls.rest), (None, None));
    }

    #[test]
    fn a_card_asked_for_over_http_names_the_listener_as_reached_and_the_grpc_port() {
        let urls = site(Some(1)).urls(&Reached::Http("odyssey.example:443".parse().ok()));
        assert_eq!(urls.grpc, "odyssey.example:8472");
        assert_eq!(
            urls.jsonrpc.as_deref(),
            Some("https://odyssey.example:443/a2a/jsonrpc")
        );
    }
}
