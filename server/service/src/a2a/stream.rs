//! A task's updates, read from its session's event log: the turn's progress as
//! TaskStatusUpdateEvents and the agent's text as appended chunks of one artifact. Each
//! update carries the event's sequence number in its metadata. The stream ends with the
//! turn.

use std::pin::Pin;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use odyssey_api::a2a::v1 as pb;
use odyssey_runtime::events::{Event, EventPayload, TurnOutcome};
use odyssey_runtime::session::Subscription;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tonic::Status;
use uuid::Uuid;

use super::task::{Ids, RESPONSE_ARTIFACT, agent_message, sequence_metadata, text_part};
use crate::grpc::to_status;

pub type TaskStream = Pin<Box<dyn Stream<Item = Result<pb::StreamResponse, Status>> + Send>>;

/// Stream items buffered per client; the log, not this buffer, keeps what a slow client
/// has not read.
const BUFFER: usize = 16;

fn item(payload: pb::stream_response::Payload) -> pb::StreamResponse {
    pb::StreamResponse {
        payload: Some(payload),
    }
}

/// Where a task's stream stands.
pub(super) struct Progress {
    ids: Ids,
    execution_id: Uuid,
    /// Whether a chunk of the answer was sent (the first replaces, later ones append).
    chunk_sent: bool,
    pub(super) ended: bool,
}

impl Progress {
    /// A stream of turn `execution_id`'s updates, at its start.
    pub(super) fn new(ids: Ids, execution_id: Uuid) -> Self {
        Self {
            ids,
            execution_id,
            chunk_sent: false,
            ended: false,
        }
    }

    /// The stream items `event` gives, if it is this turn's.
    pub(super) fn items(&mut self, event: &Event) -> Vec<pb::StreamResponse> {
        use pb::stream_response::Payload;
        if event.turn_id != Some(self.execution_id) {
            return Vec::new();
        }
        let ids = &self.ids;
        let message_id = format!("{}-{}", ids.task_id, event.sequence);
        let update = |state: pb::TaskState, message: Option<pb::Message>| {
            item(Payload::StatusUpdate(pb::TaskStatusUpdateEvent {
                task_id: ids.task_id.clone(),
                context_id: ids.context_id.clone(),
                status: Some(pb::TaskStatus {
                    state: state as i32,
                    message,
                    timestamp: Some(crate::grpc::convert::timestamp_ms(event.created_at_ms)),
                }),
                metadata: Some(sequence_metadata(event.sequence)),
            }))
        };
        let status = |state: pb::TaskState, word: Option<String>| {
            update(
                state,
                word.map(|text| agent_message(ids, message_id.clone(), text)),
            )
        };
        // Tool activity: a working status whose message carries the call as a data part.
        let tool = |data: serde_json::Value| {
            let mut message = agent_message(ids, message_id.clone(), String::new());
            message.parts = vec![pb::Part {
                content: Some(pb::part::Content::Data(
                    crate::grpc::convert::json_to_value(&data),
                )),
                media_type: "application/json".into(),
                ..Default::default()
            }];
            vec![update(pb::TaskState::Working, Some(message))]
        };
        match &event.payload {
            EventPayload::TurnStarted(_) => vec![status(pb::TaskState::Working, None)],
            EventPayload::AgentMessageDelta { delta } if !delta.is_empty() => {
                let append = self.chunk_sent;
                self.chunk_sent = true;
                vec![self.chunk(event.sequence, delta.clone(), append, false)]
            }
            EventPayload::PermissionRequested { summary, .. } => vec![status(
                pb::TaskState::InputRequired,
                Some(format!("waiting for an approval: {summary}")),
            )],
            EventPayload::ApprovalResolved { .. } => vec![status(pb::TaskState::Working, None)],
            EventPayload::HumanInputRequested(requested) => vec![status(
                pb::TaskState::InputRequired,
                Some(format!(
                    "waiting for an approval: {}",
                    super::task::input_asked(requested)
                )),
            )],
            EventPayload::HumanInputAnswered(_) => vec![status(pb::TaskState::Working, None)],
            EventPayload::ToolCallStarted {
                call_id,
                tool: name,
                arguments,
            } => tool(serde_json::json!({
                "toolCall": {"callId": call_id, "tool": name, "arguments": arguments},
            })),
            EventPayload::ToolCallFinished {
                call_id,
                tool: name,
                success,
                result,
            } => tool(serde_json::json!({
                "toolResult": {"callId": call_id, "tool": name, "success": success, "result": result},
            })),
            EventPayload::TurnCompleted(completed) => {
                self.ended = true;
                let state = match completed.outcome {
                    TurnOutcome::Completed => pb::TaskState::Completed,
                    TurnOutcome::Cancelled => pb::TaskState::Canceled,
                    TurnOutcome::Failed | TurnOutcome::Interrupted => pb::TaskState::Failed,
                };
                let word = (state != pb::TaskState::Completed && !completed.error.is_empty())
                    .then(|| completed.error.clone());
                let mut items = Vec::new();
                if self.chunk_sent {
                    // The artifact is whole: a last chunk of empty text says so.
                    items.push(self.chunk(event.sequence, String::new(), true, true));
                }
                items.push(status(state, word));
                items
            }
            _ => Vec::new(),
        }
    }

