//! The file session store behind the storage traits ([`crate::store`]): records and logs
//! under `<home>/sessions/`, the open-turn journal beside them. What reads or writes more
//! than a line of a file (creating, listing, deleting, reading a log back) runs on a
//! blocking thread; an append is a buffered write under the open session's lock, as the
//! runtime's own appends are.

use std::sync::Arc;

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

impl SessionRecords for Arc<SessionStore> {
    fn create_session(&self, record: SessionRecord) -> BoxFuture<'_, StoreResult<()>> {
        let store = self.clone();
        blocking("create session", move || store.create(record).map(drop)).boxed()
    }

    fn session(&self, id: Uuid) -> BoxFuture<'_, StoreResult<Option<SessionInfo>>> {
        async move {
            // Opening it reads (and repairs) its log the first time, as any use of the
            // session does: a session whose log cannot be read is moved aside and said so.
            match self.get(id).await {
                Ok(handle) => Ok(Some(handle.info())),
                Err(RuntimeError::NotFound { .. }) => Ok(None),
                Err(e) => Err(e.into()),
            }
        }
        .boxed()
    }

    fn list_sessions(
        &self,
        filter: SessionFilter,
        page: PageRequest,
    ) -> BoxFuture<'_, StoreResult<Page<SessionInfo>>> {
        if let Some(remote) = self.remote.get() {
            // The store lists every session, not only those this server has a copy of.
            return remote.records.list_sessions(filter, page);
        }
        let store = self.clone();
        blocking("list sessions", move || store.list_page(&filter, &page)).boxed()
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
            if let Some(remote) = self.remote.get()
                && !remote.records.delete_session(id).await?
            {
                return Ok(false);
            }
            let store = self.clone();
            blocking("delete session", move || store.remove(&handle)).await?;
            Ok(true)
        }
        .boxed()
    }

    fn quarantine_session(&self, id: Uuid, reason: String) -> BoxFuture<'_, StoreResult<()>> {
        async move {
            if let Some(remote) = self.remote.get() {
                remote
                    .records
                    .quarantine_session(id, reason.clone())
                    .await?;
            }
            if !self.dir_of(id).join(RECORD_FILE).is_file() {
                if self.remote.get().is_some() {
                    return Ok(());
                }
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
        if let Some(remote) = self.remote.get() {
            return remote.records.quarantined();
        }
        SessionStore::quarantined(self.as_ref())
    }
}

impl EventLogs for Arc<SessionStore> {
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
            blocking("read log", move || handle.read_after(after_sequence, limit)).await
        }
        .boxed()
    }

    fn last_sequence(&self, session_id: Uuid) -> BoxFuture<'_, StoreResult<u64>> {
        async move { Ok(self.get(session_id).await?.last_sequence()) }.boxed()
    }
}

impl TurnJournal for Arc<SessionStore> {
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

/// Runs `work` (file I/O) on a blocking thread.
async fn blocking<T: Send + 'static>(
    what: &'static str,
    work: impl FnOnce() -> crate::Result<T> + Send + 'static,
) -> StoreResult<T> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => Ok(result?),
        Err(e) => Err(RuntimeError::storage(what, std::io::Error::other(e)).into()),
    }
}
