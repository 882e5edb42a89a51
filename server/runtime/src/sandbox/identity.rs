//! File work done on a session's behalf with the sandbox user's rights.
//!
//! When the server runs as root, its own rights would let a file tool read a root-only
//! file hard-linked into a workspace, or leave root-owned files where the sandboxed
//! processes must edit them. So that work runs on a thread of its own that first opens
//! what only the server may reach (the session's folders, under a home the sandbox user
//! cannot search), then takes the sandbox user's uid, gid and no supplementary groups for
//! good — Linux credentials belong to the thread, not the process — and does the rest.
//! The thread ends with the work; no other thread ever changes identity.
//!
//! Without root there is nothing to take: the work runs on the blocking pool, already
//! with the same rights as the session's processes.

use std::io;
use std::marker::PhantomData;

use rustix::process::{Gid, Uid};

/// Who file work on a session's behalf runs as.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SandboxUser {
    /// The uid and gid to take, when the server is root.
    ids: Option<(u32, u32)>,
}

/// Handed to the work: what it opens before [`Handoff::assume`] it opens with the
/// server's rights, everything after with the sandbox user's. Bound to its thread.
#[derive(Debug)]
pub struct Handoff {
    ids: Option<(u32, u32)>,
    _thread: PhantomData<*const ()>,
}

/// Why the work could not run.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error("cannot start a thread for file work: {0}")]
    Thread(io::Error),
    #[error("the file work stopped unexpectedly")]
    Lost,
}

impl SandboxUser {
    /// `ids` is the uid and gid sandboxed processes run as when the server is root
    /// ([`super::Sandbox::sandbox_owner`]), `None` otherwise.
    pub fn new(ids: Option<(u32, u32)>) -> Self {
        Self { ids }
    }

    /// Runs `work` off the async threads; see the module documentation.
    pub async fn run<R, F>(self, work: F) -> Result<R, IdentityError>
    where
        R: Send + 'static,
        F: FnOnce(Handoff) -> R + Send + 'static,
    {
        let ids = self.ids;
        let handoff = move || Handoff {
            ids,
            _thread: PhantomData,
        };
        if ids.is_none() {
            return tokio::task::spawn_blocking(move || work(handoff()))
                .await
                .map_err(|_| IdentityError::Lost);
        }
        let (sender, receiver) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("odyssey-fs".to_owned())
            .spawn(move || {
                let _ = sender.send(work(handoff()));
            })
            .map_err(IdentityError::Thread)?;
        receiver.await.map_err(|_| IdentityError::Lost)
    }
}

impl SandboxUser {
    /// Like [`SandboxUser::run`], for a caller that is itself off the async threads and
    /// waits for the work: without root the work runs right here.
    pub fn run_blocking<R, F>(self, work: F) -> Result<R, IdentityError>
    where
        R: Send,
        F: FnOnce(Handoff) -> R + Send,
    {
        let ids = self.ids;
        let handoff = move || Handoff {
            ids,
            _thread: PhantomData,
        };
        if ids.is_none() {
            return Ok(work(handoff()));
        }
        std::thread::scope(|scope| {
            std::thread::Builder::new()
                .name("odyssey-fs".to_owned())
                .spawn_scoped(scope, move || work(handoff()))
                .map_err(IdentityError::Thread)?
                .join()
                .map_err(|_| IdentityError::Lost)
        })
    }
}

impl Handoff {
    /// Takes the sandbox user's identity on this thread, for the rest of its life. A no-op
    /// when the server is not root.
    pub fn assume(self) -> io::Result<()> {
        let Some((uid, gid)) = self.ids else {
            return Ok(());
        };
        // Groups and gid first: once the uid is dropped the thread may no longer change them.
        rustix::thread::set_thread_groups(&[])?;
        let gid = Gid::from_raw(gid);
        rustix::thread::set_thread_res_gid(gid, gid, gid)?;
        let uid = Uid::from_raw(uid);
        rustix::thread::set_thread_res_uid(uid, uid, uid)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn is_root() -> bool {
        rustix::process::geteuid().is_root()
    }

    #[tokio::test]
    async fn without_root_the_work_runs_as_the_server() {
        let user = SandboxUser::new(None);
        let uid = user
            .run(|handoff| {
                handoff.assume().expect("no-op");
                rustix::process::geteuid().as_raw()
            })
            .await
            .expect("runs");
        assert_eq!(uid, rustix::process::geteuid().as_raw());
    }

    #[tokio::test]
    async fn as_root_the_work_loses_root_for_good_and_only_on_its_thread() {
        if !is_root() {
            return;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let private = dir.path().join("root-only.txt");
        std::fs::write(&private, "secret").expect("write");
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let created = dir.path().join("created.txt");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777))
            .expect("chmod");
        let (private_for, created_for) = (private.clone(), created.clone());
        let (read, wrote, back) = SandboxUser::new(Some((65534, 65534)))
            .run(move |handoff| {
                handoff.assume().expect("assume");
                let read = std::fs::read_to_string(&private_for).is_ok();
                let wrote = std::fs::write(&created_for, "x").is_ok();
                let back =
                    rustix::thread::set_thread_res_uid(Uid::ROOT, Uid::ROOT, Uid::ROOT).is_ok();
                (read, wrote, back)
            })
            .await
            .expect("runs");
        assert!(!read, "the sandbox user read a root-only file");
        assert!(wrote);
        assert!(!back, "the thread could take root back");
        assert_eq!(std::fs::metadata(&created).expect("meta").uid(), 65534);
        assert!(rustix::process::geteuid().is_root(), "the server lost root");
    }
}
