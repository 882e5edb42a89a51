//! What a session is: the creation record (`session.json`, written once) and the running
//! totals (`summary.json`, a cache rewritten shortly after turns and at shutdown, and
//! rebuilt from the log whenever the session is opened). The totals say how much of the
//! log they cover, so a reader folds in the events after that: a stale or missing summary
//! costs reading more of the log, never a wrong answer.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::chat::TokenUsage;
use crate::events::{Event, EventPayload};
use crate::model::ModelSpec;
use crate::policy::{ApprovalPolicy, SandboxMode};

/// The bundle a session resolved to when it was created.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BundlePin {
    pub namespace: String,
    pub name: String,
    pub version: String,
    pub digest: String,
}

impl BundlePin {
    /// The reference that finds exactly this installed bundle again.
    pub fn reference(&self) -> String {
        format!("{}/{}@{}", self.namespace, self.name, self.version)
    }
}

/// Written once when the session is created; never holds a secret.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionRecord {
    pub id: Uuid,
    /// The reference the session was created from, as given.
    pub bundle_reference: String,
    pub bundle: BundlePin,
    pub agent_id: String,
    pub model: ModelSpec,
    pub sandbox_mode: SandboxMode,
    pub approval_policy: ApprovalPolicy,
    pub created_at_ms: u64,
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    /// Tokens (input + output) the session may spend over its life; `None`: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_budget: Option<u64>,
    /// The session this one was forked from, and where.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked: Option<ForkOrigin>,
    /// Set on a sub-agent's session: the session and `Agent` call that started it, and
    /// what it inherited from them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<ParentLink>,
}

/// Where a forked session came from: its history is the source's up to the end of that
/// turn, its workspace what the source's held then.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkOrigin {
    pub session_id: Uuid,
    /// The turn number (1 for the source's first turn).
    pub turn: u64,
    pub turn_id: Uuid,
    /// The sequence of that turn's `turn_completed` in the source's log.
    pub sequence: u64,
}

/// How a sub-agent's session is tied to the session that started it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParentLink {
    pub session_id: Uuid,
    /// The `Agent` tool call of the parent's turn.
    pub call_id: String,
    /// The sessions above this one, nearest first (the parent, its parent, ...): its
    /// depth is their number.
    pub ancestors: Vec<Uuid>,
    /// The session whose workspace (`data/`) this one works in, when it shares one; a
    /// shared workspace is always the topmost owner's, never a link to a link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_of: Option<Uuid>,
    /// The permission rules of every ancestor's agent, nearest first: a call any of them
    /// denies is denied here too, whatever this agent's own rules say.
    #[serde(default)]
    pub inherited_rules: Vec<InheritedRules>,
}

/// One ancestor agent's permission rules, as its bundle declared them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InheritedRules {
    /// The agent they are from (for messages).
    pub agent_id: String,
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub ask: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
}

/// Running totals of a session, derived from its log.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionStats {
    pub turn_count: u64,
    pub last_sequence: u64,
    pub updated_at_ms: u64,
    pub usage: TokenUsage,
    /// Model calls made by every turn so far (the replay provider's position).
    pub model_calls: u64,
    /// Bytes of the event log these totals cover.
    pub log_bytes: u64,
}

impl SessionStats {
    /// Folds the next event of the log in (not `log_bytes`, which the reader knows).
    pub fn observe(&mut self, event: &Event) {
        self.last_sequence = event.sequence;
        self.updated_at_ms = event.created_at_ms;
        if let EventPayload::TurnCompleted(done) = &event.payload {
            self.turn_count += 1;
            self.usage += done.usage;
            self.model_calls += u64::from(done.model_calls);
        }
    }
}

