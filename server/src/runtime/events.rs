//! Session events: every step of a turn, as stored in the session's log and streamed to
//! subscribers. Names read as sentences (`TurnStarted`, `ToolCallFinished`).
//!
//! The log stores one [`Event`] per line as JSON; the serde shape below is that on-disk
//! format, so changes to it must stay readable by older logs (add optional fields only).

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::runtime::chat::{ChatMessage, TokenUsage};
use crate::runtime::model::ModelSpec;
use crate::runtime::policy::{ApprovalPolicy, SandboxMode};

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
}

impl EventPayload {
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
