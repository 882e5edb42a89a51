//! Odyssey's agents over the Agent2Agent protocol (A2A v1.0, `lf.a2a.v1.A2AService`),
//! which the server offers on the same port as `odyssey.v1`: an agent's card, and tasks
//! (a task is one turn; its `contextId` is the session) sent, streamed, read, cancelled
//! and followed from a sequence number. For programs that speak A2A to many servers but
//! want Odyssey's guarantees (a resumed stream misses nothing) with this SDK's connection.

use futures::{Stream, StreamExt};
use odyssey_api::a2a::v1 as a2a;
use odyssey_api::a2a::v1::a2a_service_client::A2aServiceClient;

use crate::client::{AuthChannel, OdysseyClient};
use crate::error::ClientError;

/// The metadata key of every streamed update that holds the session's sequence number of
/// the event it comes from (the card's `urn:odyssey:a2a:event-sequence:v1` extension).
pub const SEQUENCE_KEY: &str = "odysseySequence";

/// The extension of extended cards that holds an agent's details (model, tools, rules).
pub const DETAILS_EXTENSION: &str = "urn:odyssey:a2a:agent-details:v1";

/// The tenant that names `agent` of `bundle` in A2A requests: `<bundle>.<agent>`, the
/// bundle as `name` or `namespace/name`. Empty `bundle` and `agent`: the server's default
/// agent.
pub fn tenant(bundle: &str, agent: &str) -> String {
    match (bundle.is_empty(), agent.is_empty()) {
        (true, true) => String::new(),
        _ => format!("{bundle}.{agent}"),
    }
}

/// One update of a streamed task, with the session's sequence number it carries.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskUpdate {
    /// The session's sequence number of the event it comes from; `None` for the task
    /// sent first, which is the task as it stood.
    pub sequence: Option<u64>,
    pub update: a2a::stream_response::Payload,
}

/// A streamed task's updates, in order; it ends with the task.
pub type TaskUpdates =
    std::pin::Pin<Box<dyn Stream<Item = Result<TaskUpdate, ClientError>> + Send>>;

impl OdysseyClient {
    /// The generated `lf.a2a.v1.A2AService` client, on this connection and token.
    pub fn a2a(&self) -> A2aServiceClient<AuthChannel> {
        A2aServiceClient::new(self.intercepted())
            .max_decoding_message_size(crate::client::MAX_DECODING_BYTES)
    }

    /// The extended agent card of `agent` of `bundle` (both empty: the server's default
    /// agent), as an authenticated A2A client sees it: the public card plus the agent's
    /// details under [`DETAILS_EXTENSION`].
    pub async fn agent_card(
        &self,
        bundle: &str,
        agent: &str,
    ) -> Result<a2a::AgentCard, ClientError> {
        let request = a2a::GetExtendedAgentCardRequest {
            tenant: tenant(bundle, agent),
        };
        Ok(self
            .a2a()
            .get_extended_agent_card(request)
            .await?
            .into_inner())
    }

    /// Sends `text` to the agent `tenant` names as an A2A message, in the context
    /// (session) `context_id` or, when empty, a new one; answers the task once its turn
    /// ended or waits for an approval (input-required).
    pub async fn a2a_send(
        &self,
        tenant: &str,
        context_id: &str,
        text: &str,
    ) -> Result<a2a::Task, ClientError> {
        let response = self
            .a2a()
            .send_message(message(tenant, context_id, text))
            .await?
            .into_inner();
        match response.payload {
            Some(a2a::send_message_response::Payload::Task(task)) => Ok(task),
            other => Err(ClientError::Protocol(format!(
                "SendMessage answered {other:?} instead of a task"
            ))),
        }
    }

    /// Answers the input-required `task`: `decision` is `allow_once`, `allow_always` or
    /// `deny` (`reason`, when not empty, is shown to the agent on a deny); answers the task
    /// once its turn ends or waits for another approval.
    pub async fn a2a_decide(
        &self,
        task: &a2a::Task,
        decision: &str,
        reason: &str,
    ) -> Result<a2a::Task, ClientError> {
        use prost_types::value::Kind;
        let text = |t: &str| prost_types::Value {
            kind: Some(Kind::StringValue(t.to_owned())),
        };
        let mut fields =
            std::collections::BTreeMap::from([("decision".to_owned(), text(decision))]);
        if !reason.is_empty() {
            fields.insert("reason".to_owned(), text(reason));
        }
        let data = prost_types::Value {
            kind: Some(Kind::StructValue(prost_types::Struct { fields })),
        };
        let mut request = message("", &task.context_id, "");
        if let Some(message) = request.message.as_mut() {
            message.task_id = task.id.clone();
            message.parts = vec![a2a::Part {
                content: Some(a2a::part::Content::Data(data)),
                ..Default::default()
            }];
        }
        let response = self.a2a().send_message(request).await?.into_inner();
        match response.payload {
            Some(a2a::send_message_response::Payload::Task(task)) => Ok(task),
            other => Err(ClientError::Protocol(format!(
                "SendMessage answered {other:?} instead of a task"
            ))),
        }
    }

