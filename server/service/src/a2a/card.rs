//! Agent cards on the HTTP listener, generated from the installed bundles: the server's
//! default agent at `/.well-known/agent-card.json`, and every installed agent at
//! `/a2a/agents/{bundle}/{agent}/agent-card.json` (`{bundle}` is the bundle's name, or
//! `namespace%2Fname` outside the `local` namespace). Cards are public, as A2A discovery
//! needs: they tell an agent's name, description, skills and how to reach it (gRPC on the
//! gRPC port, JSON-RPC and HTTP+JSON on this listener), and declare the bearer token the API itself needs.

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
    let urls = Urls {
        grpc: grpc_url(parts, cards.options.grpc_port),
        jsonrpc: http_url(parts, cards.options.http_tls, super::jsonrpc::PATH),
        rest: http_url(parts, cards.options.http_tls, super::rest::BASE),
    };
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
    /// The JSON-RPC binding's URL on this listener.
    pub jsonrpc: String,
    /// The HTTP+JSON binding's base URL on this listener.
    pub rest: String,
}

/// The authority the client named to reach this listener (the host check let it through).
fn named_authority(parts: &http::request::Parts) -> Option<http::uri::Authority> {
    parts.uri.authority().cloned().or_else(|| {
        parts
            .headers
            .get(http::header::HOST)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.parse::<http::uri::Authority>().ok())
    })
}

/// `host:port` of the gRPC listener as the client reached this one: the host it named
/// with the gRPC port.
fn grpc_url(parts: &http::request::Parts, port: u16) -> String {
    let named = named_authority(parts)
        .map(|a| a.host().to_owned())
        .unwrap_or_else(|| "localhost".to_owned());
    format!("{named}:{port}")
}

/// The URL of `path` on this listener, as the client reached it.
fn http_url(parts: &http::request::Parts, tls: bool, path: &str) -> String {
    let authority = named_authority(parts)
        .map(|a| a.as_str().to_owned())
        .unwrap_or_else(|| "localhost".to_owned());
    let scheme = if tls { "https" } else { "http" };
    format!("{scheme}://{authority}{path}")
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
        supported_interfaces: vec![
            pb::AgentInterface {
                url: urls.grpc,
                protocol_binding: "GRPC".into(),
                tenant: tenant_of(bundle, agent),
                protocol_version: PROTOCOL_VERSION.into(),
            },
            pb::AgentInterface {
                url: urls.jsonrpc,
                protocol_binding: "JSONRPC".into(),
                tenant: tenant_of(bundle, agent),
                protocol_version: PROTOCOL_VERSION.into(),
            },
            pb::AgentInterface {
                url: urls.rest,
                protocol_binding: "HTTP+JSON".into(),
                tenant: tenant_of(bundle, agent),
                protocol_version: PROTOCOL_VERSION.into(),
            },
        ],
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
            extended_agent_card: Some(false),
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
