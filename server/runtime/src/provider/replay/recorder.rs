//! Record mode: every model call of a session written as one cassette entry, so a real run
//! can be turned into an offline regression test played by the `replay` provider.
//!
//! A session's cassette is `<home>/sessions/<id>/cassette.jsonl`, in the format of the
//! parent module, and goes away with the session. The Nth entry is the session's Nth model
//! call, as replay counts them: a call that failed, or was cut off by a cancelled turn, is
//! recorded too (with `error`), so later entries stay in step. Each entry holds what the
//! model streamed (reasoning and text chunks as they arrived, tool calls, usage) and an
//! expectation on the request's last message: its role, plus its content for a user
//! message. Tool results are matched by role only: they carry run-specific details
//! (absolute paths, times) that a replay in another session cannot reproduce.
//!
//! Nothing secret is written: keys never reach a provider's deltas, and provider errors
//! arrive here already redacted. Reasoning section breaks and opaque reasoning state
//! (signed thinking) are not recorded: replay streams reasoning as one section and sends
//! no request anywhere.
//!
//! A session whose calls were not all recorded from its first one (recording switched on
//! later, or a crash between a call and its turn's end) stops being recorded with a
//! warning: a cassette with a gap would replay the wrong answers.

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use serde::Serialize;
use uuid::Uuid;

use super::cassette::MAX_CASSETTE_BYTES;
use crate::chat::{Role, TokenUsage};
use crate::provider::{ModelDelta, ModelProvider, ModelRequest, ProviderError};

/// The cassette's file name inside the session's folder.
pub const CASSETTE_FILE: &str = "cassette.jsonl";

/// Sessions whose recording state is kept in memory. Forgetting one only costs a count of
/// its cassette's lines on its next call, so the cache is simply emptied when full.
const MAX_TAPES: usize = 1024;

/// What a call cut off before its end is recorded as.
const INTERRUPTED: &str = "the model call was interrupted before it finished (the turn was cancelled, timed out \
     or the server stopped)";

/// Writes cassettes for every session of a runtime. Cheap to share.
pub struct CassetteRecorder {
    sessions_dir: PathBuf,
    tapes: Mutex<HashMap<Uuid, Arc<Mutex<Tape>>>>,
}

/// Where a session's cassette stands.
#[derive(Debug)]
struct Tape {
    entries: u64,
    bytes: u64,
    /// Recording stopped for this session; why was logged once.
    stopped: bool,
}

impl CassetteRecorder {
    pub fn new(sessions_dir: PathBuf) -> Self {
        Self {
            sessions_dir,
            tapes: Mutex::new(HashMap::new()),
        }
    }

    fn path(&self, session: Uuid) -> PathBuf {
        self.sessions_dir
            .join(session.to_string())
            .join(CASSETTE_FILE)
    }

    /// `provider`, with each call it answers for `session` recorded.
    pub fn wrap(
        self: &Arc<Self>,
        session: Uuid,
        provider: Arc<dyn ModelProvider>,
    ) -> Arc<dyn ModelProvider> {
        Arc::new(RecordingProvider {
            inner: provider,
            recorder: self.clone(),
            session,
        })
    }

    /// The session's cassette up to its last complete line; `None` when nothing was
    /// recorded for it.
    pub fn read(&self, session: Uuid) -> std::io::Result<Option<Vec<u8>>> {
        let mut bytes = match std::fs::read(self.path(session)) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        bytes.truncate(complete);
        Ok((!bytes.is_empty()).then_some(bytes))
    }

    /// Drops what is kept in memory about a deleted session.
    pub fn forget(&self, session: Uuid) {
        self.lock().remove(&session);
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Uuid, Arc<Mutex<Tape>>>> {
        // Every entry is valid on its own; a panic elsewhere cannot leave the map torn.
        crate::sync::lock(&self.tapes)
    }

    fn tape(&self, session: Uuid) -> Arc<Mutex<Tape>> {
        let mut tapes = self.lock();
        if let Some(tape) = tapes.get(&session) {
            return tape.clone();
        }
        if tapes.len() >= MAX_TAPES {
            tapes.clear();
        }
        let tape = Arc::new(Mutex::new(self.measure(session)));
        tapes.insert(session, tape.clone());
        tape
    }

    /// Counts what an existing cassette holds (once per session and process).
    fn measure(&self, session: Uuid) -> Tape {
        let path = self.path(session);
        match std::fs::read(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Tape {
                entries: 0,
                bytes: 0,
                stopped: false,
            },
            Err(e) => {
                tracing::warn!(session = %session, path = %path.display(), error = %e, "cannot read the session's cassette; not recording it");
                Tape {
                    entries: 0,
                    bytes: 0,
                    stopped: true,
                }
            }
            Ok(bytes) => {
                let torn = bytes.last().is_some_and(|b| *b != b'\n');
                if torn {
                    tracing::warn!(session = %session, path = %path.display(), "the session's cassette ends with a partial line; not recording it");
                }
                Tape {
                    entries: bytes.iter().filter(|b| **b == b'\n').count() as u64,
                    bytes: bytes.len() as u64,
                    stopped: torn,
                }
            }
        }
    }

    /// Appends the entry of the session's call number `call_index`.
    fn append(&self, session: Uuid, call_index: u64, entry: &Entry) {
        let tape = self.tape(session);
        let mut tape = crate::sync::lock(&tape);
        if tape.stopped {
            return;
        }
        match self.write(session, call_index, &tape, entry) {
            Ok(len) => {
                tape.entries += 1;
                tape.bytes += len;
            }
            Err(why) => {
                tracing::warn!(session = %session, call = call_index, "{why}; no longer recording this session");
                tape.stopped = true;
            }
        }
    }

    /// Writes one line; returns its length, or why it cannot be written.
    fn write(
        &self,
        session: Uuid,
        call_index: u64,
        tape: &Tape,
        entry: &Entry,
    ) -> Result<u64, String> {
        if call_index != tape.entries {
            return Err(format!(
                "the cassette holds {} entries but this is model call {call_index}",
                tape.entries
            ));
        }
        let mut line = serde_json::to_vec(entry)
            .map_err(|e| format!("cannot encode a cassette entry: {e}"))?;
        line.push(b'\n');
        let len = line.len() as u64;
        if tape.bytes + len > MAX_CASSETTE_BYTES {
            return Err(format!(
                "the cassette would pass the {MAX_CASSETTE_BYTES}-byte limit replay reads"
            ));
        }
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.path(session))
            .and_then(|mut file| file.write_all(&line))
            .map_err(|e| format!("cannot write the cassette: {e}"))?;
        Ok(len)
    }
}

