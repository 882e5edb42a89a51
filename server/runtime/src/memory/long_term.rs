//! Long-term memory: short records of finished turns that outlive their session, recalled
//! into the system prompt when a new session with the same agent starts.
//!
//! A record is the user's prompt and the final answer, both cut short. Records belong to
//! one agent of one bundle (any version of it), a scope the runtime derives from the
//! session; a client never names where memory is kept. Every session with that agent on
//! this server shares them, so an operator serving several people from one agent should
//! switch memory off for it (or for the server) unless that sharing is wanted.
//!
//! [`MemoryProvider`] is the extension point: the runtime ships a file-backed store
//! (`FileMemory`, under `<home>/memory/`), and an embedding program may supply its own
//! through [`MemorySettings::provider`](super::MemorySettings::provider).

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::text::byte_prefix;

/// Whose memory: one agent of one installed bundle, across the bundle's versions.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MemoryScope {
    pub namespace: String,
    pub bundle: String,
    pub agent_id: String,
}

impl std::fmt::Display for MemoryScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}/{} agent {}",
            self.namespace, self.bundle, self.agent_id
        )
    }
}

/// One remembered turn.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryRecord {
    pub session_id: Uuid,
    pub turn_id: Uuid,
    /// Milliseconds since the Unix epoch.
    #[serde(rename = "at")]
    pub created_at_ms: u64,
    pub prompt: String,
    pub response: String,
}

impl MemoryRecord {
    /// A record of a finished turn, its prompt and answer cut to `max_text_bytes` each.
    pub fn of_turn(
        session_id: Uuid,
        turn_id: Uuid,
        prompt: &str,
        response: &str,
        max_text_bytes: usize,
    ) -> Self {
        Self {
            session_id,
            turn_id,
            created_at_ms: crate::events::now_ms(),
            prompt: shorten(prompt, max_text_bytes),
            response: shorten(response, max_text_bytes),
        }
    }
}

/// `text` trimmed and cut to `max` bytes, with an ellipsis when cut.
fn shorten(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.len() <= max {
        return text.to_owned();
    }
    let mut short = byte_prefix(text, max.saturating_sub('…'.len_utf8()))
        .trim_end()
        .to_owned();
    short.push('…');
    short
}

/// Why memory could not be read or written. Never fatal to a turn: the runtime logs it
/// and carries on without memory.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error("{context}: {source}")]
    Storage {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// The scope cannot name a place in the store (a custom provider's own reasons, too).
    #[error("memory of {scope}: {message}")]
    Refused { scope: String, message: String },
}

/// Where long-term memory lives. Implementations bound what they keep per scope.
pub trait MemoryProvider: Send + Sync + 'static {
    /// Stores a record at the end of a completed turn.
    fn capture(
        &self,
        scope: MemoryScope,
        record: MemoryRecord,
    ) -> BoxFuture<'static, Result<(), MemoryError>>;

    /// The `limit` most recent records of the scope, oldest first.
    fn recall(
        &self,
        scope: MemoryScope,
        limit: usize,
    ) -> BoxFuture<'static, Result<Vec<MemoryRecord>, MemoryError>>;
}

/// The memory section of a system prompt: the records, oldest first, as notes.
pub fn memory_section(records: &[MemoryRecord]) -> String {
    let mut section = String::from(
        "# Memory\n\nNotes from earlier sessions with this agent, oldest first. They may be out of date; prefer what the user says now.\n",
    );
    for record in records {
        section.push_str(&format!(
            "\n- The user asked: {}\n  You answered: {}\n",
            one_line(&record.prompt),
            one_line(&record.response)
        ));
    }
    section
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(prompt: &str, response: &str) -> MemoryRecord {
        MemoryRecord::of_turn(Uuid::nil(), Uuid::nil(), prompt, response, 20)
    }

    #[test]
    fn records_keep_short_texts_and_cut_long_ones() {
        let r = record("  My favourite colour is teal. ", "Noted.");
        assert_eq!(r.prompt, "My favourite colo…");
        assert_eq!(r.response, "Noted.");
        assert!(r.prompt.len() <= 20);
        let r = record("ééééééééééééééé", "ok");
        assert!(
            r.prompt.len() <= 20 && r.prompt.ends_with('…'),
            "{}",
            r.prompt
        );
    }

    #[test]
    fn the_section_lists_records_oldest_first_on_one_line_each() {
        let section = memory_section(&[record("a\nb", "c"), record("d", "e")]);
        assert!(section.starts_with("# Memory\n"));
        let a = section
            .find("The user asked: a b\n  You answered: c")
            .expect("first");
        let d = section
            .find("The user asked: d\n  You answered: e")
            .expect("second");
        assert!(a < d);
    }
}
