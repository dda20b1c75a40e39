//! The system-call filter every parse worker runs under, so a parser taken over by a crafted file cannot
//! reach the network or another process.
//!
//! On Linux the supervisor installs a seccomp-bpf filter ([`seccompiler`], the rust-vmm crate Firecracker
//! uses) in the child between `fork` and `exec`, so it holds for any worker program, from its first
//! instruction, and for everything it starts. Refused with `EACCES`:
//!
//! - `socket` and `socketpair` of every family: no TCP/UDP, no DNS, no Unix socket (the D-Bus session bus
//!   that reaches the OS keyring is one), no netlink;
//! - `io_uring_setup`, `io_uring_enter`, `io_uring_register`: io_uring can open sockets without the
//!   `socket` system call;
//! - `ptrace`, `process_vm_readv`, `process_vm_writev`: reading another process's memory (the
//!   supervisor holds API keys).
//!
//! Why seccomp and not a network namespace: a namespace needs unprivileged user namespaces, which
//! Debian and Ubuntu restrict (Ubuntu 24.04 through AppArmor) and container runtimes usually forbid, while
//! seccomp works on every Linux since 3.5, inside containers too, and needs no privilege
//! (`PR_SET_NO_NEW_PRIVS` is set first, as the kernel requires). Files are not filtered: a worker can
//! still read what the person can read (a filesystem sandbox, e.g. Landlock, is not built yet).

#[cfg(target_os = "linux")]
use std::sync::OnceLock;

/// The system calls refused, by name (for messages and docs) and number.
#[cfg(target_os = "linux")]
pub(crate) const REFUSED: &[(&str, i64)] = &[
    ("socket", libc::SYS_socket),
    ("socketpair", libc::SYS_socketpair),
    ("io_uring_setup", libc::SYS_io_uring_setup),
    ("io_uring_enter", libc::SYS_io_uring_enter),
    ("io_uring_register", libc::SYS_io_uring_register),
    ("ptrace", libc::SYS_ptrace),
    ("process_vm_readv", libc::SYS_process_vm_readv),
    ("process_vm_writev", libc::SYS_process_vm_writev),
];

/// The compiled filter, built once per process. Errors: this CPU architecture is not one seccompiler
/// knows (x86_64, aarch64, riscv64), named in the message.
#[cfg(target_os = "linux")]
pub(crate) fn worker_filter() -> Result<&'static seccompiler::BpfProgram, String> {
    static FILTER: OnceLock<Result<seccompiler::BpfProgram, String>> = OnceLock::new();
    FILTER
        .get_or_init(|| {
            let arch: seccompiler::TargetArch = std::env::consts::ARCH
                .try_into()
                .map_err(|e| format!("no system-call filter for {}: {e}", std::env::consts::ARCH))?;
            let rules = REFUSED.iter().map(|(_, number)| (*number, Vec::new())).collect();
            let filter = seccompiler::SeccompFilter::new(
                rules,
                seccompiler::SeccompAction::Allow,
                seccompiler::SeccompAction::Errno(libc::EACCES as u32),
                arch,
            )
            .map_err(|e| format!("system-call filter: {e}"))?;
            seccompiler::BpfProgram::try_from(filter).map_err(|e| format!("system-call filter: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Installs `filter` on the calling thread (and what it executes). Runs between `fork` and `exec`, so it
/// only makes system calls and allocates nothing; the error is the OS error number alone (that is all a
/// `pre_exec` hook can hand back to the parent).
#[cfg(target_os = "linux")]
pub(crate) fn install(filter: &seccompiler::BpfProgram) -> std::io::Result<()> {
    seccompiler::apply_filter(filter).map_err(|_| std::io::Error::last_os_error())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #[test]
    fn the_filter_compiles_for_this_machine() {
        let filter = super::worker_filter().expect("a filter for this architecture");
        assert!(filter.len() > super::REFUSED.len(), "one jump per refused call at least");
    }
}
