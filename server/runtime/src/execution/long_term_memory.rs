//! Long-term memory as a turn uses it: a completed turn leaves a short record.

use std::sync::Arc;

use tokio::task::JoinHandle;

use super::turn::Turn;
use crate::memory::{MemoryProvider, MemoryRecord, MemoryScope};

/// Where a turn's record goes; absent when memory is off for the agent or the server.
#[derive(Clone)]
pub(crate) struct TurnMemory {
    pub provider: Arc<dyn MemoryProvider>,
    pub scope: MemoryScope,
    /// Longest prompt or answer kept in a record, in bytes.
    pub max_text_bytes: usize,
}

impl Turn {
    /// Captures the finished turn in a task of its own, so that writing the record
    /// overlaps with syncing the turn's end; the turn's end is published once both are
    /// done. A failure is logged, never fatal: the answer stands.
    pub(super) fn remember(&self, prompt: &str, response: &str) -> Option<JoinHandle<()>> {
        let memory = self.memory.clone()?;
        let session_id = self.session.id();
        let record = MemoryRecord::of_turn(
            session_id,
            self.turn_id,
            prompt,
            response,
            memory.max_text_bytes,
        );
        Some(tokio::spawn(async move {
            if let Err(e) = memory.provider.capture(memory.scope.clone(), record).await {
                tracing::warn!(session = %session_id, scope = %memory.scope, error = %e, "cannot record long-term memory");
            }
        }))
    }
}
