//! `lf.a2a.v1.A2AService` over the runtime.

use std::collections::BTreeMap;

use odyssey_api::a2a::v1 as pb;
use odyssey_api::a2a::v1::a2a_service_server::A2aService;
use odyssey_runtime::events::EventPayload;
use odyssey_runtime::session::Subscription;
use odyssey_runtime::{
    ErrorKind, ExecutionHandle, ExecutionRequest, ExecutionState, ExecutionStatus, OdysseyRuntime,
    PageRequest, SessionSpec,
};
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};
use uuid::Uuid;

use super::A2aOptions;
use super::answer;
use super::card;
use super::error::A2aError;
use super::push;
use super::stream::{TaskStream, task_stream};
use super::task::{self, Ids, MESSAGE_ID_KEY, Turn, turn_events};
use super::tenant::{self, AgentRef};
use crate::grpc::{invalid, shorten, to_status, to_status_at};

/// The longest `messageId` taken (it is kept in the turn's metadata).
const MAX_MESSAGE_ID_BYTES: usize = 256;

/// Where the core's names of a turn's values sit in a SendMessageRequest.
const TURN_FIELDS: &[(&str, &str)] = &[("prompt", "message.parts")];

/// Where the core's names of a decision's values sit in an answering message.
const ANSWER_FIELDS: &[(&str, &str)] = &[("reason", "message.parts[0].data.reason")];

pub struct A2a {
    runtime: OdysseyRuntime,
    /// Fires when the server stops: open task streams end then.
    shutdown: CancellationToken,
    /// The operator's settings (the default agent, where pushes may go) and the push
    /// registrations every binding shares.
    options: A2aOptions,
}

impl A2a {
    pub fn new(runtime: OdysseyRuntime, shutdown: CancellationToken, options: A2aOptions) -> Self {
        Self {
            runtime,
            shutdown,
            options,
        }
    }

    /// The agent `tenant` names, or the default agent when it is empty.
    async fn agent(&self, tenant: &str) -> Result<AgentRef, Status> {
        tenant::resolve(&self.runtime, tenant, self.options.default_agent.as_deref()).await
    }

