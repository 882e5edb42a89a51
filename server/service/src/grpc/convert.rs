//! Core types ↔ `odyssey.v1` messages. Plain translation, no decisions.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use odyssey_api::v1 as pb;
use prost_types::{ListValue, Struct, Timestamp, Value, value::Kind};

use odyssey_runtime::bundle::{InstalledBundle, SkillSummary};
use odyssey_runtime::chat::{ChatMessage, Role, TokenUsage};
use odyssey_runtime::events::{self as ev, Event, EventPayload};
use odyssey_runtime::execution::{ExecutionState, ExecutionStatus};
use odyssey_runtime::permissions::Approval;
use odyssey_runtime::policy::{ApprovalPolicy, SandboxMode};
use odyssey_runtime::session::{SessionInfo, SessionState};
use odyssey_runtime::skills::{SkillListing, SkillSource};
use odyssey_runtime::{
    AgentMcpServer, InputDisposition, InputReceipt, ModelAvailability, ModelSpec, ServedAgent,
    SessionToolSource, SessionTools,
};

pub fn timestamp(at: SystemTime) -> Timestamp {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    Timestamp {
        seconds: since.as_secs() as i64,
        nanos: since.subsec_nanos() as i32,
    }
}

pub fn timestamp_ms(ms: u64) -> Timestamp {
    timestamp(UNIX_EPOCH + Duration::from_millis(ms))
}

// ---- JSON <-> google.protobuf.Struct ----

pub fn json_to_value(value: &serde_json::Value) -> Value {
    let kind = match value {
        serde_json::Value::Null => Kind::NullValue(0),
        serde_json::Value::Bool(b) => Kind::BoolValue(*b),
        serde_json::Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or(0.0)),
        serde_json::Value::String(s) => Kind::StringValue(s.clone()),
        serde_json::Value::Array(items) => Kind::ListValue(ListValue {
            values: items.iter().map(json_to_value).collect(),
        }),
        serde_json::Value::Object(map) => Kind::StructValue(json_to_struct(map)),
    };
    Value { kind: Some(kind) }
}

pub fn json_to_struct(map: &serde_json::Map<String, serde_json::Value>) -> Struct {
    Struct {
        fields: map
            .iter()
            .map(|(k, v)| (k.clone(), json_to_value(v)))
            .collect(),
    }
}

/// A JSON value as a Struct: objects as they are, anything else under `value`.
pub fn json_as_struct(value: &serde_json::Value) -> Struct {
    match value {
        serde_json::Value::Object(map) => json_to_struct(map),
        other => Struct {
            fields: [("value".to_string(), json_to_value(other))].into(),
        },
    }
}

pub fn value_to_json(value: &Value) -> serde_json::Value {
    match &value.kind {
        None | Some(Kind::NullValue(_)) => serde_json::Value::Null,
        Some(Kind::BoolValue(b)) => serde_json::Value::Bool(*b),
        Some(Kind::NumberValue(n)) => number_to_json(*n),
        Some(Kind::StringValue(s)) => serde_json::Value::String(s.clone()),
        Some(Kind::ListValue(list)) => {
            serde_json::Value::Array(list.values.iter().map(value_to_json).collect())
        }
        Some(Kind::StructValue(s)) => serde_json::Value::Object(struct_to_json(s)),
    }
}

/// Struct numbers are doubles; whole ones go back to JSON integers (`max_tokens: 512`).
fn number_to_json(n: f64) -> serde_json::Value {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        serde_json::Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map_or(serde_json::Value::Null, serde_json::Value::Number)
    }
}

pub fn struct_to_json(s: &Struct) -> serde_json::Map<String, serde_json::Value> {
    s.fields
        .iter()
        .map(|(k, v)| (k.clone(), value_to_json(v)))
        .collect()
}

// ---- enums ----

