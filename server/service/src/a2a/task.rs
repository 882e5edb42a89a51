//! A task is one Odyssey turn (execution); its context is the turn's session. Everything
//! a task shows is read from the execution's status and the session's event log, so the
//! adapter keeps no state of its own.

use std::sync::Arc;

use odyssey_api::a2a::v1 as pb;
use odyssey_runtime::events::{ApprovalDecision, ApprovalResolution, Event, EventPayload};
use odyssey_runtime::session::LoggedTurn;
use odyssey_runtime::{ExecutionState, ExecutionStatus, OdysseyRuntime};
use prost_types::{Struct, Value, value::Kind};
use tonic::Status;
use uuid::Uuid;

use crate::grpc::convert;
use crate::grpc::to_status;

/// The turn metadata key that keeps the client's `messageId`, so that the task's history
/// shows the message as the client sent it.
pub const MESSAGE_ID_KEY: &str = "a2a.message_id";

/// The id of the one artifact a task produces: the agent's answer.
pub const RESPONSE_ARTIFACT: &str = "response";

/// The metadata key of streamed events that carries the session's sequence number.
pub const SEQUENCE_KEY: &str = "odysseySequence";

/// The extension under which cards declare [`SEQUENCE_KEY`].
pub const SEQUENCE_EXTENSION: &str = "urn:odyssey:a2a:event-sequence:v1";

/// The card's declaration of the sequence number every streamed update carries.
pub fn sequence_extension() -> pb::AgentExtension {
    let mut params = prost_types::Struct::default();
    params.fields.insert(
        "metadataKey".into(),
        prost_types::Value {
            kind: Some(prost_types::value::Kind::StringValue(SEQUENCE_KEY.into())),
        },
    );
    pb::AgentExtension {
        uri: SEQUENCE_EXTENSION.into(),
        description: "Every update of SendStreamingMessage and SubscribeToTask carries, in \
                      metadata.odysseySequence, the sequence number of the session event it \
                      comes from (the session is the task's contextId). SubscribeToTask \
                      replays the task from the session's log, so a client that reconnects \
                      skips the updates at or below the last sequence it handled and misses \
                      nothing."
            .into(),
        required: false,
        params: Some(params),
    }
}

/// What a request for input asks, as a task's status says it.
pub fn input_asked(requested: &odyssey_runtime::events::HumanInputRequested) -> String {
    format!(
        "MCP server `{}` asks for input: {}",
        requested.server, requested.display
    )
}

/// The task state a turn's state maps to. A turn waiting for an approval waits for a
/// person's answer: input-required. An interrupted turn (the server stopped) failed.
pub fn task_state(state: ExecutionState) -> pb::TaskState {
    match state {
        ExecutionState::Queued => pb::TaskState::Submitted,
        ExecutionState::Running => pb::TaskState::Working,
        ExecutionState::WaitingApproval => pb::TaskState::InputRequired,
        ExecutionState::Completed => pb::TaskState::Completed,
        ExecutionState::Failed | ExecutionState::Interrupted => pb::TaskState::Failed,
        ExecutionState::Cancelled => pb::TaskState::Canceled,
    }
}

/// A message of the agent's, with one text part.
pub fn agent_message(task: &Ids, message_id: String, text: String) -> pb::Message {
    pb::Message {
        message_id,
        context_id: task.context_id.clone(),
        task_id: task.task_id.clone(),
        role: pb::Role::Agent as i32,
        parts: vec![text_part(text)],
        ..Default::default()
    }
}

pub fn text_part(text: String) -> pb::Part {
    pb::Part {
        content: Some(pb::part::Content::Text(text)),
        ..Default::default()
    }
}

/// A task's id and its context's.
#[derive(Clone, Debug)]
pub struct Ids {
    pub task_id: String,
    pub context_id: String,
}

impl Ids {
    pub fn of(status: &ExecutionStatus) -> Self {
        Self::new(status.session_id, status.execution_id)
    }

    pub fn new(session_id: Uuid, turn_id: Uuid) -> Self {
        Self {
            task_id: task_id(session_id, turn_id),
            context_id: session_id.to_string(),
        }
    }
}