/// A provider whose calls are recorded.
struct RecordingProvider {
    inner: Arc<dyn ModelProvider>,
    recorder: Arc<CassetteRecorder>,
    session: Uuid,
}

impl ModelProvider for RecordingProvider {
    fn stream(
        &self,
        request: ModelRequest,
    ) -> BoxStream<'static, Result<ModelDelta, ProviderError>> {
        let expect = request.messages.last().map(|m| Expected {
            role: m.role,
            content: (m.role == Role::User).then(|| m.content.clone()),
        });
        let entry = Entry {
            request: expect.map(|last_message| Request { last_message }),
            ..Entry::default()
        };
        let call_index = request.call_index;
        Recording {
            inner: self.inner.stream(request),
            entry,
            sink: Some(Sink {
                recorder: self.recorder.clone(),
                session: self.session,
                call_index,
            }),
        }
        .boxed()
    }
}

/// One call's stream, passed through unchanged while its entry is assembled. The entry is
/// written when the stream ends, fails, or is dropped before either.
struct Recording {
    inner: BoxStream<'static, Result<ModelDelta, ProviderError>>,
    entry: Entry,
    /// Where the entry goes; taken when it is written.
    sink: Option<Sink>,
}

struct Sink {
    recorder: Arc<CassetteRecorder>,
    session: Uuid,
    call_index: u64,
}

impl Recording {
    fn finish(&mut self) {
        if let Some(sink) = self.sink.take() {
            sink.recorder
                .append(sink.session, sink.call_index, &self.entry);
        }
    }
}

impl Stream for Recording {
    type Item = Result<ModelDelta, ProviderError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let item = match self.inner.poll_next_unpin(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(item) => item,
        };
        match &item {
            Some(Ok(delta)) => self.entry.add(delta),
            Some(Err(e)) => {
                self.entry.error = Some(e.to_string());
                self.finish();
            }
            None => self.finish(),
        }
        Poll::Ready(item)
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        if self.sink.is_some() {
            self.entry.error = Some(INTERRUPTED.to_owned());
            self.finish();
        }
    }
}

/// One cassette line, as the parent module's format reads it.
#[derive(Debug, Default, Serialize)]
struct Entry {
    #[serde(skip_serializing_if = "Option::is_none")]
    request: Option<Request>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    reasoning: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    text: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<Call>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<Usage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

#[derive(Debug, Serialize)]
struct Request {
    last_message: Expected,
}

#[derive(Debug, Serialize)]
struct Expected {
    role: Role,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<String>,
}

#[derive(Debug, Serialize)]
struct Call {
    id: String,
    name: String,
    /// As the model sent it: replay passes a string on unchanged.
    arguments: String,
}

#[derive(Debug, Default, Serialize)]
struct Usage {
    input_tokens: u64,
    output_tokens: u64,
    cached_input_tokens: u64,
    reasoning_tokens: u64,
}

impl Entry {
    fn add(&mut self, delta: &ModelDelta) {
        match delta {
            ModelDelta::Text(text) => self.text.push(text.clone()),
            ModelDelta::Reasoning(text) => self.reasoning.push(text.clone()),
            ModelDelta::ToolCall {
                id,
                name,
                arguments,
            } => self.tool_calls.push(Call {
                id: id.clone(),
                name: name.clone(),
                arguments: arguments.clone(),
            }),
            ModelDelta::Usage(usage) => {
                let TokenUsage {
                    input_tokens,
                    output_tokens,
                    cached_input_tokens,
                    reasoning_tokens,
                    total_tokens: _,
                } = *usage;
                let sum = self.usage.get_or_insert_with(Usage::default);
                // Saturating, like the session's totals: a provider's numbers are not ours.
                sum.input_tokens = sum.input_tokens.saturating_add(input_tokens);
                sum.output_tokens = sum.output_tokens.saturating_add(output_tokens);
                sum.cached_input_tokens =
                    sum.cached_input_tokens.saturating_add(cached_input_tokens);
                sum.reasoning_tokens = sum.reasoning_tokens.saturating_add(reasoning_tokens);
            }
            ModelDelta::ReasoningBreak | ModelDelta::ReasoningState(_) => {}
        }
    }
}

#[cfg(test)]
#[path = "recorder_tests.rs"]
mod tests;
