//! The JSON-RPC side of a delegating call: the agent card (fetched once, reused for a
//! while), then `SendStreamingMessage` and `CancelTask` against the card's JSON-RPC
//! interface. Only the operator's headers are sent, and only to the origin of the URL they
//! were configured for; redirects are not followed, so they never go anywhere else.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::Url;
use serde_json::{Value, json};

use super::settings::ResolvedA2aAgent;
use super::wire::{
    AgentCard, JSONRPC_BINDING, Message, PROTOCOL_VERSION, RpcResponse, StreamItem, WELL_KNOWN_CARD,
};
use crate::provider::sse_parser::SseParser;

/// The largest agent card read.
const MAX_CARD_BYTES: usize = 256 * 1024;
/// The largest single item of a task's stream.
const MAX_ITEM_BYTES: usize = 1024 * 1024;
/// How long a `CancelTask` sent on the way out may take.
pub const CANCEL_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a call to a remote agent failed. Messages name the agent by its public URL (no
/// query, no credentials) and never quote a header.
#[derive(Debug, thiserror::Error)]
pub enum A2aCallError {
    #[error("cannot read the agent card of `{agent}` at {url}: {message}")]
    Card {
        agent: String,
        url: String,
        message: String,
    },
    #[error("`{agent}` cannot be called: {message}")]
    Endpoint { agent: String, message: String },
    #[error("`{agent}` did not answer: {message}")]
    Transport { agent: String, message: String },
    #[error("`{agent}` answered with an error ({code}): {message}")]
    Remote {
        agent: String,
        code: i64,
        message: String,
    },
    #[error("`{agent}` sent what is not A2A: {message}")]
    Protocol { agent: String, message: String },
}

/// `url` as it may be shown: no userinfo, no query, no fragment.
pub fn public_url(url: &str) -> String {
    match Url::parse(url) {
        Ok(mut parsed) => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.set_query(None);
            parsed.set_fragment(None);
            parsed.to_string()
        }
        Err(_) => "<not a URL>".to_owned(),
    }
}

/// Where the JSON-RPC interface of an agent is, as its card says.
#[derive(Clone, Debug)]
pub struct Endpoint {
    pub url: Url,
    pub tenant: String,
}

/// The HTTP client of every delegating call, with the cards read so far.
pub struct A2aClient {
    /// Why the client could not be built, if it could not (every call then fails saying
    /// so, rather than falling back to a client that follows redirects).
    http: Result<reqwest::Client, String>,
    cards: Mutex<HashMap<String, (Instant, Endpoint)>>,
    card_ttl: Duration,
}

impl std::fmt::Debug for A2aClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aClient").finish_non_exhaustive()
    }
}

