//! What the fault tests share: the child server, a bundle whose agent talks to a loopback
//! OpenAI-wire model and may run Bash, reading a session's whole log, and `/proc`.

#![allow(dead_code)]

pub mod odysseyd;
pub mod procfs;
pub mod tmpfs;

use std::path::Path;
use std::time::Duration;

use futures::StreamExt;
use odyssey_api::v1 as pb;
use odyssey_testing::openai_wire::{Reply, StreamBuilder, WireUsage, split};
use pb::session_event::Payload;
use serde_json::Value;

pub use odysseyd::{Launch, Odysseyd};

/// A bundle project: one agent on the `openai` provider (pointed at the loopback model by
/// the server's flags), allowed to run Bash in `workspace_write`.
pub fn bundle_archive(name: &str) -> Vec<u8> {
    let files = [
        (
            "odyssey.bundle.yaml".to_owned(),
            format!(
                "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: {name}\n  version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      default: true\n  tools:\n    - {{ name: Bash, source: builtin }}\n  sandbox:\n    mode: workspace_write\n"
            ),
        ),
        (
            "agents/main/agent.yaml".to_owned(),
            "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\n  version: 0.1.0\nspec:\n  kind: prompt\n  prompt: You are a test agent.\n  model:\n    provider: openai\n    name: gpt-faults\n  tools:\n    allow: [Bash]\n".to_owned(),
        ),
    ];
    pack(
        files
            .iter()
            .map(|(path, text)| (path.as_str(), text.as_str())),
    )
}

/// A gzipped tar of `(path, text)` files, as a bundle build takes it.
pub fn pack<'a>(files: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<u8> {
    let encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut archive = tar::Builder::new(encoder);
    for (path, text) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        archive
            .append_data(&mut header, path, text.as_bytes())
            .expect("append");
    }
    archive
        .into_inner()
        .and_then(|gz| gz.finish())
        .expect("archive")
}

/// Installs `archive` through BuildBundle.
pub async fn install(server: &Odysseyd, archive: Vec<u8>) -> Result<pb::Bundle, tonic::Status> {
    use pb::build_bundle_request::Item;
    let messages = vec![pb::BuildBundleRequest {
        item: Some(Item::Chunk(archive)),
    }];
    let response = server
        .bundles()
        .build_bundle(futures::stream::iter(messages))
        .await?;
    Ok(response.into_inner().bundle.unwrap_or_default())
}

pub async fn create_session(server: &Odysseyd, reference: &str) -> Result<String, tonic::Status> {
    let response = server
        .sessions()
        .create_session(pb::CreateSessionRequest {
            bundle_reference: reference.into(),
            ..Default::default()
        })
        .await?;
    Ok(response.into_inner().session.unwrap_or_default().id)
}

pub fn turn(session_id: &str, prompt: &str) -> Option<pb::TurnInput> {
    Some(pb::TurnInput {
        session_id: session_id.into(),
        prompt: prompt.into(),
        ..Default::default()
    })
}

/// Every event of a session from sequence 1 through `last`, read with SubscribeSession
/// from 0 (each read bounded by `patience`).
pub async fn replay(
    server: &Odysseyd,
    session_id: &str,
    last: u64,
    patience: Duration,
) -> Result<Vec<pb::SessionEvent>, String> {
    let mut events = Vec::new();
    if last == 0 {
        return Ok(events);
    }
    let mut stream = server
        .sessions()
        .subscribe_session(pb::SubscribeSessionRequest {
            session_id: session_id.into(),
            after_sequence: 0,
        })
        .await
        .map_err(|e| format!("subscribe {session_id}: {e}"))?
        .into_inner();
    loop {
        let item = tokio::time::timeout(patience, stream.next())
            .await
            .map_err(|_| format!("{session_id}: replay stalled after {} events", events.len()))?
            .ok_or_else(|| format!("{session_id}: the stream ended at {}", events.len()))?
            .map_err(|e| format!("{session_id}: {e}"))?;
        if let Some(pb::subscribe_session_response::Item::Event(event)) = item.item {
            let sequence = event.sequence;
            events.push(event);
            if sequence >= last {
                return Ok(events);
            }
        }
    }
}

