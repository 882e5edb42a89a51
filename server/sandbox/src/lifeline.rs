//! The watcher on the server's lifeline (see the server's side in `sandbox::lifeline`).
//!
//! Just before the helper becomes the command, it forks a watcher that blocks reading the
//! lifeline. The server never writes it, so the read ends only when every write end is
//! closed: when the server is gone. The watcher then kills every process it may signal in
//! the sandbox's PID namespace (the command and all it started; not the namespace's first
//! process, which the kernel spares, and which exits when the command does) and exits.
//! It runs under the same Landlock and seccomp rules as the command, and dies with it (a
//! parent-death signal): the namespace's first process waits for every process in it.

use std::io;

use super::HelperError;

/// Forks the watcher; in the helper (the future command) the lifeline is closed.
pub(super) fn watch(fd: i32) -> Result<(), HelperError> {
    let command = std::process::id();
    // SAFETY: the helper is single-threaded, so the child may run any code after fork.
    let pid = unsafe { libc::fork() };
    match pid {
        -1 => Err(HelperError::Lifeline(io::Error::last_os_error())),
        0 => {
            // The watcher goes with the command: the sandbox's first process waits for
            // every process in it, and would wait for a watcher forever.
            // SAFETY: prctl and getppid take plain values.
            let bound = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) } == 0;
            // SAFETY: as above.
            if !bound || u32::try_from(unsafe { libc::getppid() }).ok() != Some(command) {
                std::process::exit(0);
            }
            wait_for_the_end(fd);
            // SAFETY: kill(-1) signals every process this one may signal in its PID
            // namespace (never the namespace's first process, nor itself).
            unsafe { libc::kill(-1, libc::SIGKILL) };
            std::process::exit(0);
        }
        _ => {
            // SAFETY: `fd` is the lifeline descriptor the server handed down; the command
            // has no use for it.
            unsafe { libc::close(fd) };
            Ok(())
        }
    }
}

/// Blocks until the lifeline reads end of file (or fails: then there is nothing left to
/// watch either).
fn wait_for_the_end(fd: i32) {
    let mut byte = [0u8; 1];
    loop {
        // SAFETY: reading into a live one-byte buffer.
        let read = unsafe { libc::read(fd, byte.as_mut_ptr().cast(), 1) };
        if read > 0 {
            continue;
        }
        if read < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        return;
    }
}
