//! The two independent settings of a session: how far its processes reach (the sandbox
//! mode) and when a tool call waits for a human (the approval policy).

use serde::{Deserialize, Serialize};

/// How far a process started for a session may reach. Ordered from least to most
/// permissive, so `max`/`min` pick the looser or stricter of two modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    ReadOnly,
    WorkspaceWrite,
    DangerFullAccess,
}

impl SandboxMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read_only",
            Self::WorkspaceWrite => "workspace_write",
            Self::DangerFullAccess => "danger_full_access",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "read_only" => Some(Self::ReadOnly),
            "workspace_write" => Some(Self::WorkspaceWrite),
            "danger_full_access" => Some(Self::DangerFullAccess),
            _ => None,
        }
    }
}

impl std::fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// When a tool call waits for a human decision.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalPolicy {
    /// The agent's permission rules decide.
    #[default]
    OnRequest,
    /// Anything not explicitly allowed asks.
    Untrusted,
    /// Nothing waits: what would ask is denied.
    Never,
}

impl ApprovalPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OnRequest => "on_request",
            Self::Untrusted => "untrusted",
            Self::Never => "never",
        }
    }
}