/// What a session is doing now. Derived by the runtime when a session is read, from the
/// pending approvals and the live executions; never stored, so it cannot go stale (after a
/// restart every session is idle: the turns that were running are recorded as interrupted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SessionState {
    /// No turn queued or running.
    #[default]
    Idle,
    /// A turn is queued or running, and none of its tool calls waits for a human.
    Running,
    /// A tool call of a turn waits for a human decision (an approval request is pending).
    WaitingForApproval,
}

impl SessionState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Running => "running",
            Self::WaitingForApproval => "waiting_for_approval",
        }
    }
}

impl std::fmt::Display for SessionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A session as callers see it.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionInfo {
    pub record: SessionRecord,
    pub stats: SessionStats,
    /// What it is doing now. The store knows nothing of turns and says `Idle`; the
    /// runtime's API ([`crate::OdysseyRuntime::get_session`] and the others that answer a
    /// `SessionInfo`) fills in the real state.
    pub state: SessionState,
}

pub(crate) const RECORD_FILE: &str = "session.json";

/// The version of a session's files (`session.json`, `events.jsonl`, `summary.json`),
/// written into `session.json` as `format_version` (absent: 1). The files are the server's
/// private storage, not an interface: clients read events through the API, whose JSON form
/// is the proto's. A server refuses a session written in a newer version than this one
/// instead of misreading it.
pub(crate) const FORMAT_VERSION: u32 = 1;

/// `session.json` as written: the record, with the format version beside its fields.
#[derive(Serialize)]
pub(crate) struct RecordFile<'a> {
    format_version: u32,
    #[serde(flatten)]
    record: &'a SessionRecord,
}

impl<'a> RecordFile<'a> {
    pub(crate) fn new(record: &'a SessionRecord) -> Self {
        Self {
            format_version: FORMAT_VERSION,
            record,
        }
    }
}

/// Why a `session.json` could not be read.
#[derive(Debug, PartialEq)]
pub(crate) enum RecordError {
    /// Not a record: the session is damaged.
    Unreadable(String),
    /// Written by a newer server, in this format version: the session is fine, this
    /// server cannot read it.
    Newer(u64),
}

/// Reads a `session.json`: checks its format version, then the record's fields.
pub(crate) fn parse_record(bytes: &[u8]) -> Result<SessionRecord, RecordError> {
    let unreadable = |e: serde_json::Error| RecordError::Unreadable(crate::quoted::json_error(&e));
    let mut value: serde_json::Value = serde_json::from_slice(bytes).map_err(unreadable)?;
    let version = match value
        .as_object_mut()
        .and_then(|fields| fields.remove("format_version"))
    {
        None => 1,
        Some(v) => v.as_u64().filter(|v| *v >= 1).ok_or_else(|| {
            RecordError::Unreadable(format!("format_version {v} is not a version number"))
        })?,
    };
    if version > u64::from(FORMAT_VERSION) {
        return Err(RecordError::Newer(version));
    }
    serde_json::from_value(value).map_err(unreadable)
}

/// The refusal of a session written by a newer server, naming it.
pub(crate) fn newer_format(id: Uuid, version: u64) -> crate::error::RuntimeError {
    crate::error::RuntimeError::FailedPrecondition(format!(
        "session {id} was written by a newer server (storage format version {version}; this \
         server reads up to version {FORMAT_VERSION}): serve it with that server or a newer one"
    ))
}
pub(crate) const SUMMARY_FILE: &str = "summary.json";
pub(crate) const LOG_FILE: &str = "events.jsonl";

/// Writes `value` as JSON to `path` atomically (temp file + rename), optionally synced.
pub(crate) fn write_json_atomic<T: Serialize>(
    path: &Path,
    value: &T,
    durable: bool,
) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    // Rendered first and written at once: the serializer writes every token on its own,
    // which on a bare file is a system call each (hundreds for a session record).
    let text = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    // `io::Error::from` keeps the kind of a failed write (a full disk stays StorageFull,
    // which callers report as such).
    std::io::Write::write_all(&mut tmp, &text)?;
    if durable {
        tmp.as_file().sync_data()?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
