//! The MCP servers of every session: stdio ones started in the session's sandbox cell
//! (remote ones connected to) when a turn first needs their tools, kept across turns,
//! stopped when idle, when the session is deleted and at shutdown, and started again with
//! a growing delay after they die.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use rmcp::model::Tool as ListedTool;
use serde_json::Value;
use uuid::Uuid;

use super::connection::Connection;
use super::elicit::Elicitation;
use super::result::render;
use super::settings::{McpLaunch, McpSettings, ResolvedMcpServer};
use super::tool::{McpTool, offerable};
use crate::execution::ExecutionTable;
use crate::permissions::ApprovalStore;
use crate::sandbox::{ExecRequest, NetworkGrant, Sandbox, ServiceLog};
use crate::tools::{Tool, ToolContext, ToolOutput};

/// The first delay before a dead server is started again; it doubles with each failure.
const FIRST_RETRY_DELAY: Duration = Duration::from_secs(1);
const MAX_RETRY_DELAY: Duration = Duration::from_secs(60);
/// How long stopping a server waits for it to be reaped.
const STOP_WAIT: Duration = Duration::from_secs(5);
/// How often idle servers are looked for, at most.
const MAX_SWEEP_PERIOD: Duration = Duration::from_secs(30);

/// Every session's MCP servers; one per runtime.
pub struct McpServers {
    sandbox: Arc<Sandbox>,
    settings: McpSettings,
    /// Where servers' requests for a person's input wait.
    approvals: ApprovalStore,
    /// Where a turn waiting for a person's input is shown as waiting.
    executions: Arc<ExecutionTable>,
    slots: Mutex<HashMap<(Uuid, String), Arc<Slot>>>,
    sweeping: std::sync::OnceLock<()>,
}

impl std::fmt::Debug for McpServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServers")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// The tools one server offers a session, or why it offers none.
#[derive(Debug)]
pub struct ServerListing {
    pub server: String,
    pub tools: Result<Vec<Arc<McpTool>>, String>,
}

/// One server of one session.
#[derive(Debug)]
struct Slot {
    name: String,
    state: tokio::sync::Mutex<SlotState>,
    last_used: Mutex<Instant>,
    /// Calls in progress: a server busy with one is not idle, however long it takes.
    calls: std::sync::atomic::AtomicUsize,
    /// The server's requests for input, put to a person during its calls.
    elicitation: Arc<Elicitation>,
}

#[derive(Debug, Default)]
struct SlotState {
    connection: Option<Arc<Connection>>,
    tools: Vec<ListedTool>,
    /// Failures since the last call that worked.
    failures: u32,
    retry_at: Option<Instant>,
    last_error: String,
}

impl McpServers {
    pub(crate) fn new(
        sandbox: Arc<Sandbox>,
        settings: McpSettings,
        approvals: ApprovalStore,
        executions: Arc<ExecutionTable>,
    ) -> Arc<Self> {
        Arc::new(Self {
            sandbox,
            settings,
            approvals,
            executions,
            slots: Mutex::default(),
            sweeping: std::sync::OnceLock::new(),
        })
    }

    /// What each of `servers` offers that `offered` accepts, starting the servers that
    /// are not running, or why one offers nothing.
    pub async fn listings(
        self: &Arc<Self>,
        ctx: &ToolContext,
        servers: &[ResolvedMcpServer],
        offered: impl Fn(&str) -> bool,
    ) -> Vec<ServerListing> {
        let mut listings = Vec::with_capacity(servers.len());
        for server in servers {
            let slot = self.slot(ctx.session_id, &server.name);
            let tools = slot
                .ready(self, ctx, server)
                .await
                .map_err(|why| shown(why, server));
            let tools = tools.map(|(_, listed)| {
                listed
                    .iter()
                    .map(|listed| McpTool::new(self.clone(), server.clone(), listed))
                    .filter(|tool| offered(&tool.spec().name))
                    .map(Arc::new)
                    .collect()
            });
            listings.push(ServerListing {
                server: server.name.clone(),
                tools,
            });
        }
        listings
    }

    /// Those of `servers` whose running connection said its tools changed since they were
    /// last listed (`tools/list_changed`).
    pub async fn changed_servers(
        &self,
        session: Uuid,
        servers: &[ResolvedMcpServer],
    ) -> Vec<ResolvedMcpServer> {
        let mut changed = Vec::new();
        for server in servers {
            let slot = crate::sync::lock(&self.slots)
                .get(&(session, server.name.clone()))
                .cloned();
            let Some(slot) = slot else { continue };
            let state = slot.state.lock().await;
            if state
                .connection
                .as_ref()
                .is_some_and(|c| c.is_alive() && c.tools_changed())
            {
                changed.push(server.clone());
            }
        }
        changed
    }