    fn chunk(&self, sequence: u64, text: String, append: bool, last: bool) -> pb::StreamResponse {
        // A chunk always has a part (the closing one an empty text): an artifact's parts
        // are required.
        let parts = vec![text_part(text)];
        item(pb::stream_response::Payload::ArtifactUpdate(
            pb::TaskArtifactUpdateEvent {
                task_id: self.ids.task_id.clone(),
                context_id: self.ids.context_id.clone(),
                artifact: Some(pb::Artifact {
                    artifact_id: RESPONSE_ARTIFACT.into(),
                    name: RESPONSE_ARTIFACT.into(),
                    parts,
                    ..Default::default()
                }),
                append,
                last_chunk: last,
                metadata: Some(sequence_metadata(sequence)),
            },
        ))
    }
}

/// `first` (the task as it stands), then the updates of turn `execution_id` that
/// `subscription` reads, until the turn ends, the client goes away or the server stops.
pub fn task_stream(
    first: pb::Task,
    execution_id: Uuid,
    subscription: Subscription,
    shutdown: CancellationToken,
) -> TaskStream {
    let ids = Ids {
        task_id: first.id.clone(),
        context_id: first.context_id.clone(),
    };
    let (tx, rx) = mpsc::channel(BUFFER);
    let progress = Progress::new(ids, execution_id);
    tokio::spawn(forward(first, progress, subscription, tx, shutdown));
    Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx).flat_map(futures::stream::iter))
}

type Sender = mpsc::Sender<Vec<Result<pb::StreamResponse, Status>>>;

async fn forward(
    first: pb::Task,
    mut progress: Progress,
    mut subscription: Subscription,
    tx: Sender,
    shutdown: CancellationToken,
) {
    if tx
        .send(vec![Ok(item(pb::stream_response::Payload::Task(first)))])
        .await
        .is_err()
    {
        return;
    }
    loop {
        let batch: Vec<Arc<Event>> = tokio::select! {
            () = shutdown.cancelled() => {
                let _ = tx.send(vec![Err(Status::unavailable(
                    "the server is shutting down; subscribe to the task again later",
                ))]).await;
                return;
            }
            () = tx.closed() => return,
            batch = subscription.next_batch() => match batch {
                Ok(Some(events)) => events,
                Ok(None) => {
                    let _ = tx.send(vec![Err(Status::not_found("the task's session was deleted"))]).await;
                    return;
                }
                Err(e) => {
                    let _ = tx.send(vec![Err(to_status(e))]).await;
                    return;
                }
            },
        };
        let mut items = Vec::new();
        for event in &batch {
            items.extend(progress.items(event).into_iter().map(Ok));
            if progress.ended {
                break;
            }
        }
        if !items.is_empty() && tx.send(items).await.is_err() {
            return;
        }
        if progress.ended {
            return;
        }
    }
}
