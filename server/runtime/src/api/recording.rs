//! Record mode at the runtime's level: which turns are recorded, and handing a session's
//! cassette to whoever asks for it (the server decides where it lives; a client never
//! names a path).

use std::sync::Arc;

use uuid::Uuid;

use super::OdysseyRuntime;
use crate::error::{Result, RuntimeError};
use crate::provider::ModelProvider;

impl OdysseyRuntime {
    /// The provider a turn of `session` calls: recorded when the server records cassettes.
    pub(crate) fn record_calls(
        &self,
        session: Uuid,
        provider: Arc<dyn ModelProvider>,
    ) -> Arc<dyn ModelProvider> {
        if self.inner.config.record_cassettes {
            self.inner.recorder.wrap(session, provider)
        } else {
            provider
        }
    }

    /// The cassette recorded for a session: JSON Lines the `replay` provider plays (ship it
    /// in a bundle as `cassettes/<model>.jsonl`). `FailedPrecondition` when nothing was
    /// recorded for it.
    pub async fn session_cassette(&self, id: Uuid) -> Result<Vec<u8>> {
        self.stored_session(id).await?;
        let recorder = self.inner.recorder.clone();
        let read = tokio::task::spawn_blocking(move || recorder.read(id))
            .await
            .map_err(|e| RuntimeError::storage("read cassette", std::io::Error::other(e)))?
            .map_err(|e| RuntimeError::storage(format!("read the cassette of session {id}"), e))?;
        read.ok_or_else(|| {
            let why = if self.inner.config.record_cassettes {
                "a session is recorded from its first model call, and this one has made none \
                 while the server recorded"
            } else {
                "this server does not record cassettes (start it with --record-cassettes)"
            };
            RuntimeError::FailedPrecondition(format!(
                "session {id} has no recorded model calls: {why}"
            ))
        })
    }
}