/// The id of the task of turn `turn_id` of session `session_id`: `<session>.<turn>`, both
/// in their hyphenated form. It names the session, so the turn is found in its log after
/// a restart, when the server no longer holds the turn.
pub fn task_id(session_id: Uuid, turn_id: Uuid) -> String {
    format!("{session_id}.{turn_id}")
}

/// What a task id names: a turn of a session, or (the ids of earlier versions, the
/// execution id alone) a turn the server holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskRef {
    pub session_id: Option<Uuid>,
    pub turn_id: Uuid,
}

/// The ids a task id holds, if it is one this server makes: each part a UUID in its
/// canonical hyphenated lowercase form, nothing else.
pub fn parse_task_id(id: &str) -> Option<TaskRef> {
    let canonical = |part: &str| {
        Uuid::try_parse(part)
            .ok()
            .filter(|uuid| uuid.hyphenated().to_string() == part)
    };
    match id.split_once('.') {
        Some((session, turn)) => Some(TaskRef {
            session_id: Some(canonical(session)?),
            turn_id: canonical(turn)?,
        }),
        None => Some(TaskRef {
            session_id: None,
            turn_id: canonical(id)?,
        }),
    }
}

/// What the log holds of one turn.
#[derive(Default)]
pub struct Turn {
    pub prompt: Option<String>,
    pub message_id: Option<String>,
    /// The agent's text so far.
    pub text: String,
    /// What the pending approval asks, while one is pending.
    pub asking: Option<String>,
    /// The decisions a person made on the turn's approval requests, in order.
    pub decisions: Vec<Decided>,
    pub last_at_ms: u64,
}

/// A person's decision on an approval request of the turn.
#[derive(Clone, Debug, PartialEq)]
pub struct Decided {
    pub decision: ApprovalDecision,
    pub reason: String,
    pub sequence: u64,
}

impl Turn {
    pub fn from_events(events: &[Arc<Event>]) -> Self {
        let mut turn = Self::default();
        for event in events {
            turn.last_at_ms = event.created_at_ms;
            match &event.payload {
                EventPayload::TurnStarted(started) => {
                    turn.prompt = Some(started.prompt.clone());
                    turn.message_id = started.context.metadata.get(MESSAGE_ID_KEY).cloned();
                }
                EventPayload::AgentMessageDelta { delta } => turn.text.push_str(delta),
                EventPayload::PermissionRequested { summary, .. } => {
                    turn.asking = Some(summary.clone());
                }
                EventPayload::HumanInputRequested(requested) => {
                    turn.asking = Some(input_asked(requested));
                }
                EventPayload::HumanInputAnswered(_) => turn.asking = None,
                EventPayload::ApprovalResolved {
                    decision,
                    resolution,
                    reason,
                    ..
                } => {
                    turn.asking = None;
                    if *resolution == ApprovalResolution::Decided {
                        turn.decisions.push(Decided {
                            decision: *decision,
                            reason: reason.clone(),
                            sequence: event.sequence,
                        });
                    }
                }
                _ => {}
            }
        }
        turn
    }

    /// What a listing read of a turn from its log: no text of a turn still running.
    pub fn from_log(logged: &LoggedTurn) -> Self {
        Self {
            prompt: Some(logged.prompt.clone()),
            message_id: logged.metadata.get(MESSAGE_ID_KEY).cloned(),
            text: String::new(),
            asking: None,
            decisions: logged
                .decisions
                .iter()
                .map(|d| Decided {
                    decision: d.decision,
                    reason: d.reason.clone(),
                    sequence: d.sequence,
                })
                .collect(),
            last_at_ms: logged.updated_at_ms(),
        }
    }
}