    /// [`OdysseyClient::a2a_send`] as a stream: the task, then its status updates and
    /// the agent's text in chunks, until the turn ends or waits for an approval.
    pub async fn a2a_stream(
        &self,
        tenant: &str,
        context_id: &str,
        text: &str,
    ) -> Result<TaskUpdates, ClientError> {
        let stream = self
            .a2a()
            .send_streaming_message(message(tenant, context_id, text))
            .await?
            .into_inner();
        Ok(updates(stream, 0))
    }

    /// The task `task_id`, with at most `history_length` messages of its history (`None`:
    /// all of it).
    pub async fn a2a_get(
        &self,
        task_id: &str,
        history_length: Option<i32>,
    ) -> Result<a2a::Task, ClientError> {
        let request = a2a::GetTaskRequest {
            id: task_id.to_owned(),
            history_length,
            ..Default::default()
        };
        Ok(self.a2a().get_task(request).await?.into_inner())
    }

    /// Cancels the task `task_id` (its turn); answers the task as it ended.
    pub async fn a2a_cancel(&self, task_id: &str) -> Result<a2a::Task, ClientError> {
        let request = a2a::CancelTaskRequest {
            id: task_id.to_owned(),
            ..Default::default()
        };
        Ok(self.a2a().cancel_task(request).await?.into_inner())
    }

    /// Follows the running task `task_id` from the session's log: the task, then the
    /// updates whose sequence number is above `after_sequence` (0: all of them), so a
    /// client that lost its stream resumes from the last update it handled and misses
    /// nothing. An ended task is refused (`FAILED_PRECONDITION`): read it with
    /// [`OdysseyClient::a2a_get`].
    pub async fn a2a_subscribe(
        &self,
        task_id: &str,
        after_sequence: u64,
    ) -> Result<TaskUpdates, ClientError> {
        let request = a2a::SubscribeToTaskRequest {
            id: task_id.to_owned(),
            ..Default::default()
        };
        let stream = self.a2a().subscribe_to_task(request).await?.into_inner();
        Ok(updates(stream, after_sequence))
    }
}

fn message(tenant: &str, context_id: &str, text: &str) -> a2a::SendMessageRequest {
    a2a::SendMessageRequest {
        tenant: tenant.to_owned(),
        message: Some(a2a::Message {
            message_id: new_message_id(),
            context_id: context_id.to_owned(),
            role: a2a::Role::User as i32,
            parts: vec![a2a::Part {
                content: Some(a2a::part::Content::Text(text.to_owned())),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A message id unique enough for a client: the time and a process-wide counter.
fn new_message_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!(
        "msg-{nanos:x}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The sequence number an update carries, if any.
pub fn sequence_of(update: &a2a::stream_response::Payload) -> Option<u64> {
    use a2a::stream_response::Payload;
    let metadata = match update {
        Payload::StatusUpdate(u) => u.metadata.as_ref(),
        Payload::ArtifactUpdate(u) => u.metadata.as_ref(),
        Payload::Task(_) | Payload::Message(_) => None,
    }?;
    match metadata.fields.get(SEQUENCE_KEY)?.kind {
        Some(prost_types::value::Kind::NumberValue(n)) if n >= 0.0 => Some(n as u64),
        _ => None,
    }
}

fn updates(stream: tonic::Streaming<a2a::StreamResponse>, after: u64) -> TaskUpdates {
    Box::pin(stream.filter_map(move |item| async move {
        let response = match item {
            Ok(response) => response,
            Err(status) => return Some(Err(ClientError::from(status))),
        };
        let update = response.payload?;
        let sequence = sequence_of(&update);
        match sequence {
            Some(n) if n <= after => None,
            _ => Some(Ok(TaskUpdate { sequence, update })),
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenant_names_the_bundle_and_agent_or_nothing_for_the_default() {
        assert_eq!(tenant("demo", "assistant"), "demo.assistant");
        assert_eq!(tenant("acme/demo", "main"), "acme/demo.main");
        assert_eq!(tenant("", ""), "");
    }

    #[test]
    fn message_ids_differ() {
        assert_ne!(new_message_id(), new_message_id());
    }
}