    /// Calls `tool` of `server` for the session of `ctx`. Every failure is an error result
    /// the model reads: a server that died or hung is stopped, and started again later.
    /// The values the server was given (its credentials) are masked in what it answers.
    pub async fn call(
        self: &Arc<Self>,
        ctx: &ToolContext,
        server: &ResolvedMcpServer,
        tool: &str,
        arguments: Value,
    ) -> ToolOutput {
        let mut output = self.call_unmasked(ctx, server, tool, arguments).await;
        output.content = if output.is_error {
            // Our own failure messages may quote the server's URL (a transport error).
            shown(output.content, server)
        } else {
            mask(output.content, &secrets(server))
        };
        output
    }

    async fn call_unmasked(
        self: &Arc<Self>,
        ctx: &ToolContext,
        server: &ResolvedMcpServer,
        tool: &str,
        arguments: Value,
    ) -> ToolOutput {
        let arguments = match arguments {
            Value::Object(map) => map,
            Value::Null => serde_json::Map::new(),
            other => {
                return ToolOutput::error(format!(
                    "the arguments must be a JSON object, not {other}"
                ));
            }
        };
        let slot = self.slot(ctx.session_id, &server.name);
        let connection = match slot.ready(self, ctx, server).await {
            Ok((connection, _)) => connection,
            Err(message) => return ToolOutput::error(message),
        };
        slot.touch();
        let _busy = Busy::new(&slot);
        let named = super::names::tool_name(&server.name, tool);
        let called = tokio::select! {
            called = connection.call(
                ctx,
                &named,
                tool,
                arguments,
                self.settings.call_timeout,
            ) => called,
            () = ctx.cancel.cancelled() => {
                // Dropping the request tells the server the call is cancelled.
                slot.touch();
                return ToolOutput::error("the call was cancelled with its turn");
            }
        };
        slot.touch();
        match called {
            Ok(result) => {
                slot.state.lock().await.failures = 0;
                let content = result
                    .get("content")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                let rendered = render(
                    &content,
                    result.get("structuredContent"),
                    self.settings.max_output_bytes,
                );
                let output = if result.get("isError").and_then(Value::as_bool) == Some(true) {
                    ToolOutput::error(rendered.text)
                } else {
                    ToolOutput::ok(rendered.text)
                };
                ToolOutput {
                    images: rendered.images,
                    ..output
                }
            }
            Err(e) if e.is_fatal() => {
                connection.stop();
                let message = shown(format!("MCP server `{}`: {e}", server.name), server);
                slot.failed(&connection, &message).await;
                tracing::warn!(session = %ctx.session_id, server = %server.name, "{message}; stopped");
                ToolOutput::error(format!(
                    "{message}; it was stopped and starts again when next needed"
                ))
            }
            Err(e) => ToolOutput::error(format!("MCP server `{}`: {e}", server.name)),
        }
    }

    /// Stops the servers of a session and forgets them (the session is being deleted, or
    /// its overlay workspace is mounted again at a turn's end): the next call starts them
    /// afresh.
    pub async fn forget_session(&self, session: Uuid) {
        let slots: Vec<Arc<Slot>> = {
            let mut all = crate::sync::lock(&self.slots);
            let keys: Vec<_> = all.keys().filter(|(s, _)| *s == session).cloned().collect();
            keys.iter().filter_map(|k| all.remove(k)).collect()
        };
        for slot in slots {
            slot.stop().await;
        }
    }

    /// Stops every server (the runtime is shutting down).
    pub async fn shutdown(&self) {
        let slots: Vec<Arc<Slot>> = crate::sync::lock(&self.slots)
            .drain()
            .map(|(_, s)| s)
            .collect();
        futures::future::join_all(slots.iter().map(|slot| slot.stop())).await;
    }

    fn slot(self: &Arc<Self>, session: Uuid, name: &str) -> Arc<Slot> {
        self.sweeping.get_or_init(|| {
            tokio::spawn(sweep(Arc::downgrade(self), self.settings.idle_timeout));
        });
        crate::sync::lock(&self.slots)
            .entry((session, name.to_owned()))
            .or_insert_with(|| {
                Arc::new(Slot {
                    name: name.to_owned(),
                    state: tokio::sync::Mutex::default(),
                    last_used: Mutex::new(Instant::now()),
                    calls: std::sync::atomic::AtomicUsize::new(0),
                    elicitation: Elicitation::new(
                        name,
                        self.approvals.clone(),
                        self.executions.clone(),
                    ),
                })
            })
            .clone()
    }

