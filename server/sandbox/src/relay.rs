//! The egress relay: the only listener inside a networked sandbox's own network
//! namespace, on `127.0.0.1:PORT`, where `HTTP_PROXY` points. It copies each connection,
//! byte for byte, to the session's egress proxy over the Unix socket bound into the
//! sandbox, and decides nothing: the proxy, in the server, does.
//!
//! The helper binds the port first (so the command can never find it free or unready),
//! then forks the relay off twice, so that it is a child of the sandbox's init rather than
//! an unknown child of the command, and dies with the namespace when the command ends.
//! The relay restricts itself before serving: no file access, no new TCP socket, bind or
//! connect (Landlock and seccomp), stdio on `/dev/null`.

use std::io;
use std::net::{Ipv4Addr, TcpListener};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::seccomp::{self, Sockets};
use super::{HelperError, LandlockRequirement, landlock};

/// Where the relay listens, and the proxy socket it forwards to (a path inside the
/// sandbox).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Relay {
    pub port: u16,
    pub socket: PathBuf,
}

/// Starts the relay; returns in the helper once its port listens.
pub(super) fn start(relay: &Relay, requirement: LandlockRequirement) -> Result<(), HelperError> {
    let failed = |what: &str, e: io::Error| HelperError::Relay(format!("{what}: {e}"));
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, relay.port))
        .map_err(|e| failed(&format!("listening on 127.0.0.1:{}", relay.port), e))?;
    // SAFETY: the helper is single-threaded here, so the child may run Rust code freely.
    let middle = unsafe { libc::fork() };
    if middle < 0 {
        return Err(failed("starting the relay", io::Error::last_os_error()));
    }
    if middle == 0 {
        // SAFETY: still a single-threaded process.
        let relay_pid = unsafe { libc::fork() };
        if relay_pid == 0 {
            let code = match run(listener, &relay.socket, requirement) {
                Ok(()) => 0,
                Err(_) => 1,
            };
            // SAFETY: ends this process without running the helper's exit path twice.
            unsafe { libc::_exit(code) };
        }
        // SAFETY: as above; the relay, orphaned, is adopted by the sandbox's init.
        unsafe { libc::_exit(if relay_pid < 0 { 1 } else { 0 }) };
    }
    let mut status = 0;
    // SAFETY: waits for the child forked above.
    let waited = unsafe { libc::waitpid(middle, &mut status, 0) };
    if waited != middle || !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        return Err(HelperError::Relay(
            "the relay could not be started".to_owned(),
        ));
    }
    drop(listener);
    Ok(())
}

/// The relay process: restrict, then serve until the sandbox ends.
fn run(
    listener: TcpListener,
    socket: &Path,
    requirement: LandlockRequirement,
) -> Result<(), HelperError> {
    detach_stdio();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| HelperError::Relay(e.to_string()))?;
    landlock::apply_relay(requirement)?;
    seccomp::apply(Sockets::NoInet)?;
    listener
        .set_nonblocking(true)
        .map_err(|e| HelperError::Relay(e.to_string()))?;
    runtime.block_on(serve(listener, socket.to_path_buf()))
}

async fn serve(listener: TcpListener, socket: PathBuf) -> Result<(), HelperError> {
    let listener = tokio::net::TcpListener::from_std(listener)
        .map_err(|e| HelperError::Relay(e.to_string()))?;
    loop {
        let mut inside = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                // Out of descriptors: let the moment pass instead of spinning.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let socket = socket.clone();
        tokio::spawn(async move {
            let _ = inside.set_nodelay(true);
            if let Ok(mut proxy) = tokio::net::UnixStream::connect(&socket).await {
                let _ = tokio::io::copy_bidirectional(&mut inside, &mut proxy).await;
            }
        });
    }
}

/// Points stdin, stdout and stderr at `/dev/null`: the relay must not hold the command's
/// output pipes open.
fn detach_stdio() {
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        for fd in 0..=2 {
            // SAFETY: dup2 onto the standard descriptors, from a descriptor this owns.
            unsafe { libc::dup2(null.as_raw_fd(), fd) };
        }
    }
}