pub fn sandbox_mode(mode: SandboxMode) -> i32 {
    let mode = match mode {
        SandboxMode::ReadOnly => pb::SandboxMode::ReadOnly,
        SandboxMode::WorkspaceWrite => pb::SandboxMode::WorkspaceWrite,
        SandboxMode::DangerFullAccess => pb::SandboxMode::DangerFullAccess,
    };
    mode as i32
}

/// `None` for UNSPECIFIED; `Err` names an unknown number.
pub fn sandbox_mode_from(value: i32) -> Result<Option<SandboxMode>, String> {
    match pb::SandboxMode::try_from(value) {
        Ok(pb::SandboxMode::Unspecified) => Ok(None),
        Ok(pb::SandboxMode::ReadOnly) => Ok(Some(SandboxMode::ReadOnly)),
        Ok(pb::SandboxMode::WorkspaceWrite) => Ok(Some(SandboxMode::WorkspaceWrite)),
        Ok(pb::SandboxMode::DangerFullAccess) => Ok(Some(SandboxMode::DangerFullAccess)),
        Err(_) => Err(format!("unknown sandbox mode {value}")),
    }
}

pub fn approval_policy(policy: ApprovalPolicy) -> i32 {
    let policy = match policy {
        ApprovalPolicy::OnRequest => pb::ApprovalPolicy::OnRequest,
        ApprovalPolicy::Untrusted => pb::ApprovalPolicy::Untrusted,
        ApprovalPolicy::Never => pb::ApprovalPolicy::Never,
    };
    policy as i32
}

pub fn approval_policy_from(value: i32) -> Result<Option<ApprovalPolicy>, String> {
    match pb::ApprovalPolicy::try_from(value) {
        Ok(pb::ApprovalPolicy::Unspecified) => Ok(None),
        Ok(pb::ApprovalPolicy::OnRequest) => Ok(Some(ApprovalPolicy::OnRequest)),
        Ok(pb::ApprovalPolicy::Untrusted) => Ok(Some(ApprovalPolicy::Untrusted)),
        Ok(pb::ApprovalPolicy::Never) => Ok(Some(ApprovalPolicy::Never)),
        Err(_) => Err(format!("unknown approval policy {value}")),
    }
}

fn execution_state(state: ExecutionState) -> i32 {
    use pb::ExecutionState as S;
    (match state {
        ExecutionState::Queued => S::Queued,
        ExecutionState::Running => S::Running,
        ExecutionState::WaitingApproval => S::WaitingApproval,
        ExecutionState::Completed => S::Completed,
        ExecutionState::Failed => S::Failed,
        ExecutionState::Cancelled => S::Cancelled,
        ExecutionState::Interrupted => S::Interrupted,
    }) as i32
}

fn turn_outcome(outcome: ev::TurnOutcome) -> i32 {
    use pb::TurnOutcome as O;
    (match outcome {
        ev::TurnOutcome::Completed => O::Completed,
        ev::TurnOutcome::Failed => O::Failed,
        ev::TurnOutcome::Cancelled => O::Cancelled,
        ev::TurnOutcome::Interrupted => O::Interrupted,
    }) as i32
}

pub fn output_stream(stream: ev::OutputStream) -> i32 {
    let stream = match stream {
        ev::OutputStream::Stdout => pb::OutputStream::Stdout,
        ev::OutputStream::Stderr => pb::OutputStream::Stderr,
    };
    stream as i32
}

// ---- models, usage, chat ----

pub fn model(spec: &ModelSpec) -> pb::ModelSpec {
    pb::ModelSpec {
        provider: spec.provider.clone(),
        name: spec.name.clone(),
        config: spec.config.as_ref().map(json_to_struct),
    }
}

/// `None` when the message is absent or empty (provider and name both unset).
pub fn model_from(spec: Option<&pb::ModelSpec>) -> Option<ModelSpec> {
    let spec = spec?;
    if spec.provider.is_empty() && spec.name.is_empty() {
        return None;
    }
    Some(ModelSpec {
        provider: spec.provider.clone(),
        name: spec.name.clone(),
        config: spec.config.as_ref().map(struct_to_json),
    })
}