impl A2aClient {
    pub fn new(card_ttl: Duration) -> Self {
        crate::provider::install_crypto_provider();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| crate::error::chain(&e));
        Self {
            http,
            cards: Mutex::new(HashMap::new()),
            card_ttl,
        }
    }

    /// The agent's JSON-RPC endpoint, from its card (cached for the card's time to live).
    /// The endpoint must be on the origin of the agent's URL, and, for an agent the bundle
    /// points at, allowed by the operator's patterns too.
    pub async fn endpoint(&self, agent: &ResolvedA2aAgent) -> Result<Endpoint, A2aCallError> {
        let cached = crate::sync::lock(&self.cards)
            .get(&agent.url)
            .filter(|(at, _)| at.elapsed() < self.card_ttl)
            .map(|(_, endpoint)| endpoint.clone());
        let endpoint = match cached {
            Some(endpoint) => endpoint,
            None => {
                let endpoint = self.read_card(agent).await?;
                crate::sync::lock(&self.cards)
                    .insert(agent.url.clone(), (Instant::now(), endpoint.clone()));
                endpoint
            }
        };
        // Checked for each agent, cached or not: agents of several bundles and the
        // operator may share a URL under different allowances.
        check_endpoint(agent, &endpoint)?;
        Ok(endpoint)
    }

    /// Forgets a card, so the next call reads it again (after a call failed at its
    /// endpoint, the agent may have moved).
    pub fn forget(&self, agent: &ResolvedA2aAgent) {
        crate::sync::lock(&self.cards).remove(&agent.url);
    }

    async fn read_card(&self, agent: &ResolvedA2aAgent) -> Result<Endpoint, A2aCallError> {
        let card_error = |message: String| A2aCallError::Card {
            agent: agent.name.clone(),
            url: public_url(&agent.url),
            message,
        };
        let base = Url::parse(&agent.url).map_err(|e| card_error(e.to_string()))?;
        let card_url = if base.path().ends_with(".json") {
            base.clone()
        } else {
            let mut dir = base.clone();
            if !dir.path().ends_with('/') {
                dir.set_path(&format!("{}/", dir.path()));
            }
            dir.join(WELL_KNOWN_CARD)
                .map_err(|e| card_error(e.to_string()))?
        };
        let response = self
            .request(agent, reqwest::Method::GET, card_url)?
            .timeout(Duration::from_secs(30))
            .send()
            .await
            .map_err(|e| card_error(crate::error::chain(&e.without_url())))?;
        if !response.status().is_success() {
            return Err(card_error(format!("HTTP {}", response.status())));
        }
        let body = read_limited(response, MAX_CARD_BYTES)
            .await
            .map_err(card_error)?;
        let card: AgentCard = serde_json::from_slice(&body)
            .map_err(|e| card_error(format!("not an agent card: {e}")))?;
        let interface = card
            .supported_interfaces
            .iter()
            .find(|i| {
                i.protocol_binding.eq_ignore_ascii_case(JSONRPC_BINDING)
                    && (i.protocol_version.is_empty()
                        || i.protocol_version.starts_with(PROTOCOL_VERSION))
            })
            .ok_or_else(|| {
                card_error(format!(
                    "the card offers no JSON-RPC interface of A2A {PROTOCOL_VERSION}"
                ))
            })?;
        let url = base
            .join(&interface.url)
            .map_err(|e| card_error(format!("the JSON-RPC interface's URL: {e}")))?;
        Ok(Endpoint {
            url,
            tenant: interface.tenant.clone(),
        })
    }

    fn request(
        &self,
        agent: &ResolvedA2aAgent,
        method: reqwest::Method,
        url: Url,
    ) -> Result<reqwest::RequestBuilder, A2aCallError> {
        let http = self.http.as_ref().map_err(|why| A2aCallError::Endpoint {
            agent: agent.name.clone(),
            message: format!("the HTTP client could not be built: {why}"),
        })?;
        let mut request = http
            .request(method, url)
            .header("A2A-Version", PROTOCOL_VERSION);
        for (name, value) in &agent.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        Ok(request)
    }

    fn call(
        &self,
        agent: &ResolvedA2aAgent,
        endpoint: &Endpoint,
        method: &str,
        mut params: Value,
    ) -> Result<reqwest::RequestBuilder, A2aCallError> {
        if !endpoint.tenant.is_empty()
            && let Some(params) = params.as_object_mut()
        {
            params.insert("tenant".into(), Value::from(endpoint.tenant.clone()));
        }
        let body = json!({
            "jsonrpc": "2.0",
            "id": uuid::Uuid::now_v7().to_string(),
            "method": method,
            "params": params,
        });
        Ok(self
            .request(agent, reqwest::Method::POST, endpoint.url.clone())?
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string()))
    }

    /// Sends `message` and returns the task's stream.
    pub async fn send_streaming(
        &self,
        agent: &ResolvedA2aAgent,
        endpoint: &Endpoint,
        message: &Message,
    ) -> Result<TaskStream, A2aCallError> {
        let params = json!({ "message": message });
        let response = self
            .call(agent, endpoint, "SendStreamingMessage", params)?
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| A2aCallError::Transport {
                agent: agent.name.clone(),
                message: crate::error::chain(&e.without_url()),
            })?;
        let status = response.status();
        let is_stream = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_stream {
            // A refusal before the stream starts is one JSON-RPC response.
            let body = read_limited(response, MAX_ITEM_BYTES)
                .await
                .unwrap_or_default();
            return Err(match serde_json::from_slice::<RpcResponse<Value>>(&body) {
                Ok(RpcResponse {
                    error: Some(error), ..
                }) => A2aCallError::Remote {
                    agent: agent.name.clone(),
                    code: error.code,
                    message: crate::text::shorten(&error.message, 512),
                },
                _ => A2aCallError::Protocol {
                    agent: agent.name.clone(),
                    message: format!("HTTP {status} without an event stream"),
                },
            });
        }
        Ok(TaskStream {
            agent: agent.name.clone(),
            body: response.bytes_stream().boxed(),
            parser: SseParser::new(),
            ended: false,
            pending: 0,
        })
    }

    /// Asks the agent to stop `task_id`. Failures are only logged: the call is over either
    /// way.
    pub async fn cancel(&self, agent: &ResolvedA2aAgent, endpoint: &Endpoint, task_id: &str) {
        let request = match self.call(agent, endpoint, "CancelTask", json!({ "id": task_id })) {
            Ok(request) => request,
            Err(e) => {
                tracing::warn!(agent = %agent.name, task = %task_id, "cannot cancel the remote A2A task: {e}");
                return;
            }
        };
        let sent = request.timeout(CANCEL_TIMEOUT).send().await;
        match sent {
            Ok(response) if response.status().is_success() => {
                tracing::debug!(agent = %agent.name, task = %task_id, "remote A2A task cancelled");
            }
            Ok(response) => {
                tracing::warn!(agent = %agent.name, task = %task_id, status = %response.status(), "the remote A2A agent refused to cancel its task");
            }
            Err(e) => {
                tracing::warn!(agent = %agent.name, task = %task_id, error = %crate::error::chain(&e.without_url()), "cannot cancel the remote A2A task");
            }
        }
    }
}

