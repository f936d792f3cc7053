//! The seccomp filters every job process installs last, just before its code runs.
//!
//! A deny list rather than an allow list: Python and the scientific stack use a wide and
//! changing set of syscalls, and a missed one shows up as a baffling test failure. What is
//! denied is what an escape or a denial of service needs and no benchmark task does: tracing
//! other processes, mounting, new namespaces, loading kernel code, io_uring, keyrings, and
//! clock or host changes. `clone3` answers ENOSYS so that libc falls back to `clone`, whose
//! flags a classic BPF filter can inspect (the same trick as container runtimes).

use std::collections::BTreeMap;

use seccompiler::{
    sock_filter, BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition,
    SeccompFilter, SeccompRule, TargetArch,
};

const DENIED: &[i64] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_pidfd_getfd,
    libc::SYS_kcmp,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_mount_setattr,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_acct,
    libc::SYS_syslog,
    libc::SYS_quotactl,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_fanotify_init,
    libc::SYS_sethostname,
    libc::SYS_setdomainname,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_clock_adjtime,
    libc::SYS_adjtimex,
    libc::SYS_vhangup,
    libc::SYS_process_madvise,
];

/// `clone` flags that would create namespaces.
const NAMESPACE_FLAGS: &[u64] = &[
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
    libc::CLONE_NEWCGROUP as u64,
];

fn target_arch() -> Option<TargetArch> {
    match std::env::consts::ARCH {
        "x86_64" => Some(TargetArch::x86_64),
        "aarch64" => Some(TargetArch::aarch64),
        _ => None,
    }
}

/// The filters as hex strings of `struct sock_filter` arrays, in install order; empty on an
/// architecture seccompiler does not know (the isolation report then shows no seccomp).
pub(crate) fn programs() -> Vec<String> {
    let Some(arch) = target_arch() else {
        return Vec::new();
    };
    let mut denied: BTreeMap<i64, Vec<SeccompRule>> =
        DENIED.iter().map(|&nr| (nr, Vec::new())).collect();
    let clone_rules = NAMESPACE_FLAGS
        .iter()
        .map(|&flag| {
            let cond = SeccompCondition::new(
                0,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(flag),
                flag,
            )
            .expect("valid condition");
            SeccompRule::new(vec![cond]).expect("valid rule")
        })
        .collect();
    denied.insert(libc::SYS_clone, clone_rules);
    let eperm = SeccompFilter::new(
        denied,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    );
    let no_clone3 = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    );
    let mut programs: Vec<String> = [eperm, no_clone3]
        .into_iter()
        .map(|filter| {
            let program: BpfProgram = filter
                .and_then(BpfProgram::try_from)
                .expect("the built-in seccomp filters compile");
            encode(&program)
        })
        .collect();
    if arch == TargetArch::x86_64 {
        programs.push(encode(&deny_x32()));
    }
    programs
}

/// On x86_64, x32-ABI calls carry the same audit architecture as native ones but with bit 30
/// set in the syscall number, so no rule above would match them: refuse them all.
fn deny_x32() -> BpfProgram {
    const LD_W_ABS: u16 = 0x20;
    const JEQ_K: u16 = 0x15;
    const JGE_K: u16 = 0x35;
    const RET_K: u16 = 0x06;
    const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    const RET_ALLOW: u32 = 0x7fff_0000;
    const RET_ERRNO: u32 = 0x0005_0000;
    let insn = |code, jt, jf, k| sock_filter { code, jt, jf, k };
    vec![
        insn(LD_W_ABS, 0, 0, 4), // seccomp_data.arch
        insn(JEQ_K, 0, 3, AUDIT_ARCH_X86_64),
        insn(LD_W_ABS, 0, 0, 0), // seccomp_data.nr
        insn(JGE_K, 0, 1, X32_SYSCALL_BIT),
        insn(RET_K, 0, 0, RET_ERRNO | libc::EPERM as u32),
        insn(RET_K, 0, 0, RET_ALLOW),
    ]
}

fn encode(program: &BpfProgram) -> String {
    let mut hex = String::with_capacity(program.len() * 16);
    for insn in program {
        let mut bytes = Vec::with_capacity(8);
        bytes.extend_from_slice(&insn.code.to_ne_bytes());
        bytes.push(insn.jt);
        bytes.push(insn.jf);
        bytes.extend_from_slice(&insn.k.to_ne_bytes());
        for b in bytes {
            hex.push_str(&format!("{b:02x}"));
        }
    }
    hex
}

#[cfg(test)]
mod tests {
    #[test]
    fn programs_compile_to_whole_instructions() {
        let programs = super::programs();
        if let Some(arch) = super::target_arch() {
            let expected = if arch == seccompiler::TargetArch::x86_64 {
                3
            } else {
                2
            };
            assert_eq!(programs.len(), expected);
            for p in programs {
                assert!(!p.is_empty() && p.len() % 16 == 0, "{} hex digits", p.len());
            }
        }
    }
}
