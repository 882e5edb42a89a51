//! The seccomp filters the command runs under.
//!
//! Denied calls fail with `EPERM` rather than killing the process: a program probing for a
//! feature gets an ordinary error and can carry on without it. What is denied:
//!
//! - kernel interfaces no command needs, each a classic escape or attack surface:
//!   debugging other processes, (un)mounting, namespaces, keyrings, BPF, modules, kexec,
//!   reboot, swap, perf, userfaultfd, file handles, io_uring (which could issue the other
//!   calls, `socket` included, without passing through this filter);
//! - `clone` with any namespace flag (the flag form of `unshare`), and `clone3` with
//!   `ENOSYS`, since its flags sit in memory a filter cannot read; libc then falls back to
//!   `clone`;
//! - with the network off, `socket(AF_INET)` and `socket(AF_INET6)`; with the network
//!   through the egress relay, every such socket but an IPv4 stream (what reaching the
//!   relay takes);
//! - on x86_64, every x32-ABI call (the same numbers with bit 30 set would slip past).
//!
//! A foreign architecture (32-bit calls through `int 0x80`) kills the process.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch, sock_filter,
};

use super::{HelperArgs, HelperError};

/// Which internet sockets a process may create.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sockets {
    /// Any (the helper run without a relay and with the network on).
    Any,
    /// IPv4 stream sockets only: a networked command reaching its relay.
    InetStream,
    /// None (`AF_INET` and `AF_INET6` refused).
    NoInet,
}

impl Sockets {
    pub fn of(args: &HelperArgs) -> Self {
        match (args.network, &args.relay) {
            (false, _) => Self::NoInet,
            (true, Some(_)) => Self::InetStream,
            (true, None) => Self::Any,
        }
    }
}

/// `SOCK_TYPE_MASK`: the socket type without `SOCK_NONBLOCK`/`SOCK_CLOEXEC`.
const SOCK_TYPE_MASK: u64 = 0xf;

/// Calls answered with `EPERM` whatever their arguments. (Syscall numbers are `c_long`,
/// which is `i64` on every architecture seccompiler targets.)
pub const DENIED_SYSCALLS: &[(&str, i64)] = &[
    ("ptrace", libc::SYS_ptrace),
    ("process_vm_readv", libc::SYS_process_vm_readv),
    ("process_vm_writev", libc::SYS_process_vm_writev),
    ("mount", libc::SYS_mount),
    ("umount2", libc::SYS_umount2),
    ("fsopen", libc::SYS_fsopen),
    ("fsconfig", libc::SYS_fsconfig),
    ("fsmount", libc::SYS_fsmount),
    ("fspick", libc::SYS_fspick),
    ("move_mount", libc::SYS_move_mount),
    ("open_tree", libc::SYS_open_tree),
    ("mount_setattr", libc::SYS_mount_setattr),
    ("unshare", libc::SYS_unshare),
    ("setns", libc::SYS_setns),
    ("pivot_root", libc::SYS_pivot_root),
    ("chroot", libc::SYS_chroot),
    ("bpf", libc::SYS_bpf),
    ("keyctl", libc::SYS_keyctl),
    ("add_key", libc::SYS_add_key),
    ("request_key", libc::SYS_request_key),
    ("kexec_load", libc::SYS_kexec_load),
    ("kexec_file_load", libc::SYS_kexec_file_load),
    ("init_module", libc::SYS_init_module),
    ("finit_module", libc::SYS_finit_module),
    ("delete_module", libc::SYS_delete_module),
    ("reboot", libc::SYS_reboot),
    ("swapon", libc::SYS_swapon),
    ("swapoff", libc::SYS_swapoff),
    ("perf_event_open", libc::SYS_perf_event_open),
    ("userfaultfd", libc::SYS_userfaultfd),
    ("open_by_handle_at", libc::SYS_open_by_handle_at),
    ("io_uring_setup", libc::SYS_io_uring_setup),
    ("io_uring_enter", libc::SYS_io_uring_enter),
    ("io_uring_register", libc::SYS_io_uring_register),
];

/// The `clone` flags that create namespaces.
const NAMESPACE_FLAGS: &[u64] = &[
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWCGROUP as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
];

/// Builds and installs the filters. Needs `no_new_privs`, which Landlock already set.
pub(super) fn apply(sockets: Sockets) -> Result<(), HelperError> {
    for program in build(sockets)? {
        seccompiler::apply_filter(&program).map_err(|e| HelperError::Seccomp(e.to_string()))?;
    }
    Ok(())
}

/// The BPF programs for this architecture, in installation order.
pub fn build(sockets: Sockets) -> Result<Vec<BpfProgram>, HelperError> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| HelperError::Seccomp(e.to_string()))?;
    let mut programs = vec![
        compile(deny_rules(sockets)?, libc::EPERM, arch)?,
        compile(
            BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
            libc::ENOSYS,
            arch,
        )?,
    ];
    if arch == TargetArch::x86_64 {
        programs.push(deny_x32());
    }
    Ok(programs)
}