/// The endpoint a card names must be on the origin of the agent's URL (where the
/// operator's headers were meant to go), and, for an agent the bundle points at, allowed
/// by the operator's patterns too.
fn check_endpoint(agent: &ResolvedA2aAgent, endpoint: &Endpoint) -> Result<(), A2aCallError> {
    let endpoint_error = |message: String| A2aCallError::Endpoint {
        agent: agent.name.clone(),
        message,
    };
    let base = Url::parse(&agent.url).map_err(|e| endpoint_error(e.to_string()))?;
    let url = &endpoint.url;
    if url.origin() != base.origin() {
        return Err(endpoint_error(format!(
            "its card points at {}, not at the origin of {}",
            public_url(url.as_str()),
            public_url(&agent.url)
        )));
    }
    if !agent.allowed_urls.is_empty() && !agent.allowed_urls.iter().any(|p| p.matches(url)) {
        return Err(endpoint_error(format!(
            "its card points at {}, which `a2a.allowed_urls` does not allow",
            public_url(url.as_str())
        )));
    }
    Ok(())
}

/// Reads a body of at most `limit` bytes.
async fn read_limited(response: reqwest::Response, limit: usize) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| crate::error::chain(&e.without_url()))?;
        if body.len() + chunk.len() > limit {
            return Err(format!("the answer is larger than {limit} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The items of one task's stream, as they arrive.
pub struct TaskStream {
    agent: String,
    body: BoxStream<'static, Result<Bytes, reqwest::Error>>,
    parser: SseParser,
    ended: bool,
    /// Bytes read since the last whole event: a stream that never finishes an event must
    /// not grow the buffer without end.
    pending: usize,
}

impl TaskStream {
    /// The next item; `None` when the agent closed the stream.
    pub async fn next(&mut self) -> Option<Result<StreamItem, A2aCallError>> {
        let protocol = |message: String| A2aCallError::Protocol {
            agent: self.agent.clone(),
            message,
        };
        loop {
            match self.parser.next_event() {
                Ok(Some(event)) if event.data.trim().is_empty() => {
                    self.pending = 0;
                    continue;
                }
                Ok(Some(event)) => {
                    self.pending = 0;
                    if event.data.len() > MAX_ITEM_BYTES {
                        self.ended = true;
                        return Some(Err(protocol(format!(
                            "a stream item is larger than {MAX_ITEM_BYTES} bytes"
                        ))));
                    }
                    return Some(
                        match serde_json::from_str::<RpcResponse<StreamItem>>(&event.data) {
                            Ok(RpcResponse {
                                error: Some(error), ..
                            }) => Err(A2aCallError::Remote {
                                agent: self.agent.clone(),
                                code: error.code,
                                message: crate::text::shorten(&error.message, 512),
                            }),
                            Ok(RpcResponse {
                                result: Some(item), ..
                            }) => Ok(item),
                            Ok(_) => Err(protocol("a response with no result".to_owned())),
                            Err(e) => Err(protocol(format!("a stream item: {e}"))),
                        },
                    );
                }
                Ok(None) if self.ended => return None,
                Ok(None) => {}
                Err(e) => {
                    self.ended = true;
                    return Some(Err(protocol(format!("the event stream: {e}"))));
                }
            }
            match self.body.next().await {
                Some(Ok(chunk)) => {
                    self.pending += chunk.len();
                    if self.pending > MAX_ITEM_BYTES * 2 {
                        self.ended = true;
                        return Some(Err(protocol(format!(
                            "more than {} bytes without a whole stream item",
                            MAX_ITEM_BYTES * 2
                        ))));
                    }
                    self.parser.push(&chunk);
                }
                Some(Err(e)) => {
                    self.ended = true;
                    return Some(Err(A2aCallError::Transport {
                        agent: self.agent.clone(),
                        message: format!(
                            "connection lost mid-stream: {}",
                            crate::error::chain(&e.without_url())
                        ),
                    }));
                }
                None => self.ended = true,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn agent(url: &str, allowed: &[&str]) -> ResolvedA2aAgent {
        ResolvedA2aAgent {
            name: "helper".into(),
            url: url.into(),
            headers: BTreeMap::new(),
            allowed_urls: allowed
                .iter()
                .map(|p| p.parse().unwrap_or_else(|e| panic!("{e}")))
                .collect(),
        }
    }

    fn endpoint(url: &str) -> Endpoint {
        Endpoint {
            url: Url::parse(url).unwrap_or_else(|e| panic!("{e}")),
            tenant: String::new(),
        }
    }

    #[test]
    fn a_card_may_only_point_at_its_own_origin_and_at_what_the_operator_allows() {
        let operator = agent("https://agents.example.com/?key=secret", &[]);
        assert!(check_endpoint(&operator, &endpoint("https://agents.example.com/rpc")).is_ok());
        let moved = check_endpoint(&operator, &endpoint("https://evil.example.net/rpc"))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            moved.contains("not at the origin of https://agents.example.com/"),
            "{moved}"
        );
        assert!(!moved.contains("secret"), "{moved}");
        assert!(check_endpoint(&operator, &endpoint("http://agents.example.com/rpc")).is_err());

        let bundle = agent(
            "https://agents.example.com/helper/",
            &["https://agents.example.com/helper/*"],
        );
        assert!(
            check_endpoint(&bundle, &endpoint("https://agents.example.com/helper/rpc")).is_ok()
        );
        let outside = check_endpoint(&bundle, &endpoint("https://agents.example.com/admin/rpc"))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            outside.contains("`a2a.allowed_urls` does not allow"),
            "{outside}"
        );
    }

    #[test]
    fn shown_urls_have_no_query_and_no_credentials() {
        assert_eq!(
            public_url("https://user:pw@agents.example.com/a?key=1#f"),
            "https://agents.example.com/a"
        );
        assert_eq!(public_url("not a url"), "<not a URL>");
    }
}