pub fn usage(u: &TokenUsage) -> pb::TokenUsage {
    pb::TokenUsage {
        input_tokens: u.input_tokens,
        output_tokens: u.output_tokens,
        cached_input_tokens: u.cached_input_tokens,
        reasoning_tokens: u.reasoning_tokens,
        total_tokens: u.total_tokens,
    }
}

fn chat_message(m: &ChatMessage) -> pb::ChatMessage {
    let role = match m.role {
        Role::System => pb::ChatRole::System,
        Role::User => pb::ChatRole::User,
        Role::Assistant => pb::ChatRole::Assistant,
        Role::Tool => pb::ChatRole::Tool,
    };
    pb::ChatMessage {
        role: role as i32,
        content: m.content.clone(),
        tool_calls: m
            .tool_calls
            .iter()
            .map(|c| pb::ToolCall {
                id: c.id.clone(),
                name: c.name.clone(),
                arguments_json: c.arguments.clone(),
            })
            .collect(),
        tool_call_id: m.tool_call_id.clone().unwrap_or_default(),
        is_error: m.is_error,
    }
}

// ---- bundles ----

pub fn bundle_ref(b: &InstalledBundle) -> pb::BundleRef {
    pb::BundleRef {
        namespace: b.id.namespace.clone(),
        name: b.id.name.clone(),
        version: b.id.version.to_string(),
        digest: b.id.digest.clone(),
    }
}

pub fn bundle(b: &InstalledBundle) -> pb::Bundle {
    pb::Bundle {
        r#ref: Some(bundle_ref(b)),
        description: b.manifest.description.clone(),
        default_agent_id: b.manifest.default_agent().id.clone(),
        agent_ids: b.manifest.agents.iter().map(|a| a.id.clone()).collect(),
        installed_at: Some(timestamp(b.installed_at)),
        size_bytes: b.size_bytes,
        file_count: b.file_count,
    }
}

pub fn agent(served: &ServedAgent) -> pb::AgentInfo {
    let a = &served.agent;
    pb::AgentInfo {
        id: a.id.clone(),
        name: a.name.clone(),
        version: a.version.clone(),
        description: a.description.clone(),
        model: Some(model(&a.model)),
        is_default: a.is_default,
        tools_allow: a.tools.allow.clone(),
        tools_ask: a.tools.ask.clone(),
        tools_deny: a.tools.deny.clone(),
        bundle_model: served.bundle_model.as_ref().map(model),
        delegates: a.delegates.clone(),
        mcp_servers: served.mcp_servers.iter().map(mcp_server_info).collect(),
        a2a_agents: served
            .a2a_agents
            .iter()
            .map(|remote| pb::A2aAgentInfo {
                name: remote.name.clone(),
                url: remote.url.clone().unwrap_or_default(),
                operator: remote.operator,
            })
            .collect(),
    }
}

pub fn mcp_server_info(server: &AgentMcpServer) -> pb::McpServerInfo {
    pb::McpServerInfo {
        name: server.name.clone(),
        kind: server
            .kind
            .map(|kind| kind.as_str().to_owned())
            .unwrap_or_default(),
        operator: server.operator,
    }
}

pub fn session_tools(listed: &SessionTools) -> pb::ListSessionToolsResponse {
    pb::ListSessionToolsResponse {
        tools: listed
            .tools
            .items
            .iter()
            .map(|tool| pb::SessionTool {
                name: tool.spec.name.clone(),
                description: tool.spec.description.clone(),
                input_schema_json: tool.spec.parameters.to_string(),
                source: tool.source.as_str().to_owned(),
                mcp_server: match &tool.source {
                    SessionToolSource::Mcp(server) => server.clone(),
                    _ => String::new(),
                },
            })
            .collect(),
        next_page_token: listed.tools.next_token.clone().unwrap_or_default(),
        mcp_server_errors: listed
            .mcp_server_errors
            .iter()
            .map(|(server, error)| pb::McpServerError {
                server: server.clone(),
                error: error.clone(),
            })
            .collect(),
    }
}

