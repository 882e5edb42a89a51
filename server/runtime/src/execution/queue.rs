//! The execution queue: bounded, fair across sessions, one turn at a time per session.
//!
//! Each session has its own FIFO of pending turns; `ready` lists sessions that have a
//! pending turn and none running, in the order they became ready. A free worker slot
//! takes the first ready session's oldest turn. So turns of one session run in
//! submission order, different sessions run concurrently, and a busy session cannot
//! starve the others.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use uuid::Uuid;

use futures::FutureExt;
use futures::future::BoxFuture;

use super::status::ExecutionRequest;
use crate::store::{StoreError, StoreResult};

/// A turn waiting for a worker.
#[derive(Debug)]
pub struct Job {
    pub execution_id: Uuid,
    pub request: ExecutionRequest,
}

#[derive(Default)]
struct SessionQueue {
    pending: VecDeque<Job>,
    /// The execution a worker took, until it finishes.
    running: Option<Uuid>,
}

pub(crate) struct Queue {
    inner: Mutex<Inner>,
    capacity: usize,
}

#[derive(Default)]
struct Inner {
    queued: usize,
    ready: VecDeque<Uuid>,
    sessions: HashMap<Uuid, SessionQueue>,
    closed: bool,
}

/// Why a job was not queued.
pub(crate) enum PushError {
    Full,
    Closed,
}

/// Where a job was queued: what of its session was ahead of it then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placed {
    /// The session's turn a worker runs.
    pub running: Option<Uuid>,
    /// How many of the session's turns wait ahead of the job.
    pub ahead: usize,
}

impl Queue {
    pub fn new(capacity: usize) -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            capacity,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        crate::sync::lock(&self.inner)
    }

    #[cfg(test)]
    pub fn push(&self, job: Job) -> Result<(), PushError> {
        self.place(job, false).map(|_| ())
    }

    /// Queues `job` after (or, `first`, ahead of) the session's waiting turns.
    pub fn place(&self, job: Job, first: bool) -> Result<Placed, PushError> {
        let mut inner = self.lock();
        if inner.closed {
            return Err(PushError::Closed);
        }
        if inner.queued >= self.capacity {
            return Err(PushError::Full);
        }
        inner.queued += 1;
        let session_id = job.request.session_id;
        let queue = inner.sessions.entry(session_id).or_default();
        let became_ready = queue.pending.is_empty() && queue.running.is_none();
        let placed = Placed {
            running: queue.running,
            ahead: if first { 0 } else { queue.pending.len() },
        };
        if first {
            queue.pending.push_front(job);
        } else {
            queue.pending.push_back(job);
        }
        if became_ready {
            inner.ready.push_back(session_id);
        }
        Ok(placed)
    }

    /// The next job to run, marking its session as running.
    pub fn pop(&self) -> Option<Job> {
        let mut inner = self.lock();
        let session_id = inner.ready.pop_front()?;
        let queue = inner.sessions.get_mut(&session_id)?;
        let job = queue.pending.pop_front()?;
        queue.running = Some(job.execution_id);
        inner.queued -= 1;
        Some(job)
    }

    /// The session's running turn ended; its next turn, if any, becomes ready.
    pub fn finish(&self, session_id: Uuid) {
        let mut inner = self.lock();
        let Some(queue) = inner.sessions.get_mut(&session_id) else {
            return;
        };
        queue.running = None;
        if queue.pending.is_empty() {
            inner.sessions.remove(&session_id);
        } else {
            inner.ready.push_back(session_id);
        }
    }

    /// Takes a queued job out (cancel before it started).
    pub fn remove(&self, execution_id: Uuid) -> Option<Job> {
        let mut inner = self.lock();
        let (session_id, position) = inner.sessions.iter().find_map(|(sid, q)| {
            q.pending
                .iter()
                .position(|j| j.execution_id == execution_id)
                .map(|p| (*sid, p))
        })?;
        let queue = inner.sessions.get_mut(&session_id)?;
        let job = queue.pending.remove(position)?;
        let now_empty = queue.pending.is_empty();
        let running = queue.running.is_some();
        inner.queued -= 1;
        if now_empty {
            inner.ready.retain(|s| *s != session_id);
            if !running {
                inner.sessions.remove(&session_id);
            }
        }
        Some(job)
    }

    /// Takes every queued job of a session out.
    pub fn remove_session(&self, session_id: Uuid) -> Vec<Job> {
        let mut inner = self.lock();
        let Some(queue) = inner.sessions.get_mut(&session_id) else {
            return Vec::new();
        };
        let jobs: Vec<Job> = queue.pending.drain(..).collect();
        let running = queue.running.is_some();
        inner.queued -= jobs.len();
        inner.ready.retain(|s| *s != session_id);
        if !running {
            inner.sessions.remove(&session_id);
        }
        jobs
    }

    /// Refuses new jobs and hands back every queued one.
    pub fn close(&self) -> Vec<Job> {
        let mut inner = self.lock();
        inner.closed = true;
        inner.ready.clear();
        inner.queued = 0;
        inner
            .sessions
            .values_mut()
            .flat_map(|q| q.pending.drain(..).collect::<Vec<_>>())
            .collect()
    }

    pub fn queued(&self) -> usize {
        self.lock().queued
    }
}

