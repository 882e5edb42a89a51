//! Following the pending approval requests (`WatchApprovals`), across disconnects: the
//! watcher keeps the set the server says is pending, and after a transport failure watches
//! again, whose first message is a fresh snapshot that replaces the set. So the set is
//! always one the server had, never a mix missing an ending that happened meanwhile.

use odyssey_api::v1 as pb;
use odyssey_api::v1::approval_service_client::ApprovalServiceClient;
use odyssey_api::v1::watch_approvals_response::Item;
use tonic::{Status, Streaming};

use crate::client::{AuthChannel, OdysseyClient};
use crate::error::ClientError;
use crate::events::{ReconnectPolicy, is_transient};

/// A change to the pending requests, as [`ApprovalWatcher::next`] reports it. One is made
/// per message received and handed straight to the caller, so its size (an inline
/// `Approval`) costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum ApprovalsChange {
    /// The whole set, replacing what was held: on the first message, after a reconnect,
    /// and when the server found the watcher too far behind.
    Snapshot(Vec<pb::Approval>),
    /// A request now waits for a human.
    Added(pb::Approval),
    /// A request ended (decided by anyone, timed out, cancelled, interrupted): how.
    Removed(pb::ApprovalResolved),
}

/// The pending approval requests, kept current. See [`OdysseyClient::watch_approvals`].
pub struct ApprovalWatcher {
    client: ApprovalServiceClient<AuthChannel>,
    session_id: String,
    policy: ReconnectPolicy,
    inner: Option<Streaming<pb::WatchApprovalsResponse>>,
    pending: Vec<pb::Approval>,
    heartbeats: u64,
    reconnects: u64,
    finished: bool,
}

impl std::fmt::Debug for ApprovalWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalWatcher")
            .field("session_id", &self.session_id)
            .field("pending", &self.pending.len())
            .field("reconnects", &self.reconnects)
            .finish_non_exhaustive()
    }
}

impl OdysseyClient {
    /// Watches the pending approval requests (only those of `session` when given). The
    /// first [`ApprovalWatcher::next`] is the snapshot of every pending request; then each
    /// request filed and each that ends arrives as it happens. A dropped connection is
    /// watched again (with `policy`), and reported as a fresh snapshot.
    pub async fn watch_approvals(
        &self,
        session: Option<&str>,
        policy: ReconnectPolicy,
    ) -> Result<ApprovalWatcher, ClientError> {
        let mut watcher = ApprovalWatcher {
            client: self.approvals(),
            session_id: session.unwrap_or_default().to_owned(),
            policy,
            inner: None,
            pending: Vec::new(),
            heartbeats: 0,
            reconnects: 0,
            finished: false,
        };
        watcher.inner = Some(watcher.watch().await?);
        Ok(watcher)
    }
}

impl ApprovalWatcher {
    /// The next change, already applied to [`ApprovalWatcher::pending`]. `Ok(None)` when the
    /// server ended the stream; an error when it refused or the transport stayed down past
    /// the policy. Heartbeats are counted, not returned.
    pub async fn next(&mut self) -> Result<Option<ApprovalsChange>, ClientError> {
        let mut attempts = 0u32;
        loop {
            if self.finished {
                return Ok(None);
            }
            let result = match self.inner.as_mut() {
                Some(inner) => inner.message().await,
                None => match self.watch().await {
                    Ok(inner) => {
                        self.inner = Some(inner);
                        self.reconnects += 1;
                        continue;
                    }
                    Err(status) => Err(status),
                },
            };
            match result {
                Ok(Some(message)) => {
                    attempts = 0;
                    if let Some(change) = self.apply(message.item) {
                        return Ok(Some(change));
                    }
                }
                Ok(None) => {
                    self.finished = true;
                    self.inner = None;
                    return Ok(None);
                }
                Err(status) => {
                    self.inner = None;
                    if !is_transient(&status) || attempts >= self.policy.max_attempts {
                        self.finished = true;
                        return Err(status.into());
                    }
                    attempts += 1;
                    tokio::time::sleep(self.policy.delay(attempts)).await;
                }
            }
        }
    }

    fn apply(&mut self, item: Option<Item>) -> Option<ApprovalsChange> {
        match item? {
            Item::Snapshot(snapshot) => {
                self.pending = snapshot.approvals.clone();
                Some(ApprovalsChange::Snapshot(snapshot.approvals))
            }
            Item::Added(approval) => {
                self.pending.retain(|a| a.request_id != approval.request_id);
                self.pending.push(approval.clone());
                Some(ApprovalsChange::Added(approval))
            }
            Item::Removed(removed) => {
                self.pending.retain(|a| a.request_id != removed.request_id);
                Some(ApprovalsChange::Removed(removed))
            }
            Item::Heartbeat(_) => {
                self.heartbeats += 1;
                None
            }
        }
    }

    /// The requests pending now, oldest first, as far as the changes handed out say.
    pub fn pending(&self) -> &[pb::Approval] {
        &self.pending
    }

    /// Heartbeats received so far.
    pub fn heartbeats(&self) -> u64 {
        self.heartbeats
    }

    /// How many times the watcher watched again after a transport failure.
    pub fn reconnects(&self) -> u64 {
        self.reconnects
    }

    async fn watch(&mut self) -> Result<Streaming<pb::WatchApprovalsResponse>, Status> {
        let request = pb::WatchApprovalsRequest {
            session_id: self.session_id.clone(),
        };
        Ok(self.client.watch_approvals(request).await?.into_inner())
    }
}