/// The message of a person's decision in a task's history: the data part an answer
/// carries (see [`super::answer`]).
fn decision_message(ids: &Ids, decided: &Decided) -> pb::Message {
    let mut data = serde_json::json!({"decision": decided.decision});
    if !decided.reason.is_empty()
        && let Some(fields) = data.as_object_mut()
    {
        fields.insert("reason".into(), decided.reason.clone().into());
    }
    pb::Message {
        message_id: format!("{}-decision-{}", ids.task_id, decided.sequence),
        context_id: ids.context_id.clone(),
        task_id: ids.task_id.clone(),
        role: pb::Role::User as i32,
        parts: vec![pb::Part {
            content: Some(pb::part::Content::Data(convert::json_to_value(&data))),
            media_type: "application/json".into(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// The events of the turn `status` describes, as far as the log has them now.
pub async fn turn_events(
    runtime: &OdysseyRuntime,
    status: &ExecutionStatus,
) -> Result<Vec<Arc<Event>>, Status> {
    if status.first_sequence == 0 {
        return Ok(Vec::new());
    }
    let mut subscription = runtime
        .subscribe_session(status.session_id, status.first_sequence - 1)
        .await
        .map_err(to_status)?;
    let visible = subscription.session().visible_sequence();
    let end = if status.state.is_terminal() {
        status.last_sequence.min(visible)
    } else {
        visible
    };
    let mut events = Vec::new();
    while subscription.cursor() < end {
        match subscription.next_batch().await.map_err(to_status)? {
            Some(batch) => events.extend(
                batch
                    .into_iter()
                    .filter(|e| e.sequence <= end && e.turn_id == Some(status.execution_id)),
            ),
            None => break,
        }
    }
    Ok(events)
}

/// The task of turn `status`, its history cut to the last `history_length` messages.
pub fn task(status: &ExecutionStatus, turn: &Turn, history_length: Option<usize>) -> pb::Task {
    let ids = Ids::of(status);
    let state = task_state(status.state);
    // An ended turn's answer is its record's; a turn that ended without one (failed,
    // cancelled, stopped with the server) keeps the text it had streamed.
    let answer = if status.state.is_terminal() && !status.response.is_empty() {
        status.response.clone()
    } else {
        turn.text.clone()
    };
    let mut history = Vec::new();
    if let Some(prompt) = &turn.prompt {
        history.push(pb::Message {
            message_id: turn
                .message_id
                .clone()
                .unwrap_or_else(|| format!("{}-prompt", ids.task_id)),
            context_id: ids.context_id.clone(),
            task_id: ids.task_id.clone(),
            role: pb::Role::User as i32,
            parts: vec![text_part(prompt.clone())],
            ..Default::default()
        });
    }
    history.extend(turn.decisions.iter().map(|d| decision_message(&ids, d)));
    if status.state == ExecutionState::Completed && !answer.is_empty() {
        history.push(agent_message(
            &ids,
            format!("{}-response", ids.task_id),
            answer.clone(),
        ));
    }
    if let Some(limit) = history_length {
        let drop = history.len().saturating_sub(limit);
        history.drain(..drop);
    }
    let artifacts = if answer.is_empty() {
        Vec::new()
    } else {
        vec![pb::Artifact {
            artifact_id: RESPONSE_ARTIFACT.into(),
            name: RESPONSE_ARTIFACT.into(),
            parts: vec![text_part(answer)],
            ..Default::default()
        }]
    };
    pb::Task {
        status: Some(task_status(&ids, state, status, turn)),
        id: ids.task_id,
        context_id: ids.context_id,
        artifacts,
        history,
        metadata: None,
    }
}

/// The status of a task in `state`, with the agent's word where there is one to say: what
/// it waits for, or why it failed.
pub fn task_status(
    ids: &Ids,
    state: pb::TaskState,
    status: &ExecutionStatus,
    turn: &Turn,
) -> pb::TaskStatus {
    let word = match state {
        pb::TaskState::InputRequired => turn
            .asking
            .clone()
            .map(|asking| format!("waiting for an approval: {asking}")),
        pb::TaskState::Failed | pb::TaskState::Canceled => {
            Some(status.error.clone()).filter(|e| !e.is_empty())
        }
        _ => None,
    };
    pb::TaskStatus {
        state: state as i32,
        message: word.map(|text| agent_message(ids, format!("{}-status", ids.task_id), text)),
        timestamp: (turn.last_at_ms > 0).then(|| convert::timestamp_ms(turn.last_at_ms)),
    }
}

/// Metadata carrying the session's sequence number of the event an update comes from, so
/// a client can tell where it is in the log.
pub fn sequence_metadata(sequence: u64) -> Struct {
    Struct {
        fields: [(
            SEQUENCE_KEY.to_owned(),
            Value {
                kind: Some(Kind::NumberValue(sequence as f64)),
            },
        )]
        .into(),
    }
}
