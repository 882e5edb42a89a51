//! One MCP server of a session in use: a stdio server (the sandboxed process and the
//! `rmcp` client speaking to it over its standard input and output), or a remote one
//! (the `rmcp` client speaking streamable HTTP to the operator-allowed URL).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationCapability, FormElicitationCapability, Implementation, JsonRpcMessage,
    ServerNotification, Tool as McpTool,
};
use rmcp::service::{
    MaybeSendFuture, NotificationContext, RequestContext, RunningService, RxJsonRpcMessage,
    TxJsonRpcMessage,
};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, Transport};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use tokio_util::sync::CancellationToken;

use super::elicit::Elicitation;
use crate::sandbox::{CellPaths, ExecRequest, Sandbox, ServiceLog, ServiceProcess};
use crate::tools::ToolContext;

/// Why a server could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    #[error("it could not be started: {0}")]
    Start(#[from] crate::sandbox::SandboxError),
    #[error("it did not answer `initialize` and `tools/list` within {0:?}")]
    StartTimeout(Duration),
    #[error("it failed to initialize: {0}")]
    Initialize(String),
    #[error("it failed to list its tools: {0}")]
    ListTools(String),
    #[error("the call did not finish within {0:?}")]
    CallTimeout(Duration),
    #[error("it ended during the call")]
    Ended,
    #[error("the call failed: {0}")]
    Call(String),
}

impl ConnectionError {
    /// Whether the server can no longer be used and must be started again.
    pub fn is_fatal(&self) -> bool {
        !matches!(self, Self::Call(_))
    }
}

/// Notes what the server tells the client (`tools/list_changed` marks the tool list
/// stale), and puts its requests for input (`elicitation/create`) to a person.
#[derive(Clone, Debug)]
struct Handler {
    tools_changed: Arc<AtomicBool>,
    elicitation: Arc<Elicitation>,
}

impl Handler {
    fn new(elicitation: Arc<Elicitation>) -> Self {
        Self {
            tools_changed: Arc::default(),
            elicitation,
        }
    }
}

