//! `--json` output: protobuf messages mapped to JSON by hand (prost types are not serde).
//!
//! The shape follows the proto3 JSON mapping with the original snake_case field names:
//! enums as their full names (`TURN_OUTCOME_COMPLETED`), timestamps as RFC 3339 strings,
//! `Struct` fields as plain JSON. Integers stay JSON numbers (proto3 JSON would quote
//! 64-bit ones), since sequences and token counts never come near 2^53.

use odyssey_api::v1 as pb;
use pb::session_event::Payload;
use prost_types::value::Kind;
use serde_json::{Map, Value, json};

use super::time::rfc3339;

/// A prost enum value as its name, or the raw number when this client does not know it.
fn enum_name<E: TryFrom<i32>>(value: i32, name: fn(&E) -> &'static str) -> Value {
    match E::try_from(value) {
        Ok(known) => Value::from(name(&known)),
        Err(_) => Value::from(value),
    }
}

fn timestamp(ts: Option<&prost_types::Timestamp>) -> Value {
    ts.map_or(Value::Null, |t| Value::from(rfc3339(Some(t))))
}

pub(crate) fn struct_to_json(s: &prost_types::Struct) -> Value {
    Value::Object(
        s.fields
            .iter()
            .map(|(k, v)| (k.clone(), value_to_json(v)))
            .collect(),
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

fn optional_struct(s: Option<&prost_types::Struct>) -> Value {
    s.map_or(Value::Null, struct_to_json)
}

pub(crate) fn model(m: Option<&pb::ModelSpec>) -> Value {
    m.map_or(Value::Null, |m| {
        json!({ "provider": m.provider, "name": m.name, "config": optional_struct(m.config.as_ref()) })
    })
}

pub(crate) fn usage(u: Option<&pb::TokenUsage>) -> Value {
    u.map_or(Value::Null, |u| {
        json!({
            "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens,
            "cached_input_tokens": u.cached_input_tokens,
            "reasoning_tokens": u.reasoning_tokens,
            "total_tokens": u.total_tokens,
        })
    })
}

pub(crate) fn bundle_ref(r: Option<&pb::BundleRef>) -> Value {
    r.map_or(Value::Null, |r| {
        json!({ "namespace": r.namespace, "name": r.name, "version": r.version, "digest": r.digest })
    })
}

pub(crate) fn bundle(b: &pb::Bundle) -> Value {
    json!({
        "ref": bundle_ref(b.r#ref.as_ref()),
        "description": b.description,
        "default_agent_id": b.default_agent_id,
        "agent_ids": b.agent_ids,
        "installed_at": timestamp(b.installed_at.as_ref()),
        "size_bytes": b.size_bytes,
        "file_count": b.file_count,
    })
}

pub(crate) fn agent(a: &pb::AgentInfo) -> Value {
    json!({
        "id": a.id,
        "name": a.name,
        "version": a.version,
        "description": a.description,
        "model": model(a.model.as_ref()),
        "is_default": a.is_default,
        "tools_allow": a.tools_allow,
        "tools_ask": a.tools_ask,
        "tools_deny": a.tools_deny,
        "bundle_model": model(a.bundle_model.as_ref()),
    })
}

pub(crate) fn model_info(m: &pb::ModelInfo) -> Value {
    json!({
        "agent_id": m.agent_id,
        "model": model(m.model.as_ref()),
        "available": m.available,
        "detail": m.detail,
        "bundle_model": model(m.bundle_model.as_ref()),
    })
}

pub(crate) fn skill(s: &pb::SkillInfo) -> Value {
    json!({
        "name": s.name,
        "source": s.source,
        "description": s.description,
        "path": s.path,
        "error": s.error,
    })
}

fn sandbox_policy(p: Option<&pb::SandboxPolicy>) -> Value {
    p.map_or(Value::Null, |p| {
        json!({
            "mode": enum_name(p.mode, pb::SandboxMode::as_str_name),
            "network": p.network,
            "mounts_read": p.mounts_read,
            "mounts_write": p.mounts_write,
            "env": p.env,
            "cpu": p.cpu,
            "memory_mb": p.memory_mb,
        })
    })
}

pub(crate) fn inspect(r: &pb::InspectBundleResponse) -> Value {
    json!({
        "bundle": r.bundle.as_ref().map_or(Value::Null, bundle),
        "agents": r.agents.iter().map(agent).collect::<Vec<_>>(),
        "skills": r.skills.iter().map(skill).collect::<Vec<_>>(),
        "tools": r.tools.iter().map(|t| json!({ "name": t.name, "source": t.source })).collect::<Vec<_>>(),
        "sandbox": sandbox_policy(r.sandbox.as_ref()),
        "readme": r.readme,
    })
}

pub(crate) fn session(s: &pb::Session) -> Value {
    json!({
        "id": s.id,
        "bundle_reference": s.bundle_reference,
        "bundle": bundle_ref(s.bundle.as_ref()),
        "agent_id": s.agent_id,
        "model": model(s.model.as_ref()),
        "sandbox_mode": enum_name(s.sandbox_mode, pb::SandboxMode::as_str_name),
        "approval_policy": enum_name(s.approval_policy, pb::ApprovalPolicy::as_str_name),
        "created_at": timestamp(s.created_at.as_ref()),
        "updated_at": timestamp(s.updated_at.as_ref()),
        "turn_count": s.turn_count,
        "last_sequence": s.last_sequence,
        "metadata": s.metadata,
        "usage": usage(s.usage.as_ref()),
        "token_budget": s.token_budget,
    })
}

pub(crate) fn execution_status(s: &pb::ExecutionStatus) -> Value {
    json!({
        "execution_id": s.execution_id,
        "session_id": s.session_id,
        "state": enum_name(s.state, pb::ExecutionState::as_str_name),
        "response": s.response,
        "error": s.error,
        "usage": usage(s.usage.as_ref()),
        "first_sequence": s.first_sequence,
        "last_sequence": s.last_sequence,
    })
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
    }
}

/// An event with its payload under the payload's name, plus `kind` for easy filtering:
/// `{"sequence": 3, "kind": "agent_message_delta", "agent_message_delta": {"delta": "Hi"}, ...}`.
pub(crate) fn event(e: &pb::SessionEvent) -> Value {
    let mut object = Map::new();
    object.insert("id".into(), Value::from(e.id.as_str()));
    object.insert("session_id".into(), Value::from(e.session_id.as_str()));
    object.insert("sequence".into(), Value::from(e.sequence));
    object.insert("created_at".into(), timestamp(e.created_at.as_ref()));
    object.insert("turn_id".into(), Value::from(e.turn_id.as_str()));
    let kind = event_kind(e);
    object.insert("kind".into(), Value::from(kind));
    if let Some(payload) = &e.payload {
        object.insert(kind.into(), payload_json(payload));
    }
    Value::Object(object)
}

fn payload_json(payload: &Payload) -> Value {
    match payload {
        Payload::TurnStarted(p) => json!({
            "prompt": p.prompt,
            "context": p.context.as_ref().map_or(Value::Null, |c| json!({
                "cwd": c.cwd,
                "model": model(c.model.as_ref()),
                "sandbox_mode": enum_name(c.sandbox_mode, pb::SandboxMode::as_str_name),
                "approval_policy": enum_name(c.approval_policy, pb::ApprovalPolicy::as_str_name),
                "metadata": c.metadata,
            })),
        }),
        Payload::TurnCompleted(p) => json!({
            "outcome": enum_name(p.outcome, pb::TurnOutcome::as_str_name),
            "response": p.response,
            "error": p.error,
            "usage": usage(p.usage.as_ref()),
            "messages": p.messages.iter().map(chat_message).collect::<Vec<_>>(),
            "model_calls": p.model_calls,
        }),
        Payload::AgentMessageDelta(p) => json!({ "delta": p.delta }),
        Payload::ReasoningDelta(p) => json!({ "delta": p.delta }),
        Payload::ReasoningSectionBreak(_) => json!({}),
        Payload::ToolCallStarted(p) => json!({
            "call_id": p.call_id,
            "tool": p.tool,
            "arguments": optional_struct(p.arguments.as_ref()),
        }),
        Payload::ToolCallDelta(p) => json!({ "call_id": p.call_id, "delta": p.delta }),
        Payload::ToolCallFinished(p) => json!({
            "call_id": p.call_id,
            "tool": p.tool,
            "success": p.success,
            "result": p.result,
        }),
        Payload::ExecCommandBegin(p) => exec_begin(p),
        Payload::ExecCommandOutputDelta(p) => exec_output(p),
        Payload::ExecCommandEnd(p) => exec_end(p),
        Payload::PermissionRequested(p) => json!({
            "request_id": p.request_id,
            "call_id": p.call_id,
            "tool": p.tool,
            "arguments": optional_struct(p.arguments.as_ref()),
            "summary": p.summary,
            "reason": p.reason,
            "display": p.display,
            "control_characters": p.control_characters,
        }),
        Payload::ApprovalResolved(p) => json!({
            "request_id": p.request_id,
            "decision": enum_name(p.decision, pb::ApprovalDecision::as_str_name),
            "resolution": enum_name(p.resolution, pb::ApprovalResolution::as_str_name),
            "reason": p.reason,
        }),
        Payload::PlanUpdated(p) => json!({
            "steps": p.steps.iter().map(|s| json!({
                "text": s.text,
                "status": enum_name(s.status, pb::PlanStepStatus::as_str_name),
            })).collect::<Vec<_>>(),
        }),
        Payload::TokenUsageReported(p) => json!({
            "call": usage(p.call.as_ref()),
            "turn_total": usage(p.turn_total.as_ref()),
        }),
        Payload::ErrorOccurred(p) => {
            json!({ "code": p.code, "message": p.message, "fatal": p.fatal })
        }
        Payload::HistoryCompacted(p) => json!({
            "summary": p.summary,
            "through_turn_id": p.through_turn_id,
            "turns_compacted": p.turns_compacted,
            "tokens_before": p.tokens_before,
            "tokens_after": p.tokens_after,
            "usage": usage(p.usage.as_ref()),
        }),
        Payload::MemoryRecalled(p) => json!({ "records": p.records, "section": p.section }),
        Payload::NetworkConnectionAttempted(p) => json!({
            "host": p.host,
            "port": p.port,
            "address": p.address,
            "allowed": p.allowed,
            "reason": p.reason,
        }),
    }
}

pub(crate) fn exec_begin(p: &pb::ExecCommandBegin) -> Value {
    json!({ "exec_id": p.exec_id, "argv": p.argv, "cwd": p.cwd, "call_id": p.call_id })
}

pub(crate) fn exec_output(p: &pb::ExecCommandOutputDelta) -> Value {
    json!({
        "exec_id": p.exec_id,
        "stream": enum_name(p.stream, pb::OutputStream::as_str_name),
        "text": p.text,
    })
}

pub(crate) fn exec_end(p: &pb::ExecCommandEnd) -> Value {
    json!({
        "exec_id": p.exec_id,
        "exit_code": p.exit_code,
        "duration_ms": p.duration_ms,
        "timed_out": p.timed_out,
        "output_truncated": p.output_truncated,
    })
}

/// One item of `odyssey exec --json`, shaped like an event: `kind` plus the item under
/// that name (`{"kind": "output", "output": {"stream": "OUTPUT_STREAM_STDOUT", ...}}`).
pub(crate) fn command_item(item: &pb::StreamSessionCommandResponse) -> Value {
    use pb::stream_session_command_response::Item;
    let (kind, body) = match &item.item {
        Some(Item::Begin(p)) => ("begin", exec_begin(p)),
        Some(Item::Output(p)) => ("output", exec_output(p)),
        Some(Item::End(p)) => ("end", exec_end(p)),
        None => ("unknown", Value::Null),
    };
    let mut object = Map::new();
    object.insert("kind".into(), Value::from(kind));
    object.insert(kind.into(), body);
    Value::Object(object)
}

pub(crate) fn approval(a: &pb::Approval) -> Value {
    json!({
        "request_id": a.request_id,
        "session_id": a.session_id,
        "execution_id": a.execution_id,
        "call_id": a.call_id,
        "tool": a.tool,
        "arguments": optional_struct(a.arguments.as_ref()),
        "summary": a.summary,
        "display": a.display,
        "control_characters": a.control_characters,
        "requested_at": timestamp(a.requested_at.as_ref()),
        "expires_at": timestamp(a.expires_at.as_ref()),
    })
}

pub(crate) fn resolved_approval(r: &pb::ResolveApprovalResponse) -> Value {
    json!({
        "approval": r.approval.as_ref().map_or(Value::Null, approval),
        "decision": enum_name(r.decision, pb::ApprovalDecision::as_str_name),
    })
}

fn chat_message(m: &pb::ChatMessage) -> Value {
    json!({
        "role": enum_name(m.role, pb::ChatRole::as_str_name),
        "content": m.content,
        "tool_calls": m.tool_calls.iter().map(|c| json!({
            "id": c.id,
            "name": c.name,
            "arguments_json": c.arguments_json,
        })).collect::<Vec<_>>(),
        "tool_call_id": m.tool_call_id,
        "is_error": m.is_error,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

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
    fn events_carry_kind_and_payload() {
        let value = event(&delta_event());
        assert_eq!(value["sequence"], 7);
        assert_eq!(value["kind"], "agent_message_delta");
        assert_eq!(value["agent_message_delta"]["delta"], "Hi");
        assert_eq!(value["created_at"], "1970-01-01T00:00:00Z");
        assert_eq!(value["turn_id"], "t1");
    }

    #[test]
    fn enums_become_names_and_unknown_values_stay_numbers() {
        let done = pb::SessionEvent {
            payload: Some(Payload::TurnCompleted(pb::TurnCompleted {
                outcome: pb::TurnOutcome::Failed.into(),
                error: "boom".into(),
                ..Default::default()
            })),
            ..delta_event()
        };
        let value = event(&done);
        assert_eq!(value["turn_completed"]["outcome"], "TURN_OUTCOME_FAILED");
        assert_eq!(value["turn_completed"]["usage"], Value::Null);
        assert_eq!(enum_name(99, pb::TurnOutcome::as_str_name), Value::from(99));
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

    #[test]
    fn memory_events_carry_their_fields() {
        let compacted = pb::SessionEvent {
            payload: Some(Payload::HistoryCompacted(pb::HistoryCompacted {
                summary: "S".into(),
                through_turn_id: "t2".into(),
                turns_compacted: 2,
                tokens_before: 900,
                tokens_after: 300,
                usage: Some(pb::TokenUsage {
                    output_tokens: 40,
                    ..Default::default()
                }),
            })),
            ..delta_event()
        };
        let value = event(&compacted);
        assert_eq!(value["kind"], "history_compacted");
        let body = &value["history_compacted"];
        assert_eq!(body["summary"], "S");
        assert_eq!(body["through_turn_id"], "t2");
        assert_eq!(
            (
                body["tokens_before"].as_u64(),
                body["tokens_after"].as_u64()
            ),
            (Some(900), Some(300))
        );
        assert_eq!(body["usage"]["output_tokens"], 40);
        let recalled = pb::SessionEvent {
            payload: Some(Payload::MemoryRecalled(pb::MemoryRecalled {
                records: 3,
                section: "## Memory".into(),
            })),
            ..delta_event()
        };
        let value = event(&recalled);
        assert_eq!(
            value["memory_recalled"],
            json!({ "records": 3, "section": "## Memory" })
        );
    }

    #[test]
    fn sessions_map_their_fields() {
        let session = pb::Session {
            id: "s1".into(),
            sandbox_mode: pb::SandboxMode::ReadOnly.into(),
            model: Some(pb::ModelSpec {
                provider: "replay".into(),
                name: "guide".into(),
                config: None,
            }),
            last_sequence: 12,
            token_budget: 5000,
            ..Default::default()
        };
        let value = super::session(&session);
        assert_eq!(value["sandbox_mode"], "SANDBOX_MODE_READ_ONLY");
        assert_eq!(value["model"]["provider"], "replay");
        assert_eq!(value["last_sequence"], 12);
        assert_eq!(value["token_budget"], 5000);
        assert_eq!(value["created_at"], Value::Null);
    }

    #[test]
    fn command_items_are_tagged_by_kind() {
        use pb::stream_session_command_response::Item;
        let output = pb::StreamSessionCommandResponse {
            item: Some(Item::Output(pb::ExecCommandOutputDelta {
                exec_id: "x1".into(),
                stream: pb::OutputStream::Stderr.into(),
                text: "oops\n".into(),
            })),
        };
        assert_eq!(
            command_item(&output),
            json!({
                "kind": "output",
                "output": { "exec_id": "x1", "stream": "OUTPUT_STREAM_STDERR", "text": "oops\n" },
            })
        );
        let end = pb::StreamSessionCommandResponse {
            item: Some(Item::End(pb::ExecCommandEnd {
                exec_id: "x1".into(),
                exit_code: 3,
                ..Default::default()
            })),
        };
        let value = command_item(&end);
        assert_eq!(value["kind"], "end");
        assert_eq!(value["end"]["exit_code"], 3);
        let begin = pb::StreamSessionCommandResponse {
            item: Some(Item::Begin(pb::ExecCommandBegin {
                exec_id: "x1".into(),
                argv: vec!["ls".into()],
                ..Default::default()
            })),
        };
        assert_eq!(command_item(&begin)["begin"]["argv"], json!(["ls"]));
    }

    #[test]
    fn approvals_map_their_fields() {
        let pending = pb::Approval {
            request_id: "req-1".into(),
            session_id: "s1".into(),
            tool: "Bash".into(),
            summary: "run `ls`".into(),
            requested_at: Some(prost_types::Timestamp {
                seconds: 0,
                nanos: 0,
            }),
            ..Default::default()
        };
        let value = approval(&pending);
        assert_eq!(value["request_id"], "req-1");
        assert_eq!(value["requested_at"], "1970-01-01T00:00:00Z");
        assert_eq!(value["expires_at"], Value::Null);
        let resolved = resolved_approval(&pb::ResolveApprovalResponse {
            approval: Some(pending),
            decision: pb::ApprovalDecision::Deny.into(),
        });
        assert_eq!(resolved["decision"], "APPROVAL_DECISION_DENY");
        assert_eq!(resolved["approval"]["tool"], "Bash");
    }
}
