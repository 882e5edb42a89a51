//! Long-term memory around a turn: whether it is on, and the system prompt's memory
//! section, recalled at the session's first turn and kept for the session's life.

use std::sync::Arc;

use uuid::Uuid;

use super::OdysseyRuntime;
use crate::bundle::AgentDefinition;
use crate::events::EventPayload;
use crate::execution::TurnMemory;
use crate::memory::MemoryScope;
use crate::memory::long_term::memory_section;
use crate::session::{HistorySnapshot, SessionHandle};

impl OdysseyRuntime {
    /// The long-term memory of the session's agent; `None` when the operator or the agent
    /// switched it off.
    pub(crate) fn turn_memory(
        &self,
        session: &SessionHandle,
        agent: &AgentDefinition,
    ) -> Option<TurnMemory> {
        let settings = &self.inner.config.memory;
        if !settings.enabled || !agent.memory.enabled {
            return None;
        }
        let record = session.record();
        Some(TurnMemory {
            provider: self.inner.memory.clone(),
            scope: MemoryScope {
                namespace: record.bundle.namespace.clone(),
                bundle: record.bundle.name.clone(),
                agent_id: record.agent_id.clone(),
            },
            max_text_bytes: settings.max_text_bytes,
        })
    }

    /// The memory section of this turn's system prompt. At the session's first turn the
    /// most recent records are recalled and recorded as a `memory_recalled` event; later
    /// turns (and the session reopened) read the section back from the history. A store
    /// that cannot be read costs the turn its memory, not its run.
    pub(crate) async fn memory_section(
        &self,
        session: &Arc<SessionHandle>,
        memory: Option<&TurnMemory>,
        history: &HistorySnapshot,
        turn_id: Uuid,
    ) -> Option<Arc<str>> {
        let memory = memory?;
        if history.memory_section.is_some() || session.stats().turn_count > 0 {
            return history.memory_section.clone();
        }
        let limit = self.inner.config.memory.recall_records;
        let records = match memory.provider.recall(memory.scope.clone(), limit).await {
            Ok(records) => records,
            Err(e) => {
                tracing::warn!(session = %session.id(), scope = %memory.scope, error = %e, "cannot recall long-term memory");
                return None;
            }
        };
        if records.is_empty() {
            return None;
        }
        let section = memory_section(&records);
        let recalled = EventPayload::MemoryRecalled {
            records: u32::try_from(records.len()).unwrap_or(u32::MAX),
            section: section.clone(),
        };
        if let Err(e) = session.append_now(Some(turn_id), recalled) {
            tracing::warn!(session = %session.id(), error = %e, "cannot record recalled memory");
            return None;
        }
        Some(Arc::from(section))
    }
}