impl ClientHandler for Handler {
    fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> impl Future<Output = Result<ElicitResult, rmcp::ErrorData>> + MaybeSendFuture + '_ {
        self.elicitation.ask(request)
    }

    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.tools_changed.store(true, Ordering::Release);
        std::future::ready(())
    }

    fn get_info(&self) -> ClientConfig {
        // Form requests for input only: a person answers them on the approvals surface.
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation =
            Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        ClientConfig::new(
            capabilities,
            Implementation::new("odysseyd", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// A transport that marks the tool list stale as soon as the server's
/// `tools/list_changed` is read, before any message after it is handled. (rmcp runs
/// notification handlers as tasks of their own, so through [`Handler`] alone a call
/// answered right after the notification could be seen before the mark.) A turn that
/// checks the mark after a call's answer thus sees every change the server sent first.
struct Watched<T> {
    inner: T,
    tools_changed: Arc<AtomicBool>,
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Watched<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        let tools_changed = self.tools_changed.clone();
        let next = self.inner.receive();
        async move {
            let message = next.await;
            if let Some(JsonRpcMessage::Notification(n)) = &message
                && matches!(
                    n.notification,
                    ServerNotification::ToolListChangedNotification(_)
                )
            {
                tools_changed.store(true, Ordering::Release);
            }
            message
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// A started, initialized server.
pub struct Connection {
    client: RunningService<RoleClient, Handler>,
    /// The stdio server's process; `None` for a remote server.
    process: Option<ServiceProcess>,
    /// Fires when the process ended or the connection was stopped.
    ended: CancellationToken,
    tools_changed: Arc<AtomicBool>,
    elicitation: Arc<Elicitation>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("pid", &self.process.as_ref().map(ServiceProcess::pid))
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// Starts `request` in `cell` and initializes the client, within `timeout`.
    pub async fn start(
        sandbox: &Sandbox,
        cell: &CellPaths,
        request: ExecRequest,
        log: ServiceLog,
        timeout: Duration,
        elicitation: Arc<Elicitation>,
    ) -> Result<Self, ConnectionError> {
        let mut process = sandbox.start_service(cell, request, log).await?;
        let (Some(stdout), Some(stdin)) = (process.stdout.take(), process.stdin.take()) else {
            return Err(ConnectionError::Initialize(
                "the process has no standard input or output".into(),
            ));
        };
        let handler = Handler::new(elicitation.clone());
        let tools_changed = handler.tools_changed.clone();
        let ended = process.ended();
        let transport = Watched {
            inner: AsyncRwTransport::new_client(stdout, stdin),
            tools_changed: tools_changed.clone(),
        };
        let client = tokio::select! {
            started = tokio::time::timeout(timeout, handler.serve(transport)) => match started {
                Ok(Ok(client)) => client,
                Ok(Err(e)) => return Err(ConnectionError::Initialize(e.to_string())),
                Err(_) => return Err(ConnectionError::StartTimeout(timeout)),
            },
            () = ended.cancelled() => return Err(ConnectionError::Initialize("the process ended before it answered".into())),
        };
        Ok(Self {
            client,
            process: Some(process),
            ended,
            tools_changed,
            elicitation,
        })
    }

    /// Connects to the remote server at `url` over streamable HTTP, sending `headers`
    /// (the operator's) with every request, and initializes the client within `timeout`.
    /// Redirects are not followed: the URL is the one the operator allowed.
    pub async fn connect(
        url: &str,
        headers: &BTreeMap<String, String>,
        timeout: Duration,
        elicitation: Arc<Elicitation>,
    ) -> Result<Self, ConnectionError> {
        let mut custom = HashMap::new();
        for (name, value) in headers {
            let header = http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                ConnectionError::Initialize(format!("`{name}` is not an HTTP header name"))
            })?;
            let value = http::HeaderValue::from_str(value).map_err(|_| {
                ConnectionError::Initialize(format!("the value of header `{name}` is not valid"))
            })?;
            custom.insert(header, value);
        }
        crate::provider::install_crypto_provider();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(timeout)
            .user_agent(concat!("odysseyd/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ConnectionError::Initialize(crate::error::chain(&e)))?;
        let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
        config.custom_headers = custom;
        let handler = Handler::new(elicitation.clone());
        let tools_changed = handler.tools_changed.clone();
        let transport = Watched {
            inner: StreamableHttpClientTransport::with_client(http, config),
            tools_changed: tools_changed.clone(),
        };
        let client = match tokio::time::timeout(timeout, handler.serve(transport)).await {
            Ok(Ok(client)) => client,
            Ok(Err(e)) => return Err(ConnectionError::Initialize(e.to_string())),
            Err(_) => return Err(ConnectionError::StartTimeout(timeout)),
        };
        Ok(Self {
            client,
            process: None,
            ended: CancellationToken::new(),
            tools_changed,
            elicitation,
        })
    }

    /// Whether the process still runs and the client still talks to it.
    pub fn is_alive(&self) -> bool {
        !self.ended.is_cancelled() && !self.client.is_closed()
    }

    /// Whether the server said its tools changed since they were last listed.
    pub fn tools_changed(&self) -> bool {
        self.tools_changed.load(Ordering::Acquire)
    }

    /// Every tool of the server, within `timeout`.
    pub async fn list_tools(&self, timeout: Duration) -> Result<Vec<McpTool>, ConnectionError> {
        self.tools_changed.store(false, Ordering::Release);
        let ended = self.ended.clone();
        tokio::select! {
            listed = tokio::time::timeout(timeout, self.client.list_all_tools()) => match listed {
                Ok(Ok(tools)) => Ok(tools),
                Ok(Err(e)) => Err(ConnectionError::ListTools(e.to_string())),
                Err(_) => Err(ConnectionError::StartTimeout(timeout)),
            },
            () = ended.cancelled() => Err(ConnectionError::Ended),
        }
    }

    /// Calls `tool` with `arguments` for the turn of `ctx` (`named` is the tool as the
    /// model calls it); the result as JSON (`content`, `structuredContent`, `isError`).
    /// Ends early when the process ends or `timeout` passes; time spent waiting for a
    /// person's input the server asked for does not count.
    pub async fn call(
        &self,
        ctx: &ToolContext,
        named: &str,
        tool: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        timeout: Duration,
    ) -> Result<serde_json::Value, ConnectionError> {
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let ended = self.ended.clone();
        let guard = self.elicitation.enter(ctx, named);
        let started = tokio::time::Instant::now();
        let mut deadline = started + timeout;
        let call = self.client.call_tool(params);
        tokio::pin!(call);
        let result = loop {
            tokio::select! {
                called = &mut call => match called {
                    Ok(result) => break result,
                    // The client may read the end of the server's output before the process
                    // is seen to exit: a closed transport is the server gone either way.
                    Err(e) if !self.is_alive() || gone(&e) => return Err(ConnectionError::Ended),
                    Err(e) => return Err(ConnectionError::Call(e.to_string())),
                },
                () = tokio::time::sleep_until(deadline) => {
                    let now = tokio::time::Instant::now();
                    if guard.human.waiting() {
                        // Looked at again soon after the person answers.
                        deadline = now + timeout.min(Duration::from_millis(250));
                        continue;
                    }
                    let extended = started + timeout + guard.human.total();
                    if extended <= now {
                        return Err(ConnectionError::CallTimeout(timeout));
                    }
                    deadline = extended;
                }
                () = ended.cancelled() => return Err(ConnectionError::Ended),
            }
        };
        drop(guard);
        serde_json::to_value(result).map_err(|e| ConnectionError::Call(e.to_string()))
    }

    /// Kills the server (a stdio one), or closes the connection (a remote one).
    pub fn stop(&self) {
        match &self.process {
            Some(process) => process.stop(),
            None => {
                self.client.cancellation_token().cancel();
                self.ended.cancel();
            }
        }
    }

    /// [`Connection::stop`], then waits, at most `limit`, until the process is reaped.
    pub async fn stop_and_wait(&self, limit: Duration) {
        self.stop();
        let _ = tokio::time::timeout(limit, self.ended.cancelled()).await;
    }
}

/// Whether a call failed because the connection to the server is gone.
fn gone(error: &rmcp::ServiceError) -> bool {
    matches!(
        error,
        rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_)
    )
}
