//! What a model remembers.
//!
//! Within a session: the history of earlier turns (an [`interrupted`] one as far as it
//! got, with a note), sent through a sliding window sized by a token [`estimate`] against
//! the model's context window ([`window`]), with older turns replaced by a model-written
//! summary when they no longer fit ([`compaction`]). The
//! summary is a session event, so reopening a session rebuilds summary + later turns.
//!
//! Across sessions: short records of finished turns, recalled into the system prompt of
//! an agent's new sessions ([`long_term`]), kept by a [`MemoryProvider`]: the file-backed
//! [`FileMemory`] unless the embedding program supplies its own.

pub mod compaction;
pub mod estimate;
mod file_store;
pub mod interrupted;
pub mod long_term;
pub mod window;

use std::sync::Arc;

pub use file_store::{FileMemory, FileMemoryLimits};
pub use long_term::{MemoryError, MemoryProvider, MemoryRecord, MemoryScope};

/// Operator settings of long-term memory.
#[derive(Clone)]
pub struct MemorySettings {
    /// Whether long-term memory is on at all; an agent can also switch it off for itself
    /// (`spec.memory.enabled: false` in its agent.yaml).
    pub enabled: bool,
    /// Records kept per agent; the oldest are dropped beyond it.
    pub max_records: usize,
    /// Bytes kept per agent; the oldest records are dropped beyond it.
    pub max_bytes: usize,
    /// Longest prompt or answer kept in a record, in bytes (longer ones are cut).
    pub max_text_bytes: usize,
    /// Records recalled into the system prompt of a session's first turn.
    pub recall_records: usize,
    /// Where records live; `None` is the file-backed store under `<home>/memory/`.
    pub provider: Option<Arc<dyn MemoryProvider>>,
}

impl Default for MemorySettings {
    fn default() -> Self {
        Self {
            enabled: true,
            max_records: 50,
            max_bytes: 64 * 1024,
            max_text_bytes: 1_000,
            recall_records: 8,
            provider: None,
        }
    }
}

impl std::fmt::Debug for MemorySettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemorySettings")
            .field("enabled", &self.enabled)
            .field("max_records", &self.max_records)
            .field("max_bytes", &self.max_bytes)
            .field("max_text_bytes", &self.max_text_bytes)
            .field("recall_records", &self.recall_records)
            .field(
                "provider",
                &self
                    .provider
                    .as_ref()
                    .map_or("files under <home>/memory", |_| "custom"),
            )
            .finish()
    }
}
