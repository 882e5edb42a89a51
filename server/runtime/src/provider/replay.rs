//! The `replay` provider: answers model calls from a cassette shipped in the bundle.
//! Deterministic and offline, for demos and for testing an agent without a model.
//!
//! # Choosing a cassette
//!
//! A model `replay/<name>` plays `cassettes/<name>.jsonl` from the bundle root, or the file
//! named by the model config's `cassette` key (also relative to the bundle root). Absolute
//! paths and `..` are refused, and so is a symlink that leads outside the bundle.
//!
//! # Cassette format
//!
//! A cassette is a JSON Lines file: one JSON object per line, one line per model call. The
//! Nth entry (counting from 0, blank lines skipped) answers the session's Nth model call;
//! a turn that calls a tool and then answers uses two entries. Every field is optional;
//! an unknown field is an error that names its line.
//!
//! | field            | meaning |
//! |------------------|---------|
//! | `text`           | The answer: a string, or an array of strings streamed as separate chunks. |
//! | `reasoning`      | Reasoning shown before the answer: a string or an array of chunks. |
//! | `tool_calls`     | `[{"id"?, "name", "arguments"}]`; `arguments` is a JSON object or a string holding one (default `{}`); `id` defaults to `call_<N>_<i>` (entry N, call i). |
//! | `usage`          | `{"input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens"}`; omitted: a rough estimate (about 4 characters per token). |
//! | `chunk_delay_ms` | Pause between streamed chunks, so a demo looks like a live model. |
//! | `request`        | `{"last_message": {"role"?, "content"?}}`: the call must end with exactly this message (for tool results: the last tool message), else it fails with `CASSETTE_MISMATCH`. Use it to catch a cassette drifting from the agent. |
//! | `error`          | The call fails with this message after its chunks (`CASSETTE_RECORDED_FAILURE`): a recorded call that failed. Without `usage`, no usage is reported. |
//!
//! Chunks stream in this order: reasoning, text, tool calls, usage, error.
//!
//! # Recording
//!
//! A server started with `--record-cassettes` writes every model call of a session in this
//! format (see `recorder`), so a real run can be replayed offline.
//!
//! ```text
//! {"text": ["Let me look", " at the file."], "tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]}
//! {"request": {"last_message": {"role": "tool"}}, "text": "The README says hello.", "chunk_delay_ms": 30}
//! ```
//!
//! A call past the last entry fails with `CASSETTE_EXHAUSTED`.

mod cassette;
mod recorder;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;

pub(crate) use cassette::{Cassette, CassetteCache, cassette_path};
pub use recorder::CassetteRecorder;

use super::{ModelDelta, ModelProvider, ModelRequest, ProviderError};
use crate::chat::{ChatMessage, Role, TokenUsage};
use crate::text::shorten;
use cassette::{Entry, ExpectedMessage};

/// One item of a replayed call.
type Answer = Result<ModelDelta, ProviderError>;

/// Longest excerpt of a message shown in a mismatch error.
const MISMATCH_EXCERPT_CHARS: usize = 160;

/// Plays one cassette.
pub(crate) struct ReplayProvider {
    cassette: Arc<Cassette>,
}

impl ReplayProvider {
    pub fn new(cassette: Arc<Cassette>) -> Self {
        Self { cassette }
    }