    /// The turn behind task `id`, if it is one of `tenant`'s (any agent's when empty).
    /// An id naming its session is found in the session's log when the server no longer
    /// holds the turn (after a restart, or long after it ended).
    pub(super) async fn find_task(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<ExecutionStatus, Status> {
        let not_found = || Status::from(A2aError::task_not_found(id));
        let task = task::parse_task_id(id).ok_or_else(not_found)?;
        let found = match task.session_id {
            Some(session_id) => self.runtime.turn_status(session_id, task.turn_id).await,
            // On a store several servers share, also a turn another one holds.
            None => self.runtime.find_execution_status(task.turn_id).await,
        };
        let status = found.map_err(|e| match e.kind() {
            ErrorKind::NotFound => not_found(),
            _ => to_status(e),
        })?;
        if !tenant.is_empty() {
            let agent = self.agent(tenant).await?;
            if !self.session_is_agents(status.session_id, &agent).await? {
                return Err(not_found());
            }
        }
        Ok(status)
    }

    async fn session_is_agents(&self, session_id: Uuid, agent: &AgentRef) -> Result<bool, Status> {
        let session = self
            .runtime
            .get_session(session_id)
            .await
            .map_err(to_status)?;
        let record = &session.record;
        Ok(agent.owns(
            &record.bundle.namespace,
            &record.bundle.name,
            &record.agent_id,
        ))
    }

    /// The task of turn `status` as the log has it now.
    async fn task(
        &self,
        status: &ExecutionStatus,
        history_length: Option<usize>,
    ) -> Result<pb::Task, Status> {
        let events = turn_events(&self.runtime, status).await?;
        Ok(task::task(
            status,
            &Turn::from_events(&events),
            history_length,
        ))
    }

    /// Checks a SendMessage, finds or opens its session, and queues its turn; with
    /// `follow`, subscribes to the session first so that no event of the turn is missed.
    /// A push notification config it carries is registered for the task, with its own
    /// subscription taken as early.
    async fn start(
        &self,
        request: pb::SendMessageRequest,
        follow: bool,
        push: Option<push::Checked>,
    ) -> Result<Started, Status> {
        let message = request
            .message
            .ok_or_else(|| invalid("message", "is required"))?;
        let prompt = checked_prompt(&message)?;
        let (session_id, created) = self.session_for(&request.tenant, &message).await?;
        let subscription = match follow {
            true => Some(self.subscribe_at_end(session_id).await?),
            false => None,
        };
        let push = match push {
            Some(checked) => Some((checked, self.subscribe_at_end(session_id).await?)),
            None => None,
        };
        let submitted = self
            .runtime
            .submit(ExecutionRequest {
                session_id,
                prompt,
                metadata: BTreeMap::from([(MESSAGE_ID_KEY.to_owned(), message.message_id.clone())]),
                ..Default::default()
            })
            .await;
        let handle = match submitted {
            Ok(handle) => handle,
            Err(e) => {
                if created && let Err(cleanup) = self.runtime.delete_session(session_id).await {
                    tracing::warn!(session = %session_id, error = %cleanup, "cannot remove the session of a refused A2A message");
                }
                return Err(to_status_at(e, TURN_FIELDS));
            }
        };
        if let Some((checked, pushes)) = push {
            // Queued a moment ago: the turn still runs (a cancel in between ends its
            // deliveries with the turn).
            let status = self
                .runtime
                .execution_status(handle.execution_id)
                .map_err(to_status)?;
            let registered = checked.for_task(&status).and_then(|checked| {
                self.options
                    .push
                    .register(&status, checked, pushes, &self.shutdown)
            });
            if let Err(e) = registered {
                tracing::warn!(execution = %handle.execution_id, error = %e.message(), "the push notification config of an A2A message was not registered");
            }
        }
        Ok(Started {
            handle,
            message,
            subscription,
        })
    }

    /// A message naming a task answers it: only a task waiting for an approval
    /// (input-required) takes one, whose data part is the decision (see [`answer`]). The
    /// approval is resolved after `follow` subscribed, so that no event after it is missed:
    /// from the turn's start for a stream (which replays the turn), else from now.
    async fn answer(
        &self,
        tenant: &str,
        message: &pb::Message,
        follow: Follow,
    ) -> Result<Answered, Status> {
        checked_sender(message)?;
        let status = self.find_task(tenant, &message.task_id).await?;
        let context = status.session_id.to_string();
        if !message.context_id.is_empty() && message.context_id != context {
            return Err(invalid(
                "message.context_id",
                format!(
                    "task {} belongs to context {context}, not `{}`",
                    task_name(&status),
                    shorten(&message.context_id)
                ),
            ));
        }
        if status.state != ExecutionState::WaitingApproval {
            return Err(not_waiting(&status));
        }
        let decision = answer::decision(message, &task_name(&status))?;
        // With a store several servers share, also the requests of a turn another runs.
        let pending = self
            .runtime
            .list_approvals_anywhere(Some(status.session_id), PageRequest::first(100))
            .await
            .map_err(to_status)?;
        // Oldest first: when several calls of the turn wait, the answer decides the oldest.
        let Some(approval) = pending
            .items
            .into_iter()
            .find(|a| a.request.execution_id == status.execution_id && a.resolution.is_none())
        else {
            // Decided by someone else in between.
            return Err(A2aError::UnsupportedOperation(format!(
                "task {} no longer waits for an approval; GetTask shows where it is",
                task_name(&status)
            ))
            .into());
        };
        let subscription = match follow {
            Follow::FromNow => self.subscribe_at_end(status.session_id).await?,
            Follow::TurnFromStart => self.subscribe_to_turn(&status).await?,
        };
        self.runtime
            .resolve_approval_anywhere(&approval.request_id, decision.decision, decision.reason)
            .await
            .map_err(|e| to_status_at(e, ANSWER_FIELDS))?;
        let status = self
            .runtime
            .find_execution_status(status.execution_id)
            .await
            .map_err(to_status)?;
        Ok(Answered {
            status,
            subscription,
        })
    }

    /// After an answer, waits until the turn ends or waits for another approval.
    async fn settle(&self, answered: Answered) -> Result<ExecutionStatus, Status> {
        let Answered {
            status,
            mut subscription,
        } = answered;
        let id = status.execution_id;
        'events: loop {
            let Some(batch) = subscription.next_batch().await.map_err(to_status)? else {
                return Err(Status::not_found("the task's session was deleted"));
            };
            for event in batch {
                let next_stop = matches!(
                    event.payload,
                    EventPayload::PermissionRequested { .. } | EventPayload::TurnCompleted(_)
                );
                if event.turn_id == Some(id) && next_stop {
                    break 'events;
                }
            }
        }
        self.runtime.wait_until_settled(id).await.map_err(to_status)
    }