pub fn skill(s: &SkillSummary) -> pb::SkillInfo {
    pb::SkillInfo {
        name: s.name.clone(),
        description: s.description.clone(),
        path: s.path.clone(),
        error: s.error.clone().unwrap_or_default(),
        source: SkillSource::Bundle.as_str().to_owned(),
    }
}

pub fn skill_listing(s: &SkillListing) -> pb::SkillInfo {
    pb::SkillInfo {
        source: s.source.as_str().to_owned(),
        ..skill(&s.summary)
    }
}

pub fn model_info(m: &ModelAvailability) -> pb::ModelInfo {
    pb::ModelInfo {
        agent_id: m.agent_id.clone(),
        model: Some(model(&m.model)),
        available: m.available,
        detail: m.detail.clone(),
        bundle_model: m.bundle_model.as_ref().map(model),
    }
}

/// `agents` are the bundle's, each with the model this server runs it on.
pub fn inspect(b: &InstalledBundle, agents: &[ServedAgent]) -> pb::InspectBundleResponse {
    let m = &b.manifest;
    pb::InspectBundleResponse {
        bundle: Some(bundle(b)),
        agents: agents.iter().map(agent).collect(),
        skills: m.skills.iter().map(skill).collect(),
        tools: m
            .tools
            .iter()
            .map(|t| pb::ToolInfo {
                name: t.name.clone(),
                source: t.source.clone(),
            })
            .collect(),
        sandbox: Some(pb::SandboxPolicy {
            mode: sandbox_mode(m.sandbox.mode),
            network: m.sandbox.network.clone(),
            mounts_read: m.sandbox.mounts_read.clone(),
            mounts_write: m.sandbox.mounts_write.clone(),
            env: m.sandbox.env.clone().into_iter().collect(),
            cpu: m.sandbox.cpu.unwrap_or(0),
            memory_mb: m.sandbox.memory_mb.unwrap_or(0),
        }),
        readme: b.readme_text().unwrap_or_default(),
    }
}

// ---- sessions and executions ----

pub fn session(info: &SessionInfo) -> pb::Session {
    let r = &info.record;
    pb::Session {
        id: r.id.to_string(),
        bundle_reference: r.bundle_reference.clone(),
        bundle: Some(pb::BundleRef {
            namespace: r.bundle.namespace.clone(),
            name: r.bundle.name.clone(),
            version: r.bundle.version.clone(),
            digest: r.bundle.digest.clone(),
        }),
        agent_id: r.agent_id.clone(),
        model: Some(model(&r.model)),
        sandbox_mode: sandbox_mode(r.sandbox_mode),
        approval_policy: approval_policy(r.approval_policy),
        created_at: Some(timestamp_ms(r.created_at_ms)),
        updated_at: Some(timestamp_ms(info.stats.updated_at_ms.max(r.created_at_ms))),
        turn_count: info.stats.turn_count,
        last_sequence: info.stats.last_sequence,
        metadata: r.metadata.clone().into_iter().collect(),
        usage: Some(usage(&info.stats.usage)),
        token_budget: r.token_budget.unwrap_or(0),
        state: session_state(info.state),
        parent_session_id: r
            .parent
            .as_ref()
            .map(|p| p.session_id.to_string())
            .unwrap_or_default(),
        parent_call_id: r
            .parent
            .as_ref()
            .map(|p| p.call_id.clone())
            .unwrap_or_default(),
        forked_from: r
            .forked
            .as_ref()
            .map(|f| f.session_id.to_string())
            .unwrap_or_default(),
        forked_at: r.forked.as_ref().map(|f| pb::ForkPoint {
            turn: f.turn,
            sequence: f.sequence,
            turn_id: f.turn_id.to_string(),
        }),
    }
}

