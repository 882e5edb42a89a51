//! The server's side of the sandbox, where it needs what neither `std` nor `rustix` offers
//! safely: the set-up of a child between `fork` and `exec`, the kernel's Landlock and
//! seccomp queries, and the machine's interface addresses. Each is a safe function here,
//! so the unsafe code of the project stays in this crate.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;

use crate::RlimitValues;
use crate::rlimits;

/// What a sandboxed command's process does to itself after `fork`, before `exec`.
#[derive(Clone, Debug, Default)]
pub struct ChildSetup {
    /// Open `cgroup.procs` (v2) or `tasks` (v1) files the child joins while it is still
    /// the only process of its tree, with the server's rights. They must stay open until
    /// the spawn has forked.
    pub cgroup_files: Vec<RawFd>,
    /// rlimits set in the child itself (`danger_full_access`, which has no helper).
    pub rlimits: Option<RlimitValues>,
    /// A descriptor the command inherits (its close-on-exec flag is cleared).
    pub inherit_fd: Option<RawFd>,
    /// The server's pid: the child refuses to start once its parent is another process.
    pub server_pid: u32,
}

/// Arranges for `command`'s child to run `setup` between `fork` and `exec`: join its
/// cgroups, take umask 022 (the server's own is 077), set rlimits, keep `inherit_fd` open,
/// and die with the server (`PR_SET_PDEATHSIG`, then a check that the server is still its
/// parent, in case it was already gone).
pub fn prepare_child(command: &mut std::process::Command, setup: ChildSetup) {
    let ChildSetup {
        cgroup_files,
        rlimits: limits,
        inherit_fd,
        server_pid,
    } = setup;
    // SAFETY: the closure runs between fork and exec, so it only makes raw system calls
    // (write, umask, setrlimit, fcntl, prctl, getppid) on values moved in beforehand
    // (reading the vector does not allocate), and neither allocates nor takes locks.
    unsafe {
        command.pre_exec(move || {
            // "0" is the writer itself (its only thread, for v1's `tasks`).
            for &fd in &cgroup_files {
                if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                    return Err(io::Error::last_os_error());
                }
            }
            libc::umask(0o022);
            if let Some(limits) = &limits {
                rlimits::set(limits).map_err(|(_, e)| e)?;
            }
            if let Some(fd) = inherit_fd
                && libc::fcntl(fd, libc::F_SETFD, 0) != 0
            {
                return Err(io::Error::last_os_error());
            }
            // The signal is tied to the thread that forks: spawns happen on the server's
            // worker threads, which live as long as the server.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            if u32::try_from(libc::getppid()).ok() != Some(server_pid) {
                return Err(io::Error::other(
                    "the server exited before the command started",
                ));
            }
            Ok(())
        });
    }
}

/// `LANDLOCK_CREATE_RULESET_VERSION`: ask for the ABI version instead of creating a ruleset.
const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
/// `SECCOMP_GET_ACTION_AVAIL` and `SECCOMP_RET_ERRNO` from `<linux/seccomp.h>`.
const SECCOMP_GET_ACTION_AVAIL: libc::c_uint = 2;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;

/// The Landlock ABI version the kernel implements, 0 when it has none or it is disabled.
pub fn landlock_abi() -> u32 {
    // SAFETY: with a null attribute pointer, size 0 and the VERSION flag the kernel only
    // returns a number; nothing is read or written through the pointer.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(version).unwrap_or(0)
}

/// Whether seccomp filters returning an errno can be installed.
pub fn seccomp_filters_available() -> bool {
    let action = SECCOMP_RET_ERRNO;
    // SAFETY: the kernel reads one u32 through the pointer, which points at a live local.
    let result = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            SECCOMP_GET_ACTION_AVAIL,
            0 as libc::c_uint,
            &action as *const u32,
        )
    };
    result == 0
}

/// Every IPv4 and IPv6 address of this machine's interfaces, as the kernel lists them
/// (empty if they cannot be listed).
pub fn interface_addresses() -> Vec<IpAddr> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list` with a linked list it allocates, or fails.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return Vec::new();
    }
    let mut found = Vec::new();
    let mut cursor = list;
    while !cursor.is_null() {
        // SAFETY: `cursor` is a node of the list getifaddrs returned, freed only below.
        let entry = unsafe { &*cursor };
        if !entry.ifa_addr.is_null() {
            // SAFETY: `ifa_addr` points at a socket address whose family says its layout.
            let family = i32::from(unsafe { (*entry.ifa_addr).sa_family });
            if family == libc::AF_INET {
                // SAFETY: an AF_INET address is a sockaddr_in.
                let sin = unsafe { &*entry.ifa_addr.cast::<libc::sockaddr_in>() };
                found.push(IpAddr::V4(Ipv4Addr::from(u32::from_be(
                    sin.sin_addr.s_addr,
                ))));
            } else if family == libc::AF_INET6 {
                // SAFETY: an AF_INET6 address is a sockaddr_in6.
                let sin6 = unsafe { &*entry.ifa_addr.cast::<libc::sockaddr_in6>() };
                found.push(IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)));
            }
        }
        cursor = entry.ifa_next;
    }
    // SAFETY: `list` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(list) };
    found
}

/// A pidfd of `pid`, registered with the async reactor: readable once the process has
/// exited.
pub fn pidfd(pid: i32) -> io::Result<tokio::io::unix::AsyncFd<OwnedFd>> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = i32::try_from(fd).map_err(io::Error::other)?;
    // SAFETY: the descriptor was just returned by the kernel and is owned by nobody else.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: the AsyncFd owns the descriptor, so it stays open and the same for its
    // whole lifetime.
    unsafe { tokio::io::unix::AsyncFd::register(owned) }.map_err(|e| e.into_parts().1)
}

/// Gives the calling process a mount namespace of its own, its mounts slaves of the
/// host's: what the host mounts later still reaches it, and nothing it mounts reaches the
/// host. `odysseyd` mounts its overlay workspaces there, so they vanish with the process
/// (a server killed with `kill -9` leaves no mount on the host, and its home can be
/// removed), and the sandboxed processes it starts inherit them. Fails without
/// `CAP_SYS_ADMIN` (`EPERM`), where the server cannot mount overlays anyway.
///
/// Call it while the process runs one thread (before the async runtime starts): a mount
/// namespace is a thread's, and a thread started earlier would stay in the host's.
pub fn enter_own_mount_namespace() -> io::Result<()> {
    // SAFETY: the caller runs this before starting any thread (see above), so the
    // namespace and the file-system attributes `unshare` gives the thread are the whole
    // process's, as the rest of the process expects.
    unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWNS) }?;
    rustix::mount::mount_change(
        "/",
        rustix::mount::MountPropagationFlags::DOWNSTREAM
            | rustix::mount::MountPropagationFlags::REC,
    )?;
    Ok(())
}