    /// The session the message goes to: its context, or a new session of the tenant's
    /// agent. Says whether the session was created for it.
    async fn session_for(
        &self,
        tenant: &str,
        message: &pb::Message,
    ) -> Result<(Uuid, bool), Status> {
        if message.context_id.is_empty() {
            let agent = self.agent(tenant).await?;
            let session = self
                .runtime
                .create_session(SessionSpec {
                    bundle_reference: agent.reference.clone(),
                    agent_id: Some(agent.agent_id.clone()),
                    ..Default::default()
                })
                .await
                .map_err(to_status)?;
            return Ok((session.record.id, true));
        }
        let session_id = Uuid::parse_str(&message.context_id).map_err(|_| {
            invalid(
                "message.context_id",
                format!(
                    "`{}` is not a context of this server (contexts are session ids)",
                    shorten(&message.context_id)
                ),
            )
        })?;
        let session = self
            .runtime
            .get_session(session_id)
            .await
            .map_err(|e| match e.kind() {
                ErrorKind::NotFound => invalid(
                    "message.context_id",
                    format!("no context {session_id} on this server"),
                ),
                _ => to_status(e),
            })?;
        if !tenant.is_empty() {
            let agent = self.agent(tenant).await?;
            if !self.session_is_agents(session_id, &agent).await? {
                let record = &session.record;
                return Err(invalid(
                    "tenant",
                    format!(
                        "context {session_id} belongs to agent `{}/{}.{}`, not `{}`",
                        record.bundle.namespace,
                        record.bundle.name,
                        record.agent_id,
                        agent.tenant()
                    ),
                ));
            }
        }
        Ok((session_id, false))
    }

    /// Refuses push notification calls on a server whose operator allows no webhook.
    fn push_offered(&self) -> Result<(), Status> {
        match self.options.push_allowed_urls.is_empty() {
            true => Err(A2aError::PushNotificationNotSupported.into()),
            false => Ok(()),
        }
    }

    /// The push notification config a SendMessage carries, checked before anything runs.
    /// Only a message that starts a task takes one (a running task takes a config through
    /// CreateTaskPushNotificationConfig).
    fn message_push(
        &self,
        request: &pb::SendMessageRequest,
        configuration: &pb::SendMessageConfiguration,
    ) -> Result<Option<push::Checked>, Status> {
        let Some(config) = configuration.task_push_notification_config.clone() else {
            return Ok(None);
        };
        if answering(request).is_some() {
            return Err(invalid(
                "configuration.task_push_notification_config",
                "a message answering a task takes no push notification config; register it \
                 with CreateTaskPushNotificationConfig",
            ));
        }
        push::prepare(
            &self.options.push_allowed_urls,
            config,
            "configuration.task_push_notification_config.",
        )
        .map(Some)
    }

    /// Follows `session_id` from its last event on.
    pub(super) async fn subscribe_at_end(&self, session_id: Uuid) -> Result<Subscription, Status> {
        let last = self
            .runtime
            .get_session(session_id)
            .await
            .map_err(to_status)?
            .stats
            .last_sequence;
        self.runtime
            .subscribe_session(session_id, last)
            .await
            .map_err(to_status)
    }

