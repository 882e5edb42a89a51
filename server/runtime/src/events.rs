//! Session events: every step of a turn, as stored in the session's log and streamed to
//! subscribers. Names read as sentences (`TurnStarted`, `ToolCallFinished`).
//!
//! The log stores one [`Event`] per line as JSON; the serde shape below is that on-disk
//! format, so changes to it must stay readable by older logs (add optional fields only).

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::chat::{ChatMessage, TokenUsage};
use crate::model::ModelSpec;
use crate::policy::{ApprovalPolicy, SandboxMode};

/// One entry of a session's event log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub id: Uuid,
    pub session_id: Uuid,
    /// Per-session, gap-free, starting at 1.
    #[serde(rename = "seq")]
    pub sequence: u64,
    /// Milliseconds since the Unix epoch.
    #[serde(rename = "at")]
    pub created_at_ms: u64,
    /// The turn (execution) this event belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<Uuid>,
    #[serde(flatten)]
    pub payload: EventPayload,
}

impl Event {
    pub fn created_at(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.created_at_ms)
    }
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// What happened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
pub enum EventPayload {
    TurnStarted(TurnStarted),
    TurnCompleted(TurnCompleted),
    AgentMessageDelta {
        delta: String,
    },
    ReasoningDelta {
        delta: String,
    },
    ReasoningSectionBreak,
    ToolCallStarted {
        call_id: String,
        tool: String,
        /// Sanitized: secrets and file bodies replaced by their length and digest.
        arguments: serde_json::Value,
    },
    ToolCallDelta {
        call_id: String,
        delta: String,
    },
    ToolCallFinished {
        call_id: String,
        tool: String,
        success: bool,
        result: String,
    },
    ExecCommandBegin {
        exec_id: String,
        argv: Vec<String>,
        cwd: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
    },
    ExecCommandOutputDelta {
        exec_id: String,
        stream: OutputStream,
        text: String,
    },
    ExecCommandEnd {
        exec_id: String,
        exit_code: i32,
        duration_ms: u64,
        timed_out: bool,
        output_truncated: bool,
    },
    PermissionRequested {
        request_id: String,
        call_id: String,
        tool: String,
        arguments: serde_json::Value,
        summary: String,
        reason: String,
        /// The call as a person is shown it before deciding: control characters as
        /// visible escapes, nothing cut (`permissions::display_call`). Empty in events
        /// written before it existed.
        #[serde(default)]
        display: String,
        /// Whether the call holds control characters (shown escaped in `display`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        control_characters: bool,
    },
    ApprovalResolved {
        request_id: String,
        decision: ApprovalDecision,
        resolution: ApprovalResolution,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        reason: String,
    },
    PlanUpdated {
        steps: Vec<PlanStep>,
    },
    TokenUsageReported {
        call: TokenUsage,
        turn_total: TokenUsage,
    },
    ErrorOccurred {
        code: String,
        message: String,
        fatal: bool,
    },
    /// Older turns were replaced by a summary to keep the history within the model's
    /// context window; later turns are sent the summary, then the turns after it.
    HistoryCompacted(HistoryCompacted),
    /// Long-term memory recalled into the system prompt at the session's first turn;
    /// every turn of the session is sent the same section.
    MemoryRecalled {
        records: u32,
        section: String,
    },
    /// A sandboxed process asked the session's egress proxy for a connection.
    NetworkConnectionAttempted(NetworkConnectionAttempted),
    /// Input sent while the turn ran joined it: the turn's next model call is sent the
    /// text as a user message.
    UserInputAdded {
        text: String,
        mode: InputMode,
    },
    /// The conversation and the workspace went back to the end of an earlier turn; the
    /// turns after it stay in the log but leave the history.
    SessionRewound(SessionRewound),
    /// A call of the `Agent` tool started a sub-agent: a child session and a turn on it.
    SubagentStarted(SubagentStarted),
    /// A sub-agent's turn ended; its usage counts in the parent's turn.
    SubagentFinished(SubagentFinished),
    /// An MCP server asked a person for input during a tool call (`elicitation/create`);
    /// the request waits on the approvals surface.
    HumanInputRequested(HumanInputRequested),
    /// A request for input ended: answered, declined, cancelled, timed out.
    HumanInputAnswered(HumanInputAnswered),
}