/// The queue in memory behind the storage trait: every call is answered at once.
impl crate::store::TurnQueue for Queue {
    fn push(&self, turn: Job, first: bool) -> BoxFuture<'_, StoreResult<Placed>> {
        let placed = self.place(turn, first).map_err(|e| match e {
            PushError::Full => StoreError::QueueFull {
                capacity: self.capacity,
            },
            PushError::Closed => StoreError::QueueClosed,
        });
        futures::future::ready(placed).boxed()
    }

    fn claim_next(&self) -> BoxFuture<'_, StoreResult<Option<Job>>> {
        futures::future::ready(Ok(self.pop())).boxed()
    }

    fn finish(&self, session_id: Uuid) -> BoxFuture<'_, StoreResult<()>> {
        Queue::finish(self, session_id);
        futures::future::ready(Ok(())).boxed()
    }

    fn remove(&self, execution_id: Uuid) -> BoxFuture<'_, StoreResult<Option<Job>>> {
        futures::future::ready(Ok(Queue::remove(self, execution_id))).boxed()
    }

    fn remove_session(&self, session_id: Uuid) -> BoxFuture<'_, StoreResult<Vec<Job>>> {
        futures::future::ready(Ok(Queue::remove_session(self, session_id))).boxed()
    }

    fn close(&self) -> BoxFuture<'_, StoreResult<Vec<Job>>> {
        futures::future::ready(Ok(Queue::close(self))).boxed()
    }

    fn queued(&self) -> usize {
        Queue::queued(self)
    }

    fn capacity(&self) -> usize {
        self.capacity
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(session: Uuid) -> Job {
        Job {
            execution_id: Uuid::new_v4(),
            request: ExecutionRequest {
                session_id: session,
                ..Default::default()
            },
        }
    }

    #[test]
    fn one_turn_per_session_in_order_and_sessions_interleave() {
        let q = Queue::new(10);
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let (a1, a2, b1) = (job(a), job(a), job(b));
        let ids = (a1.execution_id, a2.execution_id, b1.execution_id);
        for j in [a1, a2, b1] {
            assert!(q.push(j).is_ok());
        }
        assert_eq!(q.pop().map(|j| j.execution_id), Some(ids.0));
        // a is running: its second turn waits, b runs.
        assert_eq!(q.pop().map(|j| j.execution_id), Some(ids.2));
        assert!(q.pop().is_none());
        q.finish(a);
        assert_eq!(q.pop().map(|j| j.execution_id), Some(ids.1));
        assert_eq!(q.queued(), 0);
    }

    #[test]
    fn a_job_placed_first_runs_next_and_is_told_what_runs_ahead() {
        let q = Queue::new(10);
        let s = Uuid::new_v4();
        let (running, waiting, urgent) = (job(s), job(s), job(s));
        let ids = (
            running.execution_id,
            waiting.execution_id,
            urgent.execution_id,
        );
        let placed = q.place(running, false).ok();
        assert_eq!(
            placed,
            Some(Placed {
                running: None,
                ahead: 0
            })
        );
        assert_eq!(q.pop().map(|j| j.execution_id), Some(ids.0));
        let placed = q.place(waiting, false).ok();
        assert_eq!(
            placed,
            Some(Placed {
                running: Some(ids.0),
                ahead: 0
            })
        );
        let placed = q.place(urgent, true).ok();
        assert_eq!(
            placed,
            Some(Placed {
                running: Some(ids.0),
                ahead: 0
            })
        );
        assert!(q.pop().is_none(), "the session's turn still runs");
        q.finish(s);
        assert_eq!(q.pop().map(|j| j.execution_id), Some(ids.2));
        q.finish(s);
        assert_eq!(q.pop().map(|j| j.execution_id), Some(ids.1));
    }

    #[test]
    fn full_queue_refuses_and_removal_frees_room() {
        let q = Queue::new(2);
        let s = Uuid::new_v4();
        let first = job(s);
        let first_id = first.execution_id;
        assert!(q.push(first).is_ok());
        assert!(q.push(job(s)).is_ok());
        assert!(matches!(q.push(job(s)), Err(PushError::Full)));
        assert!(q.remove(first_id).is_some());
        assert!(q.push(job(s)).is_ok());
        assert_eq!(q.remove_session(s).len(), 2);
        assert_eq!(q.queued(), 0);
        assert!(q.pop().is_none());
    }
}