    /// Follows the turn of `status` from its first event; for a turn still queued, from
    /// the session's end (where its first event will come).
    async fn subscribe_to_turn(&self, status: &ExecutionStatus) -> Result<Subscription, Status> {
        let from = |first: u64| {
            self.runtime
                .subscribe_session(status.session_id, first.saturating_sub(1))
        };
        if status.first_sequence > 0 {
            return from(status.first_sequence).await.map_err(to_status);
        }
        let subscription = self.subscribe_at_end(status.session_id).await?;
        // The turn may have started in between: then follow it from its start.
        let now = self
            .runtime
            .find_execution_status(status.execution_id)
            .await
            .map_err(to_status)?;
        if now.first_sequence > 0 && now.first_sequence <= subscription.cursor() {
            return from(now.first_sequence).await.map_err(to_status);
        }
        Ok(subscription)
    }
}

/// From where an answer's subscription follows the session.
#[derive(Clone, Copy)]
enum Follow {
    FromNow,
    TurnFromStart,
}

/// A task whose approval an answer resolved, and the subscription taken before.
struct Answered {
    status: ExecutionStatus,
    subscription: Subscription,
}

/// The id of the task of turn `status`, for messages.
fn task_name(status: &ExecutionStatus) -> String {
    Ids::of(status).task_id
}

/// Why a task takes no answer now, with A2A's error for the case.
fn not_waiting(status: &ExecutionStatus) -> Status {
    let why = if status.state.is_terminal() {
        format!(
            "task {} has ended ({}); send the message with its contextId and no taskId to \
             start a new task in the same context",
            task_name(status),
            state_name(status.state)
        )
    } else {
        format!(
            "task {} is {}, not waiting for input; only an input-required task takes a message",
            task_name(status),
            state_name(status.state)
        )
    };
    A2aError::UnsupportedOperation(why).into()
}

/// A queued turn of an A2A message.
struct Started {
    handle: ExecutionHandle,
    message: pb::Message,
    subscription: Option<Subscription>,
}

impl Started {
    /// The task as it is when queued: submitted, with the client's message.
    fn submitted(&self, history_length: Option<usize>) -> pb::Task {
        let ids = Ids::new(self.handle.session_id, self.handle.execution_id);
        let mut message = self.message.clone();
        message.task_id = ids.task_id.clone();
        message.context_id = ids.context_id.clone();
        message.role = pb::Role::User as i32;
        let history = match history_length {
            Some(0) => Vec::new(),
            _ => vec![message],
        };
        pb::Task {
            id: ids.task_id,
            context_id: ids.context_id,
            status: Some(pb::TaskStatus {
                state: pb::TaskState::Submitted as i32,
                message: None,
                timestamp: Some(crate::grpc::convert::timestamp(std::time::SystemTime::now())),
            }),
            artifacts: Vec::new(),
            history,
            metadata: None,
        }
    }
}

/// What every client message needs: an id of bounded size, and the user's role.
fn checked_sender(message: &pb::Message) -> Result<(), Status> {
    if message.message_id.is_empty() {
        return Err(invalid("message.message_id", "is required"));
    }
    if message.message_id.len() > MAX_MESSAGE_ID_BYTES {
        return Err(invalid(
            "message.message_id",
            format!("is at most {MAX_MESSAGE_ID_BYTES} bytes"),
        ));
    }
    if message.role == pb::Role::Agent as i32 {
        return Err(invalid(
            "message.role",
            "a client's message has role ROLE_USER, not ROLE_AGENT",
        ));
    }
    Ok(())
}

/// The prompt of a message: its text parts, in order. Every other kind of part is refused
/// (nothing else reaches a turn yet), as is a message without text.
fn checked_prompt(message: &pb::Message) -> Result<String, Status> {
    checked_sender(message)?;
    if message.parts.is_empty() {
        return Err(invalid("message.parts", "must hold at least one text part"));
    }
    let mut texts = Vec::with_capacity(message.parts.len());
    for (i, part) in message.parts.iter().enumerate() {
        use pb::part::Content;
        let kind = match &part.content {
            Some(Content::Text(text)) => {
                texts.push(text.as_str());
                continue;
            }
            None => return Err(invalid(&format!("message.parts[{i}]"), "has no content")),
            Some(Content::Raw(_)) => "raw bytes",
            Some(Content::Url(_)) => "a URL",
            Some(Content::Data(_)) => "data",
        };
        return Err(A2aError::ContentTypeNotSupported(format!(
            "message.parts[{i}] holds {kind}; this agent takes text parts only"
        ))
        .into());
    }
    Ok(texts.join("\n"))
}

