//! The parts of A2A v1.0's JSON-RPC binding a delegating call uses, as small serde types:
//! the agent card's interfaces, a message with text and data parts, and the items of a
//! task's stream. Unknown fields are ignored, so newer agents still parse.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol version sent in the `A2A-Version` header and expected in the card.
pub const PROTOCOL_VERSION: &str = "1.0";
/// The card's name of the JSON-RPC binding.
pub const JSONRPC_BINDING: &str = "JSONRPC";
/// Where an agent serves its card, below its base URL.
pub const WELL_KNOWN_CARD: &str = ".well-known/agent-card.json";

/// What a call needs of the agent card.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    #[serde(default)]
    pub supported_interfaces: Vec<AgentInterface>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub protocol_binding: String,
    #[serde(default)]
    pub tenant: String,
    #[serde(default)]
    pub protocol_version: String,
}

/// One piece of a message or artifact. Only text and data are sent; received file parts
/// are named, never fetched.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    #[serde(default)]
    pub message_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub context_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub task_id: String,
    #[serde(default)]
    pub role: String,
    #[serde(default)]
    pub parts: Vec<Part>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    #[serde(default)]
    pub state: String,
    #[serde(default)]
    pub message: Option<Message>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    #[serde(default)]
    pub artifact_id: String,
    #[serde(default)]
    pub parts: Vec<Part>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub context_id: String,
    #[serde(default)]
    pub status: TaskStatus,
    #[serde(default)]
    pub artifacts: Vec<Artifact>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusUpdate {
    #[serde(default)]
    pub task_id: String,
    #[serde(default)]
    pub context_id: String,
    #[serde(default)]
    pub status: TaskStatus,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactUpdate {
    #[serde(default)]
    pub task_id: String,
    #[serde(default)]
    pub artifact: Artifact,
    #[serde(default)]
    pub append: bool,
}

/// One item of a task's stream (`StreamResponse`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamItem {
    pub task: Option<Task>,
    pub message: Option<Message>,
    pub status_update: Option<StatusUpdate>,
    pub artifact_update: Option<ArtifactUpdate>,
}

/// A JSON-RPC response: a result or an error.
#[derive(Clone, Debug, Deserialize)]
pub struct RpcResponse<T> {
    pub result: Option<T>,
    pub error: Option<RpcError>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct RpcError {
    #[serde(default)]
    pub code: i64,
    #[serde(default)]
    pub message: String,
}

/// Task states that end an exchange, as the JSON binding spells them (submitted and
/// working ones only go on).
pub mod state {
    pub const COMPLETED: &str = "TASK_STATE_COMPLETED";
    pub const FAILED: &str = "TASK_STATE_FAILED";
    pub const CANCELED: &str = "TASK_STATE_CANCELED";
    pub const INPUT_REQUIRED: &str = "TASK_STATE_INPUT_REQUIRED";
    pub const REJECTED: &str = "TASK_STATE_REJECTED";
    pub const AUTH_REQUIRED: &str = "TASK_STATE_AUTH_REQUIRED";
}

/// The text of `parts`: text parts as they are, data parts as compact JSON, files named.
pub fn parts_text(parts: &[Part]) -> String {
    let mut out = String::new();
    for part in parts {
        let piece = match (&part.text, &part.data, &part.url) {
            (Some(text), _, _) => text.clone(),
            (None, Some(data), _) => data.to_string(),
            (None, None, Some(url)) => format!("[file {}]", crate::secrets::mask_url(url)),
            (None, None, None) => match &part.filename {
                Some(name) => format!("[file {name}]"),
                None => continue,
            },
        };
        if !out.is_empty() && !piece.is_empty() {
            out.push('\n');
        }
        out.push_str(&piece);
    }
    out
}

/// A user message with `text` and, when given, one data part.
pub fn user_message(text: &str, data: Option<Value>, task: Option<(&str, &str)>) -> Message {
    let mut parts = Vec::new();
    if !text.is_empty() {
        parts.push(Part {
            text: Some(text.to_owned()),
            ..Part::default()
        });
    }
    if let Some(data) = data {
        parts.push(Part {
            data: Some(data),
            ..Part::default()
        });
    }
    let (task_id, context_id) = task.unwrap_or_default();
    Message {
        message_id: uuid::Uuid::now_v7().to_string(),
        context_id: context_id.to_owned(),
        task_id: task_id.to_owned(),
        role: "ROLE_USER".to_owned(),
        parts,
    }
}
