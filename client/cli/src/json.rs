//! `--json` output: every API message in the API's one public JSON form, the proto3
//! canonical JSON mapping of `odyssey.v1` derived from its descriptors
//! ([`odyssey_api::json`]): lowerCamelCase names, enums by name, 64-bit integers as
//! strings, timestamps as RFC 3339, default values left out. It is what grpcurl prints for
//! the same RPC, and what the HTTP gateway answers. An event is printed as the message
//! SubscribeSession sends for it (`{"event": {...}}`).
//!
//! Besides, the helpers that show a `Struct` to a person ([`struct_to_json`]) and name an
//! event's kind ([`event_kind`]), for the human output.

use odyssey_api::v1 as pb;
use pb::session_event::Payload;
use prost::{Message, Name};
use prost_types::value::Kind;
use serde_json::{Map, Value};

use super::error::CliError;

/// `message` in the canonical JSON form.
pub(crate) fn message<M: Message + Name>(message: &M) -> Result<Value, CliError> {
    Ok(odyssey_api::json::to_value(message)?)
}

/// An event as the `SubscribeSessionResponse` that carries it.
pub(crate) fn event(event: &pb::SessionEvent) -> Result<Value, CliError> {
    message(&pb::SubscribeSessionResponse {
        item: Some(pb::subscribe_session_response::Item::Event(event.clone())),
    })
}

/// A `Struct` as plain JSON, for showing arguments to a person.
pub(crate) fn struct_to_json(s: &prost_types::Struct) -> Value {
    Value::Object(
        s.fields
            .iter()
            .map(|(k, v)| (k.clone(), value_to_json(v)))
            .collect::<Map<_, _>>(),
    )
}

pub(crate) fn value_to_json(value: &prost_types::Value) -> Value {
    match &value.kind {
        None | Some(Kind::NullValue(_)) => Value::Null,
        Some(Kind::NumberValue(n)) => number(*n),
        Some(Kind::StringValue(s)) => Value::from(s.as_str()),
        Some(Kind::BoolValue(b)) => Value::from(*b),
        Some(Kind::StructValue(s)) => struct_to_json(s),
        Some(Kind::ListValue(list)) => {
            Value::Array(list.values.iter().map(value_to_json).collect())
        }
    }
}

/// A `Struct` number as JSON. The wire holds every number as a double, so a whole one goes
/// back to a JSON integer (`max_tokens: 512`, not `512.0`); beyond 2^53 a double no longer
/// holds every integer, so those stay as they are.
fn number(n: f64) -> Value {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if n.fract() == 0.0 && n.abs() <= EXACT {
        Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)
    }
}

/// The event's kind as it reads in the log: the payload's field name.
pub(crate) fn event_kind(event: &pb::SessionEvent) -> &'static str {
    match &event.payload {
        None => "unknown",
        Some(Payload::TurnStarted(_)) => "turn_started",
        Some(Payload::TurnCompleted(_)) => "turn_completed",
        Some(Payload::AgentMessageDelta(_)) => "agent_message_delta",
        Some(Payload::ReasoningDelta(_)) => "reasoning_delta",
        Some(Payload::ReasoningSectionBreak(_)) => "reasoning_section_break",
        Some(Payload::ToolCallStarted(_)) => "tool_call_started",
        Some(Payload::ToolCallDelta(_)) => "tool_call_delta",
        Some(Payload::ToolCallFinished(_)) => "tool_call_finished",
        Some(Payload::ExecCommandBegin(_)) => "exec_command_begin",
        Some(Payload::ExecCommandOutputDelta(_)) => "exec_command_output_delta",
        Some(Payload::ExecCommandEnd(_)) => "exec_command_end",
        Some(Payload::PermissionRequested(_)) => "permission_requested",
        Some(Payload::ApprovalResolved(_)) => "approval_resolved",
        Some(Payload::PlanUpdated(_)) => "plan_updated",
        Some(Payload::TokenUsageReported(_)) => "token_usage_reported",
        Some(Payload::ErrorOccurred(_)) => "error_occurred",
        Some(Payload::HistoryCompacted(_)) => "history_compacted",
        Some(Payload::MemoryRecalled(_)) => "memory_recalled",
        Some(Payload::NetworkConnectionAttempted(_)) => "network_connection_attempted",
        Some(Payload::UserInputAdded(_)) => "user_input_added",
        Some(Payload::SessionRewound(_)) => "session_rewound",
        Some(Payload::SubagentStarted(_)) => "subagent_started",
        Some(Payload::SubagentFinished(_)) => "subagent_finished",
        Some(Payload::HumanInputRequested(_)) => "human_input_requested",
        Some(Payload::HumanInputAnswered(_)) => "human_input_answered",
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;

    fn delta_event() -> pb::SessionEvent {
        pb::SessionEvent {
            id: "e1".into(),
            session_id: "s1".into(),
            sequence: 7,
            created_at: Some(prost_types::Timestamp {
                seconds: 0,
                nanos: 0,
            }),
            turn_id: "t1".into(),
            payload: Some(Payload::AgentMessageDelta(pb::AgentMessageDelta {
                delta: "Hi".into(),
            })),
        }
    }

    #[test]
    fn events_are_printed_as_subscribe_session_sends_them() {
        let value = event(&delta_event()).unwrap();
        assert_eq!(
            value,
            json!({ "event": {
                "id": "e1",
                "sessionId": "s1",
                "sequence": "7",
                "createdAt": "1970-01-01T00:00:00Z",
                "turnId": "t1",
                "agentMessageDelta": { "delta": "Hi" },
            }})
        );
        assert_eq!(event_kind(&delta_event()), "agent_message_delta");
    }

    #[test]
    fn messages_use_the_canonical_mapping() {
        let session = pb::Session {
            id: "s1".into(),
            sandbox_mode: pb::SandboxMode::ReadOnly.into(),
            last_sequence: 12,
            ..Default::default()
        };
        let value = message(&session).unwrap();
        assert_eq!(value["sandboxMode"], "SANDBOX_MODE_READ_ONLY");
        assert_eq!(value["lastSequence"], "12");
        assert_eq!(value.get("createdAt"), None);
    }

    /// Issue 12 item 6: whole numbers come back as JSON integers (`512`, not `512.0`).
    #[test]
    fn structs_become_plain_json() {
        let mut fields = BTreeMap::new();
        fields.insert(
            "path".to_owned(),
            prost_types::Value::from("README.md".to_owned()),
        );
        fields.insert("limit".to_owned(), prost_types::Value::from(10.0));
        fields.insert("temperature".to_owned(), prost_types::Value::from(0.25));
        fields.insert("huge".to_owned(), prost_types::Value::from(1e300));
        fields.insert(
            "flags".to_owned(),
            prost_types::Value::from(vec![prost_types::Value::from(-3.0)]),
        );
        let value = struct_to_json(&prost_types::Struct { fields });
        assert_eq!(
            value.to_string(),
            r#"{"flags":[-3],"huge":1e+300,"limit":10,"path":"README.md","temperature":0.25}"#
        );
    }
}