/// The message of a request that names a task: an answer to it.
fn answering(request: &pb::SendMessageRequest) -> Option<&pb::Message> {
    request.message.as_ref().filter(|m| !m.task_id.is_empty())
}

/// `history_length`: unset is no limit, a negative count is refused.
fn history_length(value: Option<i32>, field: &str) -> Result<Option<usize>, Status> {
    match value {
        None => Ok(None),
        Some(n) if n < 0 => Err(invalid(field, format!("is {n}; it must not be negative"))),
        Some(n) => Ok(Some(n as usize)),
    }
}

fn state_name(state: ExecutionState) -> &'static str {
    match task::task_state(state) {
        pb::TaskState::Completed => "completed",
        pb::TaskState::Failed => "failed",
        pb::TaskState::Canceled => "canceled",
        pb::TaskState::InputRequired => "input-required",
        pb::TaskState::Working => "working",
        _ => "submitted",
    }
}

/// The metadata key in which a gRPC client names the A2A version it speaks.
const VERSION_METADATA: &str = "a2a-version";

/// Refuses a call naming a protocol version this server does not speak, as the JSON-RPC
/// binding does with the same header.
fn checked_version<T>(request: &Request<T>) -> Result<(), Status> {
    let asked = request
        .metadata()
        .get(VERSION_METADATA)
        .map(|v| v.to_str().unwrap_or(""));
    match A2aError::unsupported_version(asked) {
        Some(error) => Err(error.into()),
        None => Ok(()),
    }
}

#[tonic::async_trait]
impl A2aService for A2a {
    async fn send_message(
        &self,
        request: Request<pb::SendMessageRequest>,
    ) -> Result<Response<pb::SendMessageResponse>, Status> {
        checked_version(&request)?;
        let request = request.into_inner();
        let configuration = request.configuration.clone().unwrap_or_default();
        let limit = history_length(configuration.history_length, "configuration.history_length")?;
        let push = self.message_push(&request, &configuration)?;
        if let Some(message) = answering(&request) {
            let answered = self
                .answer(&request.tenant, message, Follow::FromNow)
                .await?;
            let status = match configuration.return_immediately {
                true => answered.status,
                false => self.settle(answered).await?,
            };
            return Ok(Response::new(pb::SendMessageResponse {
                payload: Some(pb::send_message_response::Payload::Task(
                    self.task(&status, limit).await?,
                )),
            }));
        }
        let started = self.start(request, false, push).await?;
        let task = if configuration.return_immediately {
            started.submitted(limit)
        } else {
            let status = self
                .runtime
                .wait_until_settled(started.handle.execution_id)
                .await
                .map_err(to_status)?;
            self.task(&status, limit).await?
        };
        Ok(Response::new(pb::SendMessageResponse {
            payload: Some(pb::send_message_response::Payload::Task(task)),
        }))
    }

    type SendStreamingMessageStream = TaskStream;

    async fn send_streaming_message(
        &self,
        request: Request<pb::SendMessageRequest>,
    ) -> Result<Response<Self::SendStreamingMessageStream>, Status> {
        checked_version(&request)?;
        let request = request.into_inner();
        let configuration = request.configuration.clone().unwrap_or_default();
        let limit = history_length(configuration.history_length, "configuration.history_length")?;
        let push = self.message_push(&request, &configuration)?;
        if let Some(message) = answering(&request) {
            let answered = self
                .answer(&request.tenant, message, Follow::TurnFromStart)
                .await?;
            // The task as it stands, without the answer so far: the stream replays the turn
            // from its start, as SubscribeToTask does.
            let mut first = self.task(&answered.status, limit).await?;
            first.artifacts.clear();
            return Ok(Response::new(task_stream(
                first,
                answered.status.execution_id,
                answered.subscription,
                self.shutdown.clone(),
            )));
        }
        let mut started = self.start(request, true, push).await?;
        let first = started.submitted(limit);
        let subscription = started
            .subscription
            .take()
            .ok_or_else(|| Status::internal("the task's subscription is missing"))?;
        Ok(Response::new(task_stream(
            first,
            started.handle.execution_id,
            subscription,
            self.shutdown.clone(),
        )))
    }

