//! A real `odysseyd` in-process on 127.0.0.1:0 with a temporary home, its generated
//! clients, and bundle projects written to real folders.

#![allow(dead_code)]

pub mod project;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use odyssey_api::v1 as pb;
use odyssey_api::v1::{
    bundle_service_client::BundleServiceClient, execution_service_client::ExecutionServiceClient,
    server_service_client::ServerServiceClient, session_service_client::SessionServiceClient,
};
use odyssey_runtime::RuntimeConfig;
use odyssey_server::config::ServeArgs;
use odyssey_server::serve::ServerHandle;
use tonic::transport::Channel;

pub use project::Project;

pub struct TestServer {
    pub handle: ServerHandle,
    pub home: Arc<tempfile::TempDir>,
    pub args: ServeArgs,
    pub config: RuntimeConfig,
    pub channel: Channel,
}

/// A stopped server's home and settings.
pub struct Stopped {
    pub home: Arc<tempfile::TempDir>,
    pub args: ServeArgs,
    pub config: RuntimeConfig,
}

impl Stopped {
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    pub async fn start_again(self) -> TestServer {
        TestServer::start_on(self.home, self.args, self.config).await
    }
}

impl TestServer {
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    /// Starts with default flags changed by `configure`.
    pub async fn start_with(configure: impl FnOnce(&mut ServeArgs)) -> Self {
        Self::start_configured(configure, |_| {}).await
    }

    /// Starts with flags and then the runtime configuration changed by the callers.
    pub async fn start_configured(
        configure: impl FnOnce(&mut ServeArgs),
        runtime: impl FnOnce(&mut RuntimeConfig),
    ) -> Self {
        let home = Arc::new(tempfile::tempdir().expect("temp home"));
        let mut args = ServeArgs::new(loopback(), home.path().to_path_buf());
        args.heartbeat_seconds = Some(1);
        args.shutdown_grace_seconds = Some(5);
        configure(&mut args);
        let mut config = args.runtime_config().expect("runtime config");
        runtime(&mut config);
        Self::start_on(home, args, config).await
    }

    async fn start_on(
        home: Arc<tempfile::TempDir>,
        args: ServeArgs,
        config: RuntimeConfig,
    ) -> Self {
        let handle = odyssey_server::serve::start_with_config(&args, config.clone())
            .await
            .expect("server starts");
        let channel = Channel::from_shared(handle.url())
            .expect("url")
            .connect()
            .await
            .expect("connect");
        Self {
            handle,
            home,
            args,
            config,
            channel,
        }
    }

    /// Stops the server gracefully and starts a new one on the same home.
    pub async fn restart(self) -> Self {
        let Self {
            handle,
            home,
            args,
            config,
            ..
        } = self;
        handle.shutdown().await.expect("clean shutdown");
        Self::start_on(home, args, config).await
    }

    /// Stops the server gracefully; `start_again` brings it back on the same home.
    pub async fn stop(self) -> Stopped {
        let Self {
            handle,
            home,
            args,
            config,
            ..
        } = self;
        handle.shutdown().await.expect("clean shutdown");
        Stopped { home, args, config }
    }

    pub fn home(&self) -> &Path {
        self.home.path()
    }

    pub fn sessions_dir(&self) -> PathBuf {
        self.home().join("sessions")
    }

    pub fn bundles(&self) -> BundleServiceClient<Channel> {
        BundleServiceClient::new(self.channel.clone()).max_decoding_message_size(64 << 20)
    }

    pub fn sessions(&self) -> SessionServiceClient<Channel> {
        SessionServiceClient::new(self.channel.clone())
    }

    pub fn executions(&self) -> ExecutionServiceClient<Channel> {
        ExecutionServiceClient::new(self.channel.clone())
    }

    pub fn server(&self) -> ServerServiceClient<Channel> {
        ServerServiceClient::new(self.channel.clone())
    }

    /// Builds and installs a project through BuildBundle.
    pub async fn install(&self, project: &Project) -> pb::Bundle {
        build(&mut self.bundles(), project.archive(), "", false)
            .await
            .expect("bundle installs")
    }

    /// Installs the project and opens a session on its default agent.
    pub async fn session_on(&self, project: &Project) -> pb::Session {
        let bundle = self.install(project).await;
        let reference = format!("{}@{}", bundle_name(&bundle), bundle_version(&bundle));
        self.create_session(&reference).await
    }

    pub async fn create_session(&self, reference: &str) -> pb::Session {
        self.sessions()
            .create_session(pb::CreateSessionRequest {
                bundle_reference: reference.into(),
                ..Default::default()
            })
            .await
            .expect("session created")
            .into_inner()
            .session
            .expect("session in response")
    }