    /// The request that starts stdio server `name` in the session's cell: its command, the
    /// sandbox's environment with the server's own on top, the session's network and
    /// mounts.
    fn request(
        &self,
        ctx: &ToolContext,
        name: &str,
        command: &[String],
        env: &BTreeMap<String, String>,
    ) -> ExecRequest {
        let mut all: BTreeMap<String, String> = ctx.env.clone();
        all.extend(env.iter().map(|(k, v)| (k.clone(), v.clone())));
        ExecRequest {
            exec_id: format!("mcp-{name}-{}", Uuid::now_v7()),
            argv: command.to_vec(),
            cwd: ctx.view.workspace.clone(),
            mode: ctx.mode,
            env: all,
            network: ctx
                .network
                .clone()
                .map(|domains| NetworkGrant::new(domains, ctx.events.connection_reporter())),
            mounts_read: ctx.mounts_read.clone(),
            mounts_write: ctx.mounts_write.clone(),
            timeout: Duration::ZERO,
            memory_mb: ctx.memory_mb,
            cpu_seconds: None,
        }
    }

    /// Stops the servers no call used for the idle time.
    async fn sweep_once(&self) {
        let slots: Vec<Arc<Slot>> = crate::sync::lock(&self.slots).values().cloned().collect();
        for slot in slots {
            if slot.idle_for() < self.settings.idle_timeout
                || slot.calls.load(std::sync::atomic::Ordering::Acquire) > 0
            {
                continue;
            }
            // A server busy starting is not idle.
            if let Ok(mut state) = slot.state.try_lock()
                && let Some(connection) = state.connection.take()
            {
                connection.stop();
                state.tools.clear();
                tracing::debug!(server = %slot.name, "idle MCP server stopped");
            }
        }
    }
}

async fn sweep(servers: Weak<McpServers>, idle: Duration) {
    let period = (idle / 2).clamp(Duration::from_millis(50), MAX_SWEEP_PERIOD);
    loop {
        tokio::time::sleep(period).await;
        let Some(servers) = servers.upgrade() else {
            return;
        };
        servers.sweep_once().await;
    }
}

/// Counts a call in progress for as long as it lives.
struct Busy<'a>(&'a Slot);

impl<'a> Busy<'a> {
    fn new(slot: &'a Slot) -> Self {
        slot.calls.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        Self(slot)
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0
            .calls
            .fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
        self.0.touch();
    }
}

impl Slot {
    fn touch(&self) {
        *crate::sync::lock(&self.last_used) = Instant::now();
    }

    fn idle_for(&self) -> Duration {
        crate::sync::lock(&self.last_used).elapsed()
    }

    /// The running connection and its tools, starting the server (or listing its tools
    /// again after `tools/list_changed`) when needed.
    async fn ready(
        &self,
        servers: &McpServers,
        ctx: &ToolContext,
        server: &ResolvedMcpServer,
    ) -> Result<(Arc<Connection>, Vec<ListedTool>), String> {
        let settings = &servers.settings;
        let mut state = self.state.lock().await;
        if let Some(connection) = state.connection.clone() {
            if connection.is_alive() && !connection.tools_changed() {
                return Ok((connection, state.tools.clone()));
            }
            if connection.is_alive() {
                match connection.list_tools(settings.start_timeout).await {
                    Ok(tools) => {
                        let tools = offerable(&server.name, tools);
                        state.tools = tools.clone();
                        return Ok((connection, tools));
                    }
                    Err(e) => {
                        connection.stop();
                        let message = format!("MCP server `{}`: {e}", server.name);
                        state.record_failure(&message);
                        return Err(message);
                    }
                }
            }
            // It died since its last call.
            state.connection = None;
            state.record_failure(&format!("MCP server `{}` ended", server.name));
        }
        if let Some(at) = state.retry_at
            && at > Instant::now()
        {
            return Err(format!(
                "{} ({} failure{} in a row); it is started again in {} ms",
                state.last_error,
                state.failures,
                if state.failures == 1 { "" } else { "s" },
                at.saturating_duration_since(Instant::now()).as_millis()
            ));
        }
        self.touch();
        let started = match &server.launch {
            McpLaunch::Stdio { command, env } => {
                let request = servers.request(ctx, &server.name, command, env);
                let log = ServiceLog {
                    label: format!("mcp server {} of session {}", server.name, ctx.session_id),
                    max_bytes: settings.max_stderr_log_bytes,
                    masked: secrets(server),
                };
                Connection::start(
                    &servers.sandbox,
                    &ctx.cell,
                    request,
                    log,
                    settings.start_timeout,
                    self.elicitation.clone(),
                )
                .await
            }
            McpLaunch::Http { url, headers } => {
                Connection::connect(
                    url,
                    headers,
                    settings.start_timeout,
                    self.elicitation.clone(),
                )
                .await
            }
        };
        let listed = match started {
            Ok(connection) => match connection.list_tools(settings.start_timeout).await {
                Ok(tools) => Ok((Arc::new(connection), offerable(&server.name, tools))),
                Err(e) => {
                    connection.stop();
                    Err(e)
                }
            },
            Err(e) => Err(e),
        };
        match listed {
            Ok((connection, tools)) => {
                tracing::info!(session = %ctx.session_id, server = %server.name, tools = tools.len(), "MCP server started");
                state.connection = Some(connection.clone());
                state.tools = tools.clone();
                state.retry_at = None;
                Ok((connection, tools))
            }
            Err(e) => {
                let message = shown(format!("MCP server `{}`: {e}", server.name), server);
                state.record_failure(&message);
                Err(message)
            }
        }
    }