fn deny_rules(sockets: Sockets) -> Result<BTreeMap<i64, Vec<SeccompRule>>, HelperError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = DENIED_SYSCALLS
        .iter()
        .map(|&(_, nr)| (nr, Vec::new()))
        .collect();
    let clone_rules = NAMESPACE_FLAGS
        .iter()
        .map(|&flag| {
            rule(
                0,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(flag),
                flag,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_clone, clone_rules);
    let family = |family: i32| {
        SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Eq,
            u64::from(family.unsigned_abs()),
        )
        .map_err(|e| HelperError::Seccomp(e.to_string()))
    };
    let socket_rules = match sockets {
        Sockets::Any => Vec::new(),
        Sockets::NoInet => vec![
            conditions(vec![family(libc::AF_INET)?])?,
            conditions(vec![family(libc::AF_INET6)?])?,
        ],
        Sockets::InetStream => {
            let mut list = vec![conditions(vec![family(libc::AF_INET6)?])?];
            let stream = u64::from(libc::SOCK_STREAM.unsigned_abs());
            for kind in (0..=SOCK_TYPE_MASK).filter(|&k| k != stream) {
                let kind = SeccompCondition::new(
                    1,
                    SeccompCmpArgLen::Dword,
                    SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK),
                    kind,
                )
                .map_err(|e| HelperError::Seccomp(e.to_string()))?;
                list.push(conditions(vec![family(libc::AF_INET)?, kind])?);
            }
            list
        }
    };
    if !socket_rules.is_empty() {
        rules.insert(libc::SYS_socket, socket_rules);
    }
    Ok(rules)
}

fn conditions(list: Vec<SeccompCondition>) -> Result<SeccompRule, HelperError> {
    SeccompRule::new(list).map_err(|e| HelperError::Seccomp(e.to_string()))
}

fn rule(
    arg: u8,
    len: SeccompCmpArgLen,
    op: SeccompCmpOp,
    value: u64,
) -> Result<SeccompRule, HelperError> {
    let condition = SeccompCondition::new(arg, len, op, value)
        .map_err(|e| HelperError::Seccomp(e.to_string()))?;
    SeccompRule::new(vec![condition]).map_err(|e| HelperError::Seccomp(e.to_string()))
}

fn compile(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    errno: i32,
    arch: TargetArch,
) -> Result<BpfProgram, HelperError> {
    let errno = u32::try_from(errno).map_err(|e| HelperError::Seccomp(e.to_string()))?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno),
        arch,
    )
    .map_err(|e| HelperError::Seccomp(e.to_string()))?;
    BpfProgram::try_from(filter).map_err(|e| HelperError::Seccomp(e.to_string()))
}

/// `EPERM` for every x32 call: same architecture tag as x86_64, numbers with bit 30 set.
fn deny_x32() -> BpfProgram {
    const LD_W_ABS: u16 = 0x20;
    const JEQ_K: u16 = 0x15;
    const JGE_K: u16 = 0x35;
    const RET_K: u16 = 0x06;
    const ARCH_OFFSET: u32 = 4;
    const NR_OFFSET: u32 = 0;
    const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    const RET_ERRNO: u32 = 0x0005_0000;
    const RET_ALLOW: u32 = 0x7fff_0000;
    let op = |code, jt, jf, k| sock_filter { code, jt, jf, k };
    vec![
        op(LD_W_ABS, 0, 0, ARCH_OFFSET),
        // Another architecture: not this filter's business (the first filter kills it).
        op(JEQ_K, 0, 3, AUDIT_ARCH_X86_64),
        op(LD_W_ABS, 0, 0, NR_OFFSET),
        op(JGE_K, 0, 1, X32_SYSCALL_BIT),
        op(RET_K, 0, 0, RET_ERRNO | libc::EPERM.unsigned_abs()),
        op(RET_K, 0, 0, RET_ALLOW),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_compile_for_every_socket_policy() {
        let without = build(Sockets::NoInet).expect("filters without network");
        let relayed = build(Sockets::InetStream).expect("filters through the relay");
        let with = build(Sockets::Any).expect("filters with network");
        assert_eq!(without.len(), with.len());
        assert_eq!(relayed.len(), with.len());
        // The socket rules make the restricted filters longer.
        assert!(without[0].len() > with[0].len());
        assert!(relayed[0].len() > without[0].len());
    }

    #[test]
    fn every_listed_syscall_is_distinct() {
        let mut numbers: Vec<_> = DENIED_SYSCALLS.iter().map(|&(_, nr)| nr).collect();
        numbers.sort_unstable();
        numbers.dedup();
        assert_eq!(numbers.len(), DENIED_SYSCALLS.len());
    }
}