/// An MCP server's request for a person's input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HumanInputRequested {
    pub request_id: String,
    /// The tool call during which the server asked, and its tool.
    pub call_id: String,
    pub tool: String,
    /// The server's name.
    pub server: String,
    /// The server's message (bounded).
    pub message: String,
    /// The JSON schema the answer must match.
    pub schema: serde_json::Value,
    /// `message` with control characters as visible escapes.
    #[serde(default)]
    pub display: String,
}

/// How a request for input ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HumanInputAnswered {
    pub request_id: String,
    pub action: InputAction,
    pub resolution: ApprovalResolution,
    /// The answer sent to the server (with `accept` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// What a person did with a request for input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputAction {
    Accept,
    Decline,
    Cancel,
}

impl InputAction {
    /// The name the MCP protocol and the CLI use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Accept => "accept",
            Self::Decline => "decline",
            Self::Cancel => "cancel",
        }
    }
}

impl EventPayload {
    /// Every event type as it is named in the log's `type` field, in the order of
    /// [`EventPayload::type_index`]: metrics count events by it, and event hooks filter
    /// on it.
    pub const TYPE_NAMES: [&'static str; 25] = [
        "turn_started",
        "turn_completed",
        "agent_message_delta",
        "reasoning_delta",
        "reasoning_section_break",
        "tool_call_started",
        "tool_call_delta",
        "tool_call_finished",
        "exec_command_begin",
        "exec_command_output_delta",
        "exec_command_end",
        "permission_requested",
        "approval_resolved",
        "plan_updated",
        "token_usage_reported",
        "error_occurred",
        "history_compacted",
        "memory_recalled",
        "network_connection_attempted",
        "user_input_added",
        "session_rewound",
        "subagent_started",
        "subagent_finished",
        "human_input_requested",
        "human_input_answered",
    ];

    /// This event's position in [`EventPayload::TYPE_NAMES`].
    pub fn type_index(&self) -> usize {
        match self {
            Self::TurnStarted(_) => 0,
            Self::TurnCompleted(_) => 1,
            Self::AgentMessageDelta { .. } => 2,
            Self::ReasoningDelta { .. } => 3,
            Self::ReasoningSectionBreak => 4,
            Self::ToolCallStarted { .. } => 5,
            Self::ToolCallDelta { .. } => 6,
            Self::ToolCallFinished { .. } => 7,
            Self::ExecCommandBegin { .. } => 8,
            Self::ExecCommandOutputDelta { .. } => 9,
            Self::ExecCommandEnd { .. } => 10,
            Self::PermissionRequested { .. } => 11,
            Self::ApprovalResolved { .. } => 12,
            Self::PlanUpdated { .. } => 13,
            Self::TokenUsageReported { .. } => 14,
            Self::ErrorOccurred { .. } => 15,
            Self::HistoryCompacted(_) => 16,
            Self::MemoryRecalled { .. } => 17,
            Self::NetworkConnectionAttempted(_) => 18,
            Self::UserInputAdded { .. } => 19,
            Self::SessionRewound(_) => 20,
            Self::SubagentStarted(_) => 21,
            Self::SubagentFinished(_) => 22,
            Self::HumanInputRequested(_) => 23,
            Self::HumanInputAnswered(_) => 24,
        }
    }

    /// The event's type as the log names it (`turn_started`).
    pub fn type_name(&self) -> &'static str {
        Self::TYPE_NAMES[self.type_index()]
    }

    /// Whether this event ends a turn.
    pub fn is_turn_end(&self) -> bool {
        matches!(self, Self::TurnCompleted(_))
    }

    /// Whether the log should be made durable right after this event: turn boundaries
    /// and approval points (a human may act on them, so they must survive a crash).
    pub fn is_durability_point(&self) -> bool {
        matches!(
            self,
            Self::TurnStarted(_)
                | Self::TurnCompleted(_)
                | Self::PermissionRequested { .. }
                | Self::ApprovalResolved { .. }
                | Self::HumanInputRequested(_)
                | Self::HumanInputAnswered(_)
                | Self::SessionRewound(_)
        )
    }
}