/// What a turn changed in the workspace.
pub fn turn_changes(c: &odyssey_runtime::snapshot::TurnChanges) -> pb::GetTurnChangesResponse {
    use odyssey_runtime::snapshot::{ChangeKind, NodeKind};
    pb::GetTurnChangesResponse {
        turn: c.turn,
        turn_id: c.turn_id.to_string(),
        base_turn: c.base_turn,
        changes: c
            .changes
            .iter()
            .map(|f| pb::FileChange {
                path: f.path.clone(),
                change: (match f.change {
                    ChangeKind::Added => pb::FileChangeKind::Added,
                    ChangeKind::Changed => pb::FileChangeKind::Changed,
                    ChangeKind::Removed => pb::FileChangeKind::Removed,
                }) as i32,
                kind: (match f.kind {
                    NodeKind::File => pb::FileNodeKind::File,
                    NodeKind::Dir => pb::FileNodeKind::Directory,
                    NodeKind::Symlink => pb::FileNodeKind::Symlink,
                }) as i32,
                size_before: f.size_before,
                size_after: f.size_after,
                binary: f.binary,
                unified_diff: f.unified_diff.clone(),
                diff_truncated: f.diff_truncated,
            })
            .collect(),
        truncated: c.truncated,
    }
}

fn session_state(state: SessionState) -> i32 {
    (match state {
        SessionState::Idle => pb::SessionState::Idle,
        SessionState::Running => pb::SessionState::Running,
        SessionState::WaitingForApproval => pb::SessionState::WaitingForApproval,
    }) as i32
}

pub fn execution_status(s: &ExecutionStatus) -> pb::ExecutionStatus {
    pb::ExecutionStatus {
        execution_id: s.execution_id.to_string(),
        session_id: s.session_id.to_string(),
        state: execution_state(s.state),
        response: s.response.clone(),
        error: s.error.clone(),
        usage: Some(usage(&s.usage)),
        first_sequence: s.first_sequence,
        last_sequence: s.last_sequence,
    }
}

/// A pending or resolved approval request, as ListApprovals and ResolveApproval answer it.
pub fn approval(a: &Approval) -> pb::Approval {
    pb::Approval {
        request_id: a.request_id.clone(),
        session_id: a.request.session_id.to_string(),
        execution_id: a.request.execution_id.to_string(),
        call_id: a.request.call_id.clone(),
        tool: a.request.tool.clone(),
        arguments: Some(json_as_struct(&a.request.arguments)),
        summary: a.request.summary.clone(),
        display: a.request.display.text.clone(),
        control_characters: a.request.display.control_characters,
        requested_at: Some(timestamp_ms(a.created_at_ms)),
        expires_at: Some(timestamp_ms(a.expires_at_ms)),
        reason: a.request.reason.clone(),
        parent_session_ids: a
            .request
            .parent_session_ids
            .iter()
            .map(uuid::Uuid::to_string)
            .collect(),
        kind: match &a.request.input {
            Some(_) => pb::ApprovalKind::Input,
            None => pb::ApprovalKind::ToolCall,
        } as i32,
        requested_schema: a.request.input.as_ref().map(|i| json_as_struct(&i.schema)),
        message: a
            .request
            .input
            .as_ref()
            .map(|i| i.message.clone())
            .unwrap_or_default(),
    }
}

/// What a person did with a request for input, as the API names it.
pub fn input_action(action: ev::InputAction) -> i32 {
    (match action {
        ev::InputAction::Accept => pb::HumanInputAction::Accept,
        ev::InputAction::Decline => pb::HumanInputAction::Decline,
        ev::InputAction::Cancel => pb::HumanInputAction::Cancel,
    }) as i32
}

/// How a request ended, as WatchApprovals reports its removal. A request still pending
/// (never the case for a removal) reads as decided with no decision.
pub fn approval_removed(a: &Approval) -> pb::ApprovalResolved {
    let (decision, resolution, reason) = match &a.resolution {
        Some(r) => (
            approval_decision(r.decision),
            approval_resolution(r.resolution),
            r.reason.clone(),
        ),
        None => (0, 0, String::new()),
    };
    pb::ApprovalResolved {
        request_id: a.request_id.clone(),
        decision,
        resolution,
        reason,
    }
}