    /// Records that `connection` failed, unless another one already replaced it.
    async fn failed(&self, connection: &Arc<Connection>, message: &str) {
        let mut state = self.state.lock().await;
        if state
            .connection
            .as_ref()
            .is_some_and(|c| Arc::ptr_eq(c, connection))
        {
            state.connection = None;
            state.record_failure(message);
        }
    }

    /// Stops the server and waits (a little) until it is reaped, so a server that shuts
    /// down leaves nothing running.
    async fn stop(&self) {
        let connection = self.state.lock().await.connection.take();
        if let Some(connection) = connection {
            connection.stop_and_wait(STOP_WAIT).await;
        }
    }
}

impl SlotState {
    fn record_failure(&mut self, message: &str) {
        self.failures = self.failures.saturating_add(1);
        let exponent = self.failures.saturating_sub(1).min(16);
        let delay = FIRST_RETRY_DELAY
            .saturating_mul(1 << exponent)
            .min(MAX_RETRY_DELAY);
        self.retry_at = Some(Instant::now() + delay);
        self.last_error = message.to_owned();
    }
}

/// The shortest value masked: shorter ones (`1`, `true`) would mask ordinary text.
const MIN_MASKED_LEN: usize = 6;

/// The values a server was given in its environment (the operator's, or the host's the
/// bundle mapped), which may be credentials: never shown in results or logs.
fn secrets(server: &ResolvedMcpServer) -> Vec<String> {
    let values: Vec<&String> = match &server.launch {
        McpLaunch::Stdio { env, .. } => env.values().collect(),
        McpLaunch::Http { headers, .. } => headers.values().collect(),
    };
    let mut values: Vec<String> = values
        .into_iter()
        .filter(|v| v.len() >= MIN_MASKED_LEN)
        .cloned()
        .collect();
    // Longer first, so a value containing another is masked whole.
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    values
}

/// Why a server offers no tools, as clients may be shown it: the values it was given
/// masked, and a remote server's URL (the operator's may carry a key in its query) named
/// only as such.
fn shown(why: String, server: &ResolvedMcpServer) -> String {
    let mut why = mask(why, &secrets(server));
    if let McpLaunch::Http { url, .. } = &server.launch {
        if why.contains(url.as_str()) {
            why = why.replace(url.as_str(), "<the server's URL>");
        }
        // A transport error may quote the URL as its parser wrote it back (a `/` added
        // after the host): its query, where a key would be, is hidden whatever the form.
        if let Some((_, query)) = url.split_once('?')
            && !query.is_empty()
            && why.contains(query)
        {
            why = why.replace(query, crate::secrets::MASK);
        }
    }
    why
}

fn mask(mut text: String, secrets: &[String]) -> String {
    for secret in secrets {
        if text.contains(secret.as_str()) {
            text = text.replace(secret.as_str(), crate::secrets::MASK);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(url: &str) -> ResolvedMcpServer {
        ResolvedMcpServer {
            name: "docs".into(),
            launch: McpLaunch::Http {
                url: url.into(),
                headers: BTreeMap::from([("Authorization".into(), "Bearer sk-header-1234".into())]),
            },
        }
    }

    /// Regression: a failed call to an operator's remote server quoted its URL, and so any
    /// key in its query, to the model and the session's events.
    #[test]
    fn a_failure_message_never_shows_the_servers_url_query_or_headers() {
        let server = remote("https://mcp.example.com?api_key=sk-query-5678");
        let why = "MCP server `docs`: error sending request for url \
                   (https://mcp.example.com/?api_key=sk-query-5678) with Bearer sk-header-1234"
            .to_owned();
        let told = shown(why, &server);
        assert!(!told.contains("sk-query-5678"), "{told}");
        assert!(!told.contains("sk-header-1234"), "{told}");
        assert!(told.contains("MCP server `docs`"), "{told}");

        let exact = shown(
            "failed at https://mcp.example.com?api_key=sk-query-5678".to_owned(),
            &server,
        );
        assert_eq!(exact, "failed at <the server's URL>");
    }
}