/// The effective values a turn runs with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnContext {
    pub cwd: String,
    pub model: ModelSpec,
    pub sandbox_mode: SandboxMode,
    pub approval_policy: ApprovalPolicy,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnStarted {
    pub prompt: String,
    pub context: TurnContext,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnOutcome {
    Completed,
    Failed,
    Cancelled,
    /// The server stopped while the turn ran.
    Interrupted,
}

/// The last event of every turn; carries the turn record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnCompleted {
    pub outcome: TurnOutcome,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub response: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub error: String,
    #[serde(default)]
    pub usage: TokenUsage,
    /// The turn's normalized chat history: prompt, assistant messages, tool results.
    #[serde(default)]
    pub messages: Vec<ChatMessage>,
    #[serde(default)]
    pub model_calls: u32,
    /// A machine-readable code for why the turn did not complete, when one is known
    /// ([`INTERRUPTED_BY_INPUT`]); empty otherwise.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// The [`TurnCompleted::reason`] of a turn stopped by input sent in
/// [`InputMode::Interrupt`]: its outcome is cancelled, and later turns still remember what
/// it did (as they do an interrupted turn).
pub const INTERRUPTED_BY_INPUT: &str = "interrupted_by_input";

/// How input sent to a session while a turn may be running is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputMode {
    /// Join the running turn before its next model call.
    Steer,
    /// Run as a new turn after the running and queued ones.
    Queue,
    /// Stop the running turn, then run a turn with the input ahead of queued ones.
    Interrupt,
}

/// A summary standing in for the turns up to `through_turn_id` (and any earlier summary).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryCompacted {
    pub summary: String,
    /// The newest turn the summary covers.
    pub through_turn_id: Uuid,
    /// How many turns it replaced.
    pub turns_compacted: u32,
    /// Estimated tokens of the history before and after, as the turn sends it.
    pub tokens_before: u64,
    pub tokens_after: u64,
    /// The summarizing model call.
    #[serde(default)]
    pub usage: TokenUsage,
}

/// The session went back to the end of turn `to_turn`: the model's history is what it
/// was at `to_sequence` (that turn's `turn_completed`), the workspace what it held then.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRewound {
    pub to_turn: u64,
    pub to_turn_id: Uuid,
    pub to_sequence: u64,
    /// Turns after `to_turn` that left the history (they stay in the log).
    pub turns_left: u64,
    /// Entries (files, folders, links) the restored workspace holds.
    pub entries: u64,
}

/// One connection a sandboxed process asked the egress proxy for, and the proxy's answer.
/// Everything in it that the sandbox chose (the host) is bounded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkConnectionAttempted {
    /// The host name (lower case) or IP address asked for; an invalid name is cut to 253
    /// characters.
    pub host: String,
    pub port: u32,
    /// The resolved address the decision was about; empty when none was reached.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub address: String,
    pub allowed: bool,
    /// Why, in words: the rule that allowed it, or what refused it.
    pub reason: String,
}

/// Where a sub-agent works: in its parent's workspace, or in one of its own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubagentWorkspace {
    Shared,
    #[default]
    Fresh,
}

impl SubagentWorkspace {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Shared => "shared",
            Self::Fresh => "fresh",
        }
    }
}

/// A call of the `Agent` tool started a child session and queued a turn on it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubagentStarted {
    pub call_id: String,
    pub child_session_id: Uuid,
    pub child_turn_id: Uuid,
    pub agent_id: String,
    pub workspace: SubagentWorkspace,
}