fn approval_resolution(r: ev::ApprovalResolution) -> i32 {
    (match r {
        ev::ApprovalResolution::Decided => pb::ApprovalResolution::Decided,
        ev::ApprovalResolution::TimedOut => pb::ApprovalResolution::TimedOut,
        ev::ApprovalResolution::Cancelled => pb::ApprovalResolution::Cancelled,
        ev::ApprovalResolution::Interrupted => pb::ApprovalResolution::Interrupted,
    }) as i32
}

/// The runtime's approval decision as the API's enum value.
pub fn approval_decision(d: ev::ApprovalDecision) -> i32 {
    let decision = match d {
        ev::ApprovalDecision::AllowOnce => pb::ApprovalDecision::AllowOnce,
        ev::ApprovalDecision::AllowAlways => pb::ApprovalDecision::AllowAlways,
        ev::ApprovalDecision::Deny => pb::ApprovalDecision::Deny,
    };
    decision as i32
}

// ---- events ----

/// Converts the events of one stream, formatting the session's and the current turn's
/// ids once rather than for every event.
#[derive(Default)]
pub struct EventIds {
    session: Option<(uuid::Uuid, String)>,
    turn: Option<(uuid::Uuid, String)>,
}

impl EventIds {
    pub fn event(&mut self, e: &Event) -> pb::SessionEvent {
        pb::SessionEvent {
            id: e.id.to_string(),
            session_id: cached(&mut self.session, e.session_id),
            sequence: e.sequence,
            created_at: Some(timestamp_ms(e.created_at_ms)),
            turn_id: e
                .turn_id
                .map(|t| cached(&mut self.turn, t))
                .unwrap_or_default(),
            payload: Some(payload(&e.payload)),
        }
    }
}

fn cached(slot: &mut Option<(uuid::Uuid, String)>, id: uuid::Uuid) -> String {
    match slot {
        Some((known, text)) if *known == id => text.clone(),
        _ => slot.insert((id, id.to_string())).1.clone(),
    }
}

