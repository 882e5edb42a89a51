//! The file session store behind the storage traits ([`crate::store`]): records and logs
//! under `<home>/sessions/`, the open-turn journal beside them. Each call runs on the
//! calling task, as the store's own methods do.

use futures::FutureExt;
use futures::future::BoxFuture;
use uuid::Uuid;

use super::record::{RECORD_FILE, SessionRecord};
use super::store::{QuarantinedSession, SessionStore};
use crate::api::SessionFilter;
use crate::error::RuntimeError;
use crate::events::Event;
use crate::paging::{Page, PageRequest};
use crate::session::SessionInfo;
use crate::store::{EventLogs, SessionRecords, StoreResult, TurnJournal};

impl SessionRecords for SessionStore {
    fn create_session(&self, record: SessionRecord) -> BoxFuture<'_, StoreResult<()>> {
        async move {
            self.create(record)?;
            Ok(())
        }
        .boxed()
    }

    fn session(&self, id: Uuid) -> BoxFuture<'_, StoreResult<Option<SessionInfo>>> {
        async move { Ok(self.peek(id)) }.boxed()
    }

    fn list_sessions(
        &self,
        filter: SessionFilter,
        page: PageRequest,
    ) -> BoxFuture<'_, StoreResult<Page<SessionInfo>>> {
        async move { Ok(self.list_page(&filter, &page)?) }.boxed()
    }

    fn delete_session(&self, id: Uuid) -> BoxFuture<'_, StoreResult<bool>> {
        async move {
            let handle = match self.get(id).await {
                Ok(handle) => handle,
                Err(RuntimeError::NotFound { .. } | RuntimeError::Quarantined { .. }) => {
                    return Ok(false);
                }
                Err(e) => return Err(e.into()),
            };
            self.remove(&handle)?;
            Ok(true)
        }
        .boxed()
    }

    fn quarantine_session(&self, id: Uuid, reason: String) -> BoxFuture<'_, StoreResult<()>> {
        async move {
            if !self.dir_of(id).join(RECORD_FILE).is_file() {
                return Err(RuntimeError::not_found("session", id.to_string()).into());
            }
            let open = self.lock_open().remove(&id);
            if let Some(handle) = open.as_ref().and_then(|cell| cell.get()) {
                handle.mark_deleted();
            }
            self.quarantine(id, &reason);
            Ok(())
        }
        .boxed()
    }

    fn quarantined(&self) -> Vec<QuarantinedSession> {
        SessionStore::quarantined(self)
    }
}

impl EventLogs for SessionStore {
    fn append_events(
        &self,
        session_id: Uuid,
        expected_next: u64,
        events: Vec<Event>,
    ) -> BoxFuture<'_, StoreResult<u64>> {
        async move {
            let handle = self.get(session_id).await?;
            handle.append_batch(expected_next, events)
        }
        .boxed()
    }

    fn sync_events(&self, session_id: Uuid) -> BoxFuture<'_, StoreResult<()>> {
        async move {
            let handle = self.get(session_id).await?;
            Ok(handle.sync_and_publish().await?)
        }
        .boxed()
    }

    fn read_events_after(
        &self,
        session_id: Uuid,
        after_sequence: u64,
        limit: usize,
    ) -> BoxFuture<'_, StoreResult<Vec<Event>>> {
        async move {
            let handle = self.get(session_id).await?;
            Ok(handle.read_after(after_sequence, limit)?)
        }
        .boxed()
    }

    fn last_sequence(&self, session_id: Uuid) -> BoxFuture<'_, StoreResult<u64>> {
        async move { Ok(self.get(session_id).await?.last_sequence()) }.boxed()
    }
}

impl TurnJournal for SessionStore {
    fn turn_started(&self, session_id: Uuid) -> BoxFuture<'_, StoreResult<()>> {
        async move { Ok(self.journal_turn_start(session_id)?) }.boxed()
    }

    fn turn_ended(&self, session_id: Uuid) -> BoxFuture<'_, StoreResult<()>> {
        async move {
            self.journal_turn_end(session_id);
            Ok(())
        }
        .boxed()
    }

    fn open_turns(&self) -> BoxFuture<'_, StoreResult<Vec<Uuid>>> {
        async move { Ok(self.journaled_open_sessions()) }.boxed()
    }
}