    pub async fn run(&self, session_id: &str, prompt: &str) -> pb::ExecutionStatus {
        self.executions()
            .run(pb::RunRequest {
                input: Some(turn(session_id, prompt)),
            })
            .await
            .expect("run answers")
            .into_inner()
            .status
            .expect("status in response")
    }

    pub async fn submit(&self, session_id: &str, prompt: &str) -> Result<String, tonic::Status> {
        Ok(self
            .executions()
            .submit(pb::SubmitRequest {
                input: Some(turn(session_id, prompt)),
            })
            .await?
            .into_inner()
            .execution_id)
    }

    pub async fn status(&self, execution_id: &str) -> pb::ExecutionStatus {
        self.executions()
            .get_execution_status(pb::GetExecutionStatusRequest {
                execution_id: execution_id.into(),
            })
            .await
            .expect("status answers")
            .into_inner()
            .status
            .expect("status")
    }

    /// Polls until the execution reaches `state` (bounded; panics after 20 s).
    pub async fn wait_for_state(&self, execution_id: &str, state: pb::ExecutionState) {
        for _ in 0..400 {
            if self.status(execution_id).await.state == state as i32 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("execution {execution_id} never reached {state:?}");
    }

    /// Every stored event of a session after `after`, read with SubscribeSession until
    /// the stream has delivered `until_sequence`.
    pub async fn events(
        &self,
        session_id: &str,
        after: u64,
        until_sequence: u64,
    ) -> Vec<pb::SessionEvent> {
        let mut stream = self
            .sessions()
            .subscribe_session(pb::SubscribeSessionRequest {
                session_id: session_id.into(),
                after_sequence: after,
            })
            .await
            .expect("subscribe")
            .into_inner();
        let mut events = Vec::new();
        if until_sequence <= after {
            return events;
        }
        while let Some(item) = tokio::time::timeout(Duration::from_secs(20), stream.next())
            .await
            .expect("events keep coming")
        {
            if let Some(pb::subscribe_session_response::Item::Event(event)) =
                item.expect("stream item").item
            {
                let seq = event.sequence;
                events.push(event);
                if seq >= until_sequence {
                    break;
                }
            }
        }
        events
    }

    /// Subscribes after `after` and collects events up to the next `turn_completed`.
    pub async fn events_until_turn_end(
        &self,
        session_id: &str,
        after: u64,
    ) -> Vec<pb::SessionEvent> {
        let mut stream = self
            .sessions()
            .subscribe_session(pb::SubscribeSessionRequest {
                session_id: session_id.into(),
                after_sequence: after,
            })
            .await
            .expect("subscribe")
            .into_inner();
        let mut events = Vec::new();
        while let Some(item) = tokio::time::timeout(Duration::from_secs(20), stream.next())
            .await
            .expect("events keep coming")
        {
            if let Some(pb::subscribe_session_response::Item::Event(event)) =
                item.expect("stream item").item
            {
                let done = matches!(
                    event.payload,
                    Some(pb::session_event::Payload::TurnCompleted(_))
                );
                events.push(event);
                if done {
                    break;
                }
            }
        }
        events
    }

    pub async fn get_session(&self, session_id: &str) -> pb::Session {
        self.sessions()
            .get_session(pb::GetSessionRequest {
                session_id: session_id.into(),
            })
            .await
            .expect("get session")
            .into_inner()
            .session
            .expect("session")
    }
}

pub fn loopback() -> std::net::SocketAddr {
    std::net::SocketAddr::from(([127, 0, 0, 1], 0))
}

pub fn turn(session_id: &str, prompt: &str) -> pb::TurnInput {
    pb::TurnInput {
        session_id: session_id.into(),
        prompt: prompt.into(),
        ..Default::default()
    }
}

pub fn bundle_name(bundle: &pb::Bundle) -> String {
    bundle
        .r#ref
        .as_ref()
        .map(|r| r.name.clone())
        .unwrap_or_default()
}

pub fn bundle_version(bundle: &pb::Bundle) -> String {
    bundle
        .r#ref
        .as_ref()
        .map(|r| r.version.clone())
        .unwrap_or_default()
}

pub fn bundle_digest(bundle: &pb::Bundle) -> String {
    bundle
        .r#ref
        .as_ref()
        .map(|r| r.digest.clone())
        .unwrap_or_default()
}

/// Streams a project archive through BuildBundle: options first, then 64 KiB chunks.
pub async fn build(
    client: &mut BundleServiceClient<Channel>,
    archive: Vec<u8>,
    namespace: &str,
    force: bool,
) -> Result<pb::Bundle, tonic::Status> {
    use pb::build_bundle_request::Item;
    let mut messages = vec![pb::BuildBundleRequest {
        item: Some(Item::Options(pb::BuildOptions {
            namespace: namespace.into(),
            force,
        })),
    }];
    messages.extend(archive.chunks(64 * 1024).map(|c| pb::BuildBundleRequest {
        item: Some(Item::Chunk(c.to_vec())),
    }));
    let response = client.build_bundle(futures::stream::iter(messages)).await?;
    Ok(response.into_inner().bundle.expect("bundle in response"))
}

/// Streams a bundle archive through ImportBundle.
pub async fn import(
    client: &mut BundleServiceClient<Channel>,
    archive: Vec<u8>,
    namespace: &str,
    force: bool,
) -> Result<pb::Bundle, tonic::Status> {
    use pb::import_bundle_request::Item;
    let mut messages = vec![pb::ImportBundleRequest {
        item: Some(Item::Options(pb::ImportOptions {
            namespace: namespace.into(),
            force,
        })),
    }];
    messages.extend(archive.chunks(64 * 1024).map(|c| pb::ImportBundleRequest {
        item: Some(Item::Chunk(c.to_vec())),
    }));
    let response = client
        .import_bundle(futures::stream::iter(messages))
        .await?;
    Ok(response.into_inner().bundle.expect("bundle in response"))
}

/// Reads a whole ExportBundle stream.
pub async fn export(
    client: &mut BundleServiceClient<Channel>,
    reference: &str,
) -> (pb::Bundle, Vec<u8>) {
    let mut stream = client
        .export_bundle(pb::ExportBundleRequest {
            reference: reference.into(),
        })
        .await
        .expect("export starts")
        .into_inner();
    let mut bundle = None;
    let mut archive = Vec::new();
    while let Some(message) = stream.next().await {
        let message = message.expect("export chunk");
        if message.bundle.is_some() {
            assert!(
                bundle.is_none(),
                "only the first message carries the bundle"
            );
            bundle = message.bundle;
        }
        archive.extend_from_slice(&message.chunk);
    }
    (bundle.expect("bundle in first message"), archive)
}

/// The `google.rpc.ErrorInfo` reason of a status, if it carries one.
pub fn error_reason(status: &tonic::Status) -> Option<String> {
    use tonic_types::StatusExt;
    status.get_details_error_info().map(|info| info.reason)
}

/// The field violations of a status's `google.rpc.BadRequest`.
pub fn bad_fields(status: &tonic::Status) -> Vec<String> {
    use tonic_types::StatusExt;
    status
        .get_details_bad_request()
        .map(|b| b.field_violations.into_iter().map(|v| v.field).collect())
        .unwrap_or_default()
}

pub fn payload_kind(event: &pb::SessionEvent) -> &'static str {
    use pb::session_event::Payload as P;
    match &event.payload {
        Some(P::TurnStarted(_)) => "turn_started",
        Some(P::TurnCompleted(_)) => "turn_completed",
        Some(P::AgentMessageDelta(_)) => "agent_message_delta",
        Some(P::ReasoningDelta(_)) => "reasoning_delta",
        Some(P::ReasoningSectionBreak(_)) => "reasoning_section_break",
        Some(P::ToolCallStarted(_)) => "tool_call_started",
        Some(P::ToolCallDelta(_)) => "tool_call_delta",
        Some(P::ToolCallFinished(_)) => "tool_call_finished",
        Some(P::ExecCommandBegin(_)) => "exec_command_begin",
        Some(P::ExecCommandOutputDelta(_)) => "exec_command_output_delta",
        Some(P::ExecCommandEnd(_)) => "exec_command_end",
        Some(P::PermissionRequested(_)) => "permission_requested",
        Some(P::ApprovalResolved(_)) => "approval_resolved",
        Some(P::PlanUpdated(_)) => "plan_updated",
        Some(P::TokenUsageReported(_)) => "token_usage_reported",
        Some(P::ErrorOccurred(_)) => "error_occurred",
        Some(P::HistoryCompacted(_)) => "history_compacted",
        Some(P::MemoryRecalled(_)) => "memory_recalled",
        Some(P::NetworkConnectionAttempted(_)) => "network_connection_attempted",
        Some(P::UserInputAdded(_)) => "user_input_added",
        Some(P::SessionRewound(_)) => "session_rewound",
        Some(P::SubagentStarted(_)) => "subagent_started",
        Some(P::SubagentFinished(_)) => "subagent_finished",
        Some(P::HumanInputRequested(_)) => "human_input_requested",
        Some(P::HumanInputAnswered(_)) => "human_input_answered",
        None => "none",
    }
}

/// The first payload of a kind among events: `first_payload!(events, ToolCallFinished)`.
macro_rules! first_payload {
    ($events:expr, $variant:ident) => {
        $events.iter().find_map(|e| match &e.payload {
            Some(odyssey_api::v1::session_event::Payload::$variant(p)) => Some(p.clone()),
            _ => None,
        })
    };
}
pub(crate) use first_payload;