fn payload(p: &EventPayload) -> pb::session_event::Payload {
    use pb::session_event::Payload as P;
    match p {
        EventPayload::TurnStarted(t) => P::TurnStarted(pb::TurnStarted {
            prompt: t.prompt.clone(),
            context: Some(pb::TurnContext {
                cwd: t.context.cwd.clone(),
                model: Some(model(&t.context.model)),
                sandbox_mode: sandbox_mode(t.context.sandbox_mode),
                approval_policy: approval_policy(t.context.approval_policy),
                metadata: t.context.metadata.clone().into_iter().collect(),
            }),
        }),
        EventPayload::TurnCompleted(t) => P::TurnCompleted(pb::TurnCompleted {
            outcome: turn_outcome(t.outcome),
            response: t.response.clone(),
            error: t.error.clone(),
            usage: Some(usage(&t.usage)),
            messages: t.messages.iter().map(chat_message).collect(),
            model_calls: t.model_calls,
            reason: t.reason.clone(),
        }),
        EventPayload::AgentMessageDelta { delta } => P::AgentMessageDelta(pb::AgentMessageDelta {
            delta: delta.clone(),
        }),
        EventPayload::ReasoningDelta { delta } => P::ReasoningDelta(pb::ReasoningDelta {
            delta: delta.clone(),
        }),
        EventPayload::ReasoningSectionBreak => {
            P::ReasoningSectionBreak(pb::ReasoningSectionBreak {})
        }
        EventPayload::ToolCallStarted {
            call_id,
            tool,
            arguments,
        } => P::ToolCallStarted(pb::ToolCallStarted {
            call_id: call_id.clone(),
            tool: tool.clone(),
            arguments: Some(json_as_struct(arguments)),
        }),
        EventPayload::ToolCallDelta { call_id, delta } => P::ToolCallDelta(pb::ToolCallDelta {
            call_id: call_id.clone(),
            delta: delta.clone(),
        }),
        EventPayload::ToolCallFinished {
            call_id,
            tool,
            success,
            result,
        } => P::ToolCallFinished(pb::ToolCallFinished {
            call_id: call_id.clone(),
            tool: tool.clone(),
            success: *success,
            result: result.clone(),
        }),
        EventPayload::ExecCommandBegin {
            exec_id,
            argv,
            cwd,
            call_id,
        } => P::ExecCommandBegin(pb::ExecCommandBegin {
            exec_id: exec_id.clone(),
            argv: argv.clone(),
            cwd: cwd.clone(),
            call_id: call_id.clone().unwrap_or_default(),
        }),
        EventPayload::ExecCommandOutputDelta {
            exec_id,
            stream,
            text,
        } => P::ExecCommandOutputDelta(pb::ExecCommandOutputDelta {
            exec_id: exec_id.clone(),
            stream: output_stream(*stream),
            text: text.clone(),
        }),
        EventPayload::ExecCommandEnd {
            exec_id,
            exit_code,
            duration_ms,
            timed_out,
            output_truncated,
        } => P::ExecCommandEnd(pb::ExecCommandEnd {
            exec_id: exec_id.clone(),
            exit_code: *exit_code,
            duration_ms: *duration_ms,
            timed_out: *timed_out,
            output_truncated: *output_truncated,
        }),
        EventPayload::PermissionRequested {
            request_id,
            call_id,
            tool,
            arguments,
            summary,
            reason,
            display,
            control_characters,
        } => P::PermissionRequested(pb::PermissionRequested {
            request_id: request_id.clone(),
            call_id: call_id.clone(),
            tool: tool.clone(),
            arguments: Some(json_as_struct(arguments)),
            summary: summary.clone(),
            reason: reason.clone(),
            display: display.clone(),
            control_characters: *control_characters,
        }),
        EventPayload::ApprovalResolved {
            request_id,
            decision,
            resolution,
            reason,
        } => P::ApprovalResolved(pb::ApprovalResolved {
            request_id: request_id.clone(),
            decision: approval_decision(*decision),
            resolution: approval_resolution(*resolution),
            reason: reason.clone(),
        }),
        EventPayload::HumanInputRequested(r) => P::HumanInputRequested(pb::HumanInputRequested {
            request_id: r.request_id.clone(),
            call_id: r.call_id.clone(),
            tool: r.tool.clone(),
            server: r.server.clone(),
            message: r.message.clone(),
            requested_schema: Some(json_as_struct(&r.schema)),
            display: r.display.clone(),
        }),
        EventPayload::HumanInputAnswered(a) => P::HumanInputAnswered(pb::HumanInputAnswered {
            request_id: a.request_id.clone(),
            action: input_action(a.action),
            resolution: approval_resolution(a.resolution),
            answer: a.answer.as_ref().map(json_as_struct),
            reason: a.reason.clone(),
        }),
        EventPayload::PlanUpdated { steps } => P::PlanUpdated(pb::PlanUpdated {
            steps: steps
                .iter()
                .map(|s| pb::PlanStep {
                    text: s.text.clone(),
                    status: match s.status {
                        ev::PlanStepStatus::Pending => pb::PlanStepStatus::Pending,
                        ev::PlanStepStatus::InProgress => pb::PlanStepStatus::InProgress,
                        ev::PlanStepStatus::Completed => pb::PlanStepStatus::Completed,
                    } as i32,
                })
                .collect(),
        }),
        EventPayload::TokenUsageReported { call, turn_total } => {
            P::TokenUsageReported(pb::TokenUsageReported {
                call: Some(usage(call)),
                turn_total: Some(usage(turn_total)),
            })
        }
        EventPayload::ErrorOccurred {
            code,
            message,
            fatal,
        } => P::ErrorOccurred(pb::ErrorOccurred {
            code: code.clone(),
            message: message.clone(),
            fatal: *fatal,
        }),
        EventPayload::HistoryCompacted(c) => P::HistoryCompacted(pb::HistoryCompacted {
            summary: c.summary.clone(),
            through_turn_id: c.through_turn_id.to_string(),
            turns_compacted: c.turns_compacted,
            tokens_before: c.tokens_before,
            tokens_after: c.tokens_after,
            usage: Some(usage(&c.usage)),
        }),
        EventPayload::MemoryRecalled { records, section } => {
            P::MemoryRecalled(pb::MemoryRecalled {
                records: *records,
                section: section.clone(),
            })
        }
        EventPayload::SessionRewound(r) => P::SessionRewound(pb::SessionRewound {
            to_turn: r.to_turn,
            to_turn_id: r.to_turn_id.to_string(),
            to_sequence: r.to_sequence,
            turns_left: r.turns_left,
            entries: r.entries,
        }),
        EventPayload::NetworkConnectionAttempted(a) => {
            P::NetworkConnectionAttempted(pb::NetworkConnectionAttempted {
                host: a.host.clone(),
                port: a.port,
                address: a.address.clone(),
                allowed: a.allowed,
                reason: a.reason.clone(),
            })
        }
        EventPayload::SubagentStarted(s) => P::SubagentStarted(pb::SubagentStarted {
            call_id: s.call_id.clone(),
            child_session_id: s.child_session_id.to_string(),
            child_turn_id: s.child_turn_id.to_string(),
            agent_id: s.agent_id.clone(),
            workspace: s.workspace.as_str().to_owned(),
        }),
        EventPayload::SubagentFinished(f) => P::SubagentFinished(pb::SubagentFinished {
            call_id: f.call_id.clone(),
            child_session_id: f.child_session_id.to_string(),
            child_turn_id: f.child_turn_id.to_string(),
            agent_id: f.agent_id.clone(),
            outcome: turn_outcome(f.outcome),
            error: f.error.clone(),
            usage: Some(usage(&f.usage)),
        }),
        EventPayload::UserInputAdded { text, mode } => P::UserInputAdded(pb::UserInputAdded {
            text: text.clone(),
            mode: input_mode(*mode),
        }),
    }
}