/// A sub-agent's turn ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubagentFinished {
    pub call_id: String,
    pub child_session_id: Uuid,
    pub child_turn_id: Uuid,
    pub agent_id: String,
    pub outcome: TurnOutcome,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub error: String,
    #[serde(default)]
    pub usage: TokenUsage,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputStream {
    Stdout,
    Stderr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    AllowOnce,
    AllowAlways,
    Deny,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalResolution {
    Decided,
    TimedOut,
    Cancelled,
    Interrupted,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanStepStatus {
    Pending,
    InProgress,
    Completed,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanStep {
    pub text: String,
    pub status: PlanStepStatus,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One payload of every type.
    fn every_type() -> Vec<EventPayload> {
        let context = TurnContext {
            cwd: String::new(),
            model: ModelSpec::new("replay", "main"),
            sandbox_mode: SandboxMode::WorkspaceWrite,
            approval_policy: ApprovalPolicy::default(),
            metadata: BTreeMap::new(),
        };
        let text = || String::from("x");
        vec![
            EventPayload::TurnStarted(TurnStarted {
                prompt: text(),
                context,
            }),
            EventPayload::TurnCompleted(TurnCompleted {
                outcome: TurnOutcome::Completed,
                response: text(),
                error: String::new(),
                usage: TokenUsage::default(),
                messages: Vec::new(),
                model_calls: 1,
                reason: String::new(),
            }),
            EventPayload::AgentMessageDelta { delta: text() },
            EventPayload::ReasoningDelta { delta: text() },
            EventPayload::ReasoningSectionBreak,
            EventPayload::ToolCallStarted {
                call_id: text(),
                tool: text(),
                arguments: serde_json::json!({}),
            },
            EventPayload::ToolCallDelta {
                call_id: text(),
                delta: text(),
            },
            EventPayload::ToolCallFinished {
                call_id: text(),
                tool: text(),
                success: true,
                result: text(),
            },
            EventPayload::ExecCommandBegin {
                exec_id: text(),
                argv: vec![text()],
                cwd: text(),
                call_id: None,
            },
            EventPayload::ExecCommandOutputDelta {
                exec_id: text(),
                stream: OutputStream::Stdout,
                text: text(),
            },
            EventPayload::ExecCommandEnd {
                exec_id: text(),
                exit_code: 0,
                duration_ms: 1,
                timed_out: false,
                output_truncated: false,
            },
            EventPayload::PermissionRequested {
                request_id: text(),
                call_id: text(),
                tool: text(),
                arguments: serde_json::json!({}),
                summary: text(),
                reason: text(),
                display: text(),
                control_characters: true,
            },
            EventPayload::ApprovalResolved {
                request_id: text(),
                decision: ApprovalDecision::Deny,
                resolution: ApprovalResolution::Decided,
                reason: String::new(),
            },
            EventPayload::PlanUpdated { steps: Vec::new() },
            EventPayload::TokenUsageReported {
                call: TokenUsage::default(),
                turn_total: TokenUsage::default(),
            },
            EventPayload::ErrorOccurred {
                code: text(),
                message: text(),
                fatal: false,
            },
            EventPayload::HistoryCompacted(HistoryCompacted {
                summary: text(),
                through_turn_id: Uuid::nil(),
                turns_compacted: 1,
                tokens_before: 2,
                tokens_after: 1,
                usage: TokenUsage::default(),
            }),
            EventPayload::MemoryRecalled {
                records: 1,
                section: text(),
            },
            EventPayload::NetworkConnectionAttempted(NetworkConnectionAttempted {
                host: text(),
                port: 443,
                address: String::new(),
                allowed: false,
                reason: text(),
            }),
            EventPayload::UserInputAdded {
                text: text(),
                mode: InputMode::Steer,
            },
            EventPayload::SessionRewound(SessionRewound {
                to_turn: 1,
                to_turn_id: Uuid::nil(),
                to_sequence: 2,
                turns_left: 1,
                entries: 3,
            }),
            EventPayload::SubagentStarted(SubagentStarted {
                call_id: text(),
                child_session_id: Uuid::nil(),
                child_turn_id: Uuid::nil(),
                agent_id: text(),
                workspace: SubagentWorkspace::Shared,
            }),
            EventPayload::SubagentFinished(SubagentFinished {
                call_id: text(),
                child_session_id: Uuid::nil(),
                child_turn_id: Uuid::nil(),
                agent_id: text(),
                outcome: TurnOutcome::Completed,
                error: String::new(),
                usage: TokenUsage::default(),
            }),
            EventPayload::HumanInputRequested(HumanInputRequested {
                request_id: text(),
                call_id: text(),
                tool: text(),
                server: text(),
                message: text(),
                schema: serde_json::json!({"type": "object", "properties": {}}),
                display: text(),
            }),
            EventPayload::HumanInputAnswered(HumanInputAnswered {
                request_id: text(),
                action: InputAction::Accept,
                resolution: ApprovalResolution::Decided,
                answer: Some(serde_json::json!({})),
                reason: String::new(),
            }),
        ]
    }

    #[test]
    fn type_names_are_the_logged_type_of_every_payload_in_order() {
        let payloads = every_type();
        assert_eq!(payloads.len(), EventPayload::TYPE_NAMES.len());
        for (index, payload) in payloads.iter().enumerate() {
            let logged = serde_json::to_value(payload).expect("serializes");
            assert_eq!(payload.type_index(), index);
            assert_eq!(logged["type"], payload.type_name(), "{payload:?}");
        }
    }
}
