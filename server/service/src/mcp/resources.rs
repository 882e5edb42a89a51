//! Sessions as MCP resources: `odyssey://sessions/{session_id}/events` reads a session's
//! events, one JSON object a line in the API's public JSON form (as `SubscribeSession`
//! sends them), the newest ones when the log is larger than a read may be.

use std::collections::VecDeque;

use odyssey_runtime::error::shorten;
use odyssey_runtime::event_hooks::EncodeEvent;
use odyssey_runtime::{ErrorKind, OdysseyRuntime};
use rmcp::ErrorData as McpError;
use rmcp::model::{ReadResourceResult, ResourceContents, ResourceTemplate};
use serde_json::json;
use uuid::Uuid;

use super::handler::runtime_error;
use crate::http::ApiEventJson;

const PREFIX: &str = "odyssey://sessions/";
const SUFFIX: &str = "/events";
/// The URI template of a session's events.
pub const TEMPLATE: &str = "odyssey://sessions/{session_id}/events";
/// The most a read answers: the newest events that fit.
pub const MAX_READ_BYTES: usize = 4 << 20;
const MIME_TYPE: &str = "application/jsonl";

pub fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(TEMPLATE, "session_events")
            .with_title("A session's events")
            .with_description(
                "The events of an Odyssey session (the session_id an agent's answer names), \
                 one JSON object a line, oldest first; the newest 4 MiB of them when there \
                 are more.",
            )
            .with_mime_type(MIME_TYPE),
    ]
}

/// The session a resource URI names.
fn session_of(uri: &str) -> Result<Uuid, McpError> {
    let not_ours = || {
        McpError::resource_not_found(
            format!(
                "no resource `{}`: this server's resources are `{TEMPLATE}`",
                shorten(uri)
            ),
            Some(json!({"uri": shorten(uri)})),
        )
    };
    let id = uri
        .strip_prefix(PREFIX)
        .and_then(|rest| rest.strip_suffix(SUFFIX))
        .ok_or_else(not_ours)?;
    Uuid::parse_str(id).map_err(|_| not_ours())
}

/// Reads the events resource `uri`.
pub async fn read(runtime: &OdysseyRuntime, uri: &str) -> Result<ReadResourceResult, McpError> {
    let id = session_of(uri)?;
    let missing = || {
        McpError::resource_not_found(
            format!("no session {id} on this server"),
            Some(json!({"uri": shorten(uri)})),
        )
    };
    let last = match runtime.get_session(id).await {
        Ok(session) => session.stats.last_sequence,
        Err(e) if e.kind() == ErrorKind::NotFound => return Err(missing()),
        Err(e) => return Err(runtime_error(e)),
    };
    let mut subscription = runtime
        .subscribe_session(id, 0)
        .await
        .map_err(runtime_error)?;
    let mut lines = VecDeque::new();
    let mut bytes = 0usize;
    while subscription.cursor() < last {
        let Some(batch) = subscription.next_batch().await.map_err(runtime_error)? else {
            break;
        };
        for event in batch {
            if event.sequence > last {
                break;
            }
            let line = String::from_utf8_lossy(&ApiEventJson.encode(&event)).into_owned();
            bytes += line.len() + 1;
            lines.push_back(line);
            while bytes > MAX_READ_BYTES {
                match lines.pop_front() {
                    Some(old) => bytes -= old.len() + 1,
                    None => break,
                }
            }
        }
    }
    let mut text = Vec::from(lines).join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    Ok(ReadResourceResult::new(vec![
        ResourceContents::TextResourceContents {
            uri: uri.to_owned(),
            mime_type: Some(MIME_TYPE.to_owned()),
            text,
            meta: None,
        },
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_sessions_events_uri_names_a_session() {
        let id = Uuid::now_v7();
        assert_eq!(
            session_of(&format!("odyssey://sessions/{id}/events")).unwrap(),
            id
        );
        for uri in [
            "odyssey://sessions/nope/events",
            &format!("odyssey://sessions/{id}"),
            &format!("file:///sessions/{id}/events"),
        ] {
            let error = session_of(uri).unwrap_err();
            assert!(error.message.contains(TEMPLATE), "{}", error.message);
        }
    }
}
