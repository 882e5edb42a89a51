//! Long-term memory as a turn uses it: a completed turn leaves a short record.

use std::sync::Arc;

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
    /// Captures the finished turn. A failure is logged, never fatal: the answer stands.
    pub(super) async fn remember(&self, prompt: &str, response: &str) {
        let Some(memory) = &self.memory else {
            return;
        };
        let record = MemoryRecord::of_turn(
            self.session.id(),
            self.turn_id,
            prompt,
            response,
            memory.max_text_bytes,
        );
        if let Err(e) = memory.provider.capture(memory.scope.clone(), record).await {
            tracing::warn!(session = %self.session.id(), scope = %memory.scope, error = %e, "cannot record long-term memory");
        }
    }
}
