//! A pipe whose write end only the server holds: its read end is handed to every
//! sandboxed process's helper, where a watcher waits on it. A server that dies, even by
//! SIGKILL, closes its write end, the watcher reads the end of the pipe and kills
//! everything in its sandbox, so no command outlives the server that would have timed it
//! out. (The parent-death signal covers the processes the server starts itself, but
//! bubblewrap binds the sandbox's own first process to its parent only partway through
//! setting it up; a server killed in that moment left the command running.)

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use rustix::pipe::PipeFlags;

/// The server's end and the end handed out; both close on exec unless handed out.
#[derive(Debug)]
pub(crate) struct Lifeline {
    read: OwnedFd,
    /// Never written: it only has to stay open as long as the server lives.
    _write: OwnedFd,
}

impl Lifeline {
    pub(crate) fn new() -> io::Result<Self> {
        let (read, write) = rustix::pipe::pipe_with(PipeFlags::CLOEXEC)?;
        Ok(Self {
            read,
            _write: write,
        })
    }

    /// The descriptor a spawned process inherits (at the same number).
    pub(crate) fn read_fd(&self) -> RawFd {
        self.read.as_raw_fd()
    }
}