    async fn get_task(
        &self,
        request: Request<pb::GetTaskRequest>,
    ) -> Result<Response<pb::Task>, Status> {
        checked_version(&request)?;
        let r = request.into_inner();
        let limit = history_length(r.history_length, "history_length")?;
        let status = self.find_task(&r.tenant, &r.id).await?;
        Ok(Response::new(self.task(&status, limit).await?))
    }

    async fn list_tasks(
        &self,
        request: Request<pb::ListTasksRequest>,
    ) -> Result<Response<pb::ListTasksResponse>, Status> {
        checked_version(&request)?;
        let request = request.into_inner();
        let limit = history_length(request.history_length, "history_length")?;
        Ok(Response::new(
            super::list::list_tasks(
                &self.runtime,
                request,
                limit,
                self.options.default_agent.as_deref(),
            )
            .await?,
        ))
    }

    async fn cancel_task(
        &self,
        request: Request<pb::CancelTaskRequest>,
    ) -> Result<Response<pb::Task>, Status> {
        checked_version(&request)?;
        let r = request.into_inner();
        let status = self.find_task(&r.tenant, &r.id).await?;
        let status = match status.state {
            ExecutionState::Cancelled => status,
            state if state.is_terminal() => {
                return Err(A2aError::TaskNotCancelable {
                    id: task_name(&status),
                    state: state_name(state),
                }
                .into());
            }
            _ => self
                .runtime
                .cancel(status.execution_id)
                .await
                .map_err(to_status)?,
        };
        Ok(Response::new(self.task(&status, None).await?))
    }

    type SubscribeToTaskStream = TaskStream;

    async fn subscribe_to_task(
        &self,
        request: Request<pb::SubscribeToTaskRequest>,
    ) -> Result<Response<Self::SubscribeToTaskStream>, Status> {
        checked_version(&request)?;
        let r = request.into_inner();
        let status = self.find_task(&r.tenant, &r.id).await?;
        if status.state.is_terminal() {
            return Err(A2aError::UnsupportedOperation(format!(
                "task {} has ended ({}); GetTask shows it",
                task_name(&status),
                state_name(status.state)
            ))
            .into());
        }
        let subscription = self.subscribe_to_turn(&status).await?;
        // The task as it stands, without the answer so far: the stream replays the turn
        // from its start, the answer's chunks included.
        let mut first = self.task(&status, None).await?;
        first.artifacts.clear();
        Ok(Response::new(task_stream(
            first,
            status.execution_id,
            subscription,
            self.shutdown.clone(),
        )))
    }

    async fn create_task_push_notification_config(
        &self,
        request: Request<pb::TaskPushNotificationConfig>,
    ) -> Result<Response<pb::TaskPushNotificationConfig>, Status> {
        checked_version(&request)?;
        self.push_offered()?;
        let config = request.into_inner();
        let status = self.find_task(&config.tenant, &config.task_id).await?;
        let checked = push::prepare(&self.options.push_allowed_urls, config, "")?;
        let checked = checked.for_task(&status)?;
        let subscription = self.subscribe_at_end(status.session_id).await?;
        // The turn may have ended before the subscription: then no update would come.
        let now = self.find_task("", &task_name(&status)).await?;
        let checked = checked.for_task(&now)?;
        let stored = self
            .options
            .push
            .register(&now, checked, subscription, &self.shutdown)?;
        Ok(Response::new(stored))
    }

    async fn get_task_push_notification_config(
        &self,
        request: Request<pb::GetTaskPushNotificationConfigRequest>,
    ) -> Result<Response<pb::TaskPushNotificationConfig>, Status> {
        checked_version(&request)?;
        self.push_offered()?;
        let r = request.into_inner();
        let status = self.find_task(&r.tenant, &r.task_id).await?;
        let task = task_name(&status);
        self.options
            .push
            .get(&task, &r.id)
            .map(Response::new)
            .ok_or_else(|| no_push_config(&task, &r.id))
    }