    /// The items answering `request`, checked against the entry's expectations.
    fn answer(&self, request: &ModelRequest) -> Result<(Vec<Answer>, Duration), ProviderError> {
        let cassette = &self.cassette;
        let (index, entry) = usize::try_from(request.call_index)
            .ok()
            .and_then(|i| Some((i, cassette.entries.get(i)?)))
            .ok_or_else(|| ProviderError::CassetteExhausted {
                cassette: cassette.path.clone(),
                call_index: request.call_index,
                entries: cassette.entries.len(),
            })?;
        if let Some(expected) = &entry.expect {
            check_last_message(expected, request.messages.last()).map_err(
                |(expected, actual)| ProviderError::CassetteMismatch {
                    cassette: cassette.path.clone(),
                    entry: index,
                    line: entry.line,
                    expected,
                    actual,
                },
            )?;
        }
        // A recorded failure reports only the usage that was recorded with it.
        let usage = match (&entry.usage, &entry.error) {
            (Some(usage), _) => Some(*usage),
            (None, None) => Some(estimate_usage(request, entry)),
            (None, Some(_)) => None,
        };
        let failure = entry.error.as_ref().map(|message| {
            Err(ProviderError::CassetteRecordedFailure {
                cassette: cassette.path.clone(),
                entry: index,
                line: entry.line,
                message: message.clone(),
            })
        });
        let deltas = entry
            .reasoning
            .iter()
            .map(|chunk| ModelDelta::Reasoning(chunk.clone()))
            .chain(
                entry
                    .text
                    .iter()
                    .map(|chunk| ModelDelta::Text(chunk.clone())),
            )
            .chain(entry.tool_calls.iter().map(|call| ModelDelta::ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            }))
            .chain(usage.map(ModelDelta::Usage))
            .map(Ok)
            .chain(failure)
            .collect();
        Ok((deltas, entry.chunk_delay))
    }
}

impl ModelProvider for ReplayProvider {
    fn stream(
        &self,
        request: ModelRequest,
    ) -> BoxStream<'static, Result<ModelDelta, ProviderError>> {
        match self.answer(&request) {
            Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
            Ok((items, delay)) => futures::stream::iter(items.into_iter().enumerate())
                .then(move |(i, item)| async move {
                    if i > 0 && !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                    }
                    item
                })
                .boxed(),
        }
    }
}

/// `Err((expected, actual))`, both shortened for the error message.
fn check_last_message(
    expected: &ExpectedMessage,
    actual: Option<&ChatMessage>,
) -> Result<(), (String, String)> {
    let matches = actual.is_some_and(|m| {
        expected.role.is_none_or(|role| role == m.role)
            && expected.content.as_ref().is_none_or(|c| *c == m.content)
    });
    if matches {
        return Ok(());
    }
    let expected_text = describe(expected.role, expected.content.as_deref());
    let actual_text = match actual {
        Some(m) => describe(Some(m.role), Some(&m.content)),
        None => "(no messages)".to_owned(),
    };
    Err((expected_text, actual_text))
}

fn describe(role: Option<Role>, content: Option<&str>) -> String {
    let role = match role {
        Some(Role::System) => "system",
        Some(Role::User) => "user",
        Some(Role::Assistant) => "assistant",
        Some(Role::Tool) => "tool",
        None => "any role",
    };
    match content {
        Some(content) => format!("{role} {:?}", shorten(content, MISMATCH_EXCERPT_CHARS)),
        None => role.to_owned(),
    }
}

/// About four characters per token: wrong for any real tokenizer, right enough for demos
/// that show usage and for budgets that must see something non-zero.
fn estimate_usage(request: &ModelRequest, entry: &Entry) -> TokenUsage {
    let tokens = |chars: usize| (chars as u64).div_ceil(4);
    let input_chars = request.system_prompt.chars().count()
        + request
            .messages
            .iter()
            .map(|m| {
                m.content.chars().count()
                    + m.tool_calls
                        .iter()
                        .map(|c| c.arguments.chars().count())
                        .sum::<usize>()
            })
            .sum::<usize>();
    let chars = |chunks: &[String]| chunks.iter().map(|c| c.chars().count()).sum::<usize>();
    let reasoning = tokens(chars(&entry.reasoning));
    let tool_chars: usize = entry
        .tool_calls
        .iter()
        .map(|c| c.name.chars().count() + c.arguments.chars().count())
        .sum();
    let output = tokens(chars(&entry.text) + tool_chars) + reasoning;
    let input = tokens(input_chars);
    TokenUsage {
        input_tokens: input,
        output_tokens: output,
        cached_input_tokens: 0,
        reasoning_tokens: reasoning,
        total_tokens: input + output,
    }
}
