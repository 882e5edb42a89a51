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
//! - with the network off, `socket(AF_INET)` and `socket(AF_INET6)`;
//! - on x86_64, every x32-ABI call (the same numbers with bit 30 set would slip past).
//!
//! A foreign architecture (32-bit calls through `int 0x80`) kills the process.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch, sock_filter,
};

use super::HelperError;

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
pub(super) fn apply(network: bool) -> Result<(), HelperError> {
    for program in build(network)? {
        seccompiler::apply_filter(&program).map_err(|e| HelperError::Seccomp(e.to_string()))?;
    }
    Ok(())
}

/// The BPF programs for this architecture, in installation order.
pub fn build(network: bool) -> Result<Vec<BpfProgram>, HelperError> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| HelperError::Seccomp(e.to_string()))?;
    let mut programs = vec![
        compile(deny_rules(network)?, libc::EPERM, arch)?,
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

fn deny_rules(network: bool) -> Result<BTreeMap<i64, Vec<SeccompRule>>, HelperError> {
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
    if !network {
        let socket_rules = [libc::AF_INET, libc::AF_INET6]
            .iter()
            .map(|&family| {
                rule(
                    0,
                    SeccompCmpArgLen::Dword,
                    SeccompCmpOp::Eq,
                    u64::from(family.unsigned_abs()),
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        rules.insert(libc::SYS_socket, socket_rules);
    }
    Ok(rules)
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
    fn filters_compile_with_and_without_network() {
        let without = build(false).expect("filters without network");
        let with = build(true).expect("filters with network");
        assert_eq!(without.len(), with.len());
        // The socket rules make the no-network filter longer.
        assert!(without[0].len() > with[0].len());
    }

    #[test]
    fn every_listed_syscall_is_distinct() {
        let mut numbers: Vec<_> = DENIED_SYSCALLS.iter().map(|&(_, nr)| nr).collect();
        numbers.sort_unstable();
        numbers.dedup();
        assert_eq!(numbers.len(), DENIED_SYSCALLS.len());
    }
}