/// A session log's shape: sequences 1, 2, 3… without gap or duplicate; every event of a
/// turn between its `turn_started` and its one `turn_completed`; no turn left open.
/// Returns the turns' outcomes in order.
pub fn check_log(session_id: &str, events: &[pb::SessionEvent]) -> Result<Vec<i32>, String> {
    check_log_shape(session_id, events, false)
}

/// [`check_log`], except that the last turn may still be open (running, or waiting for a
/// disk that can take its end).
pub fn check_log_shape(
    session_id: &str,
    events: &[pb::SessionEvent],
    last_may_be_open: bool,
) -> Result<Vec<i32>, String> {
    let mut open: Option<&str> = None;
    let mut outcomes = Vec::new();
    for (i, event) in events.iter().enumerate() {
        let at = format!("{session_id} event {}", event.sequence);
        if event.sequence != i as u64 + 1 {
            return Err(format!("{at}: expected sequence {}", i + 1));
        }
        match &event.payload {
            Some(Payload::TurnStarted(_)) => {
                if let Some(turn) = open {
                    return Err(format!("{at}: a turn starts while {turn} is open"));
                }
                open = Some(&event.turn_id);
            }
            Some(Payload::TurnCompleted(done)) => {
                if open != Some(event.turn_id.as_str()) {
                    return Err(format!(
                        "{at}: ends turn {} but {open:?} is open",
                        event.turn_id
                    ));
                }
                open = None;
                outcomes.push(done.outcome);
            }
            _ if !event.turn_id.is_empty() && open != Some(event.turn_id.as_str()) => {
                return Err(format!(
                    "{at}: belongs to turn {} but {open:?} is open",
                    event.turn_id
                ));
            }
            _ => {}
        }
    }
    match open {
        Some(turn) if !last_may_be_open => Err(format!("{session_id}: turn {turn} never ends")),
        _ => Ok(outcomes),
    }
}

/// Streams `text` in `pieces` content deltas, `pause` apart, then usage and `[DONE]`.
pub fn slow_text(text: &str, pieces: usize, pause: Duration) -> Reply {
    let mut stream = StreamBuilder::new();
    for piece in split(text, pieces) {
        stream = stream.text(&piece, 1).pause(pause);
    }
    stream.finish("stop").usage(usage()).done().build()
}

/// A Bash tool call whose arguments arrive in a few pieces, `pause` apart.
pub fn slow_tool_call(command: &str, pause: Duration) -> Reply {
    let arguments = serde_json::json!({ "command": command }).to_string();
    StreamBuilder::new()
        .pause(pause)
        .tool_call(0, "call_fault", "Bash", &arguments, 3)
        .pause(pause)
        .finish("tool_calls")
        .usage(usage())
        .done()
        .build()
}

fn usage() -> WireUsage {
    WireUsage {
        prompt_tokens: 40,
        completion_tokens: 12,
        ..WireUsage::default()
    }
}

/// The role and text of a chat-completions request's last message.
pub fn last_message(request: &Value) -> (String, String) {
    let last = request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or_default();
    let text = last["content"].as_str().unwrap_or_default().to_owned();
    (last["role"].as_str().unwrap_or_default().to_owned(), text)
}

/// A folder for server homes under Cargo's target tmp folder (not `/tmp`), so a
/// sandboxed process's `/tmp` is its cell's own, as in production.
pub fn temp_home() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp home")
}

/// Every file below `dir`, relative, for messages.
pub fn list_files(dir: &Path) -> Vec<String> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            e.path()
                .strip_prefix(dir)
                .unwrap_or(e.path())
                .display()
                .to_string()
        })
        .collect()
}