pub fn input_mode(mode: ev::InputMode) -> i32 {
    match mode {
        ev::InputMode::Steer => pb::InputMode::Steer,
        ev::InputMode::Queue => pb::InputMode::Queue,
        ev::InputMode::Interrupt => pb::InputMode::Interrupt,
    }
    .into()
}

/// An `InputMode` of a request; `UNSPECIFIED` and unknown values are refused.
pub fn input_mode_from(value: i32) -> Result<ev::InputMode, String> {
    match pb::InputMode::try_from(value) {
        Ok(pb::InputMode::Steer) => Ok(ev::InputMode::Steer),
        Ok(pb::InputMode::Queue) => Ok(ev::InputMode::Queue),
        Ok(pb::InputMode::Interrupt) => Ok(ev::InputMode::Interrupt),
        Ok(pb::InputMode::Unspecified) => {
            Err("is required: INPUT_MODE_STEER, INPUT_MODE_QUEUE or INPUT_MODE_INTERRUPT".into())
        }
        Err(_) => Err(format!(
            "{value} is not an input mode (INPUT_MODE_STEER, INPUT_MODE_QUEUE or INPUT_MODE_INTERRUPT)"
        )),
    }
}

pub fn input_receipt(r: &InputReceipt) -> pb::SendInputResponse {
    let disposition = match r.disposition {
        InputDisposition::Steered => pb::InputDisposition::Steered,
        InputDisposition::Queued => pb::InputDisposition::Queued,
        InputDisposition::Interrupted => pb::InputDisposition::Interrupted,
        InputDisposition::Started => pb::InputDisposition::Started,
    };
    pb::SendInputResponse {
        session_id: r.session_id.to_string(),
        disposition: disposition.into(),
        execution_id: r.execution_id.to_string(),
        interrupted_execution_id: r
            .interrupted_execution_id
            .map(|id| id.to_string())
            .unwrap_or_default(),
    }
}
