//! The store's state behind its lock: pending requests in arrival order, recently resolved
//! ids, and the calls each session allowed always.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;
use uuid::Uuid;

use super::key::argument_key;
use super::watch::{ApprovalChange, Changes};
use super::{Approval, Resolution};
use crate::events::{ApprovalDecision, ApprovalResolution};

/// How many resolved request ids are kept to answer a repeated resolve.
const RESOLVED_CAPACITY: usize = 4096;
/// How long a resolved request id is kept.
const RESOLVED_TTL: Duration = Duration::from_secs(60 * 60);

/// Everything the store knows, behind one lock.
#[derive(Default)]
pub(super) struct State {
    /// Pending requests by arrival, so listing is oldest first.
    pub(super) pending: BTreeMap<u64, Entry>,
    pub(super) ids: HashMap<String, u64>,
    pub(super) next_seq: u64,
    pub(super) resolved: HashMap<String, ApprovalResolution>,
    /// Resolved ids in the order they were resolved, for eviction.
    pub(super) resolved_order: VecDeque<(String, Instant)>,
    /// Per session: (tool, argument key) pairs a human allowed always.
    pub(super) remembered: HashMap<Uuid, HashSet<(String, String)>>,
    /// Where requests filed and ended are published to watchers.
    pub(super) changes: Changes,
}

/// A pending request and the channel its waiter listens on.
pub(super) struct Entry {
    pub(super) approval: Approval,
    pub(super) deadline: Instant,
    pub(super) sender: oneshot::Sender<Resolution>,
}

impl State {
    /// Ends a pending request: wakes its waiter, remembers `allow_always`, and keeps the
    /// id as resolved. `Err(Some(..))` if it had already ended, `Err(None)` if unknown.
    pub(super) fn finish(
        &mut self,
        request_id: &str,
        resolution: Resolution,
    ) -> Result<Approval, Option<ApprovalResolution>> {
        let Some(entry) = self
            .ids
            .get(request_id)
            .copied()
            .and_then(|seq| self.pending.remove(&seq))
        else {
            return Err(self.resolved.get(request_id).copied());
        };
        self.ids.remove(request_id);
        let Entry {
            mut approval,
            sender,
            ..
        } = entry;
        if resolution.decision == ApprovalDecision::AllowAlways && approval.request.input.is_none()
        {
            let request = &approval.request;
            self.remembered
                .entry(request.session_id)
                .or_default()
                .insert((
                    request.tool.clone(),
                    argument_key(&request.tool, &request.arguments),
                ));
        }
        // The waiter may be gone (its turn ended); the request still ends.
        let _ = sender.send(resolution.clone());
        self.remember_resolved(request_id, resolution.resolution);
        approval.resolution = Some(resolution);
        self.changes
            .publish(ApprovalChange::Removed(approval.clone()));
        Ok(approval)
    }

    /// The request for input a pending id stands for; `None` for a tool call or an id
    /// not pending.
    pub(super) fn input_of(&self, request_id: &str) -> Option<super::InputRequest> {
        let seq = self.ids.get(request_id)?;
        self.pending.get(seq)?.approval.request.input.clone()
    }

    fn remember_resolved(&mut self, request_id: &str, resolution: ApprovalResolution) {
        let now = Instant::now();
        self.resolved.insert(request_id.to_owned(), resolution);
        self.resolved_order.push_back((request_id.to_owned(), now));
        while let Some((id, at)) = self.resolved_order.front() {
            let too_many = self.resolved_order.len() > RESOLVED_CAPACITY;
            if !too_many && now.duration_since(*at) < RESOLVED_TTL {
                break;
            }
            self.resolved.remove(id);
            self.resolved_order.pop_front();
        }
    }

    /// Requests past their deadline end as timed out even if their waiter is not being
    /// polled, so they are never listed or resolvable after the deadline.
    pub(super) fn expire_overdue(&mut self) {
        let now = Instant::now();
        let overdue: Vec<String> = self
            .pending
            .values()
            .filter(|e| e.deadline <= now)
            .map(|e| e.approval.request_id.clone())
            .collect();
        for id in overdue {
            let _ = self.finish(
                &id,
                Resolution::ended(ApprovalResolution::TimedOut, "no decision in time; denied"),
            );
        }
    }
}