    async fn list_task_push_notification_configs(
        &self,
        request: Request<pb::ListTaskPushNotificationConfigsRequest>,
    ) -> Result<Response<pb::ListTaskPushNotificationConfigsResponse>, Status> {
        checked_version(&request)?;
        self.push_offered()?;
        let r = request.into_inner();
        let status = self.find_task(&r.tenant, &r.task_id).await?;
        // A task holds a few configs: one page has them all.
        Ok(Response::new(pb::ListTaskPushNotificationConfigsResponse {
            configs: self.options.push.list(&task_name(&status)),
            next_page_token: String::new(),
        }))
    }

    async fn get_extended_agent_card(
        &self,
        request: Request<pb::GetExtendedAgentCardRequest>,
    ) -> Result<Response<pb::AgentCard>, Status> {
        checked_version(&request)?;
        // The HTTP bindings say how they were reached; a gRPC call carries the host it named.
        let reached = match request.extensions().get::<card::Reached>() {
            Some(reached) => reached.clone(),
            None => card::Reached::Grpc(
                request
                    .extensions()
                    .get::<crate::grpc::host::NamedHost>()
                    .map(|named| named.0.clone()),
            ),
        };
        let r = request.into_inner();
        let agent = self.agent(&r.tenant).await?;
        let bundle = self
            .runtime
            .inspect_bundle(&agent.reference)
            .await
            .map_err(to_status)?;
        let Some(definition) = bundle.manifest.agent(&agent.agent_id) else {
            return Err(to_status(odyssey_runtime::RuntimeError::not_found(
                "agent",
                format!(
                    "{} (bundle {} has no such agent)",
                    agent.agent_id, bundle.id
                ),
            )));
        };
        let site = self.options.site;
        Ok(Response::new(card::extended_card(
            &bundle,
            definition,
            site.urls(&reached),
            site.bearer,
            !self.options.push_allowed_urls.is_empty(),
        )))
    }

    async fn delete_task_push_notification_config(
        &self,
        request: Request<pb::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<Response<()>, Status> {
        checked_version(&request)?;
        self.push_offered()?;
        let r = request.into_inner();
        let status = self.find_task(&r.tenant, &r.task_id).await?;
        let task = task_name(&status);
        match self.options.push.delete(&task, &r.id) {
            true => Ok(Response::new(())),
            false => Err(no_push_config(&task, &r.id)),
        }
    }
}

/// The answer for a push notification config a task does not hold.
fn no_push_config(task: &str, id: &str) -> Status {
    Status::not_found(format!(
        "task {task} has no push notification config `{}` (a config is forgotten when its \
         task ends)",
        shorten(id)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::task::text_part;

    fn message(parts: Vec<pb::Part>) -> pb::Message {
        pb::Message {
            message_id: "m1".into(),
            role: pb::Role::User as i32,
            parts,
            ..Default::default()
        }
    }

    #[test]
    fn text_parts_make_the_prompt_in_order() {
        let m = message(vec![text_part("one".into()), text_part("two".into())]);
        assert_eq!(checked_prompt(&m).unwrap(), "one\ntwo");
    }

    #[test]
    fn a_part_other_than_text_is_refused_as_an_unsupported_content_type() {
        let m = message(vec![
            text_part("look".into()),
            pb::Part {
                content: Some(pb::part::Content::Url("https://example.com/a.png".into())),
                ..Default::default()
            },
        ]);
        let status = checked_prompt(&m).unwrap_err();
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        assert!(status.message().contains("message.parts[1]"), "{status:?}");
    }

    #[test]
    fn a_message_without_id_parts_or_with_the_agents_role_is_refused() {
        let mut m = message(vec![text_part("hi".into())]);
        m.message_id.clear();
        assert!(checked_prompt(&m).is_err());
        let m = message(Vec::new());
        assert!(checked_prompt(&m).is_err());
        let mut m = message(vec![text_part("hi".into())]);
        m.role = pb::Role::Agent as i32;
        assert!(checked_prompt(&m).is_err());
    }

    #[test]
    fn a_negative_history_length_is_refused() {
        assert_eq!(history_length(None, "h").unwrap(), None);
        assert_eq!(history_length(Some(0), "h").unwrap(), Some(0));
        assert!(history_length(Some(-1), "h").is_err());
    }
}
