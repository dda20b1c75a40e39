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
//! - `ptrace`, `process_vm_readv`, `process_vm_writev`, `pidfd_getfd`, `process_madvise`: reading or
//!   changing another process's memory or taking its file descriptors (the supervisor holds API keys);
//! - `add_key`, `request_key`, `keyctl`: the kernel's key store;
//! - `bpf`, `perf_event_open`, `userfaultfd`: kernel attack surface no parser needs;
//! - on x86_64 each of these under its x32 number too (the `0x4000_0000` bit, and x32's own numbers for
//!   `ptrace` and `process_vm_*`), which a filter matching numbers alone would let through.
//!
//! Why seccomp and not a network namespace: a namespace needs unprivileged user namespaces, which
//! Debian and Ubuntu restrict (Ubuntu 24.04 through AppArmor) and container runtimes usually forbid, while
//! seccomp works on every Linux since 3.5, inside containers too, and needs no privilege
//! (`PR_SET_NO_NEW_PRIVS` is set first, as the kernel requires).
//!
//! Files: where the kernel has Landlock (Linux 5.13 and later, when enabled), the same hook first
//! restricts the child with a Landlock ruleset ([`FileSandbox`], built by the supervisor through the
//! [`landlock`] crate before any fork): it writes nowhere but a private temporary folder (so a taken-over
//! parser cannot change `~/.config/quarry/settings.toml`, the ONNX Runtime library the app loads, or an
//! autostart entry); it reads only the system folders, the model files, the worker program and the input
//! files of its batch; from Landlock ABI 6 it can send no signal to a process outside its own sandbox and
//! reach no abstract Unix socket outside it. Landlock also denies a sandboxed process ptrace-style access
//! to processes outside its sandbox, so `/proc/<supervisor>/environ` and `/proc/<supervisor>/mem` cannot
//! be opened. A kernel without Landlock leaves files unfiltered; [`landlock_status`] says which.

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
    ("pidfd_getfd", libc::SYS_pidfd_getfd),
    ("process_madvise", libc::SYS_process_madvise),
    ("add_key", libc::SYS_add_key),
    ("request_key", libc::SYS_request_key),
    ("keyctl", libc::SYS_keyctl),
    ("bpf", libc::SYS_bpf),
    ("perf_event_open", libc::SYS_perf_event_open),
    ("userfaultfd", libc::SYS_userfaultfd),
];

/// The x32 ABI's bit in a system-call number (x86_64 only): `socket` called through x32 arrives as
/// `0x4000_0000 | 41`, with the same audit architecture as x86_64.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
const X32_SYSCALL_BIT: i64 = 0x4000_0000;

/// x32's own numbers for calls whose x32 entry differs from x86_64's (`ptrace` 521,
/// `process_vm_readv` 539, `process_vm_writev` 540; arch/x86/entry/syscalls/syscall_64.tbl).
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
const X32_SPECIFIC: &[i64] = &[521, 539, 540];

/// Every number the filter refuses on this architecture: [`REFUSED`], and on x86_64 their x32 forms.
#[cfg(target_os = "linux")]
pub(crate) fn refused_numbers() -> Vec<i64> {
    let mut numbers: Vec<i64> = REFUSED.iter().map(|(_, number)| *number).collect();
    #[cfg(target_arch = "x86_64")]
    {
        let x32: Vec<i64> = numbers.iter().chain(X32_SPECIFIC).map(|n| n | X32_SYSCALL_BIT).collect();
        numbers.extend(x32);
    }
    numbers
}

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
            let rules = refused_numbers().into_iter().map(|number| (number, Vec::new())).collect();
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

/// The Landlock ruleset a batch's parse workers run under, and the one folder they may write in.
///
/// Built by the supervisor (where allocating and opening files is allowed) before any worker starts;
/// each worker is restricted with it by [`restrict_to`] between `fork` and `exec`. Access rights are those
/// of Landlock ABI 6 asked best-effort ([`landlock::CompatLevel::BestEffort`]): an older kernel enforces
/// the part it knows, a kernel without Landlock nothing ([`landlock_status`] says so).
pub(crate) struct FileSandbox {
    /// The ruleset's file descriptor (close-on-exec); `None` when this kernel has no Landlock.
    #[cfg(target_os = "linux")]
    ruleset: Option<std::os::fd::OwnedFd>,
    /// What a worker may read besides its own `/proc/<pid>`, for the second ruleset each worker builds
    /// for itself between fork and exec ([`restrict_to`]): every top-level folder but `/proc`, and the
    /// system-wide files of `/proc` (NUL-terminated paths, whether each is a folder).
    #[cfg(target_os = "linux")]
    proc_guard: Vec<(std::ffi::CString, bool)>,
    /// The workers' `TMPDIR`: readable and writable by them, removed with the sandbox.
    scratch: tempfile::TempDir,
}

/// Folders every worker may read (and execute from): the system's programs, libraries, configuration,
/// locale data, and `/proc` and `/sys` for what ONNX Runtime and the allocator read of this process and
/// the CPU. Of `/proc`, a second ruleset leaves a worker only its own `/proc/<pid>` and the system-wide
/// files ([`PROC_SYSTEM_FILES`]): Landlock's ptrace rule refuses `/proc/<other>/mem` but not
/// `/proc/<other>/environ` (measured on Linux 6.18).
/// The files and folders of `/proc` that describe the machine, not a process, which a worker may read.
pub(crate) const PROC_SYSTEM_FILES: &[&str] =
    &["/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/filesystems", "/proc/mounts", "/proc/sys"];

pub(crate) const SYSTEM_READ_FOLDERS: &[&str] =
    &["/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc", "/proc", "/sys", "/dev"];

impl FileSandbox {
    /// A sandbox whose workers read [`SYSTEM_READ_FOLDERS`], `program` (found on `PATH` when it has no
    /// folder), the folders of `LD_LIBRARY_PATH` and each of `reads` (files or folders; missing ones are
    /// skipped), and write only in a new private temporary folder.
    ///
    /// Errors: the temporary folder cannot be made, or the kernel refuses the ruleset (the message says
    /// which); a kernel without Landlock is not an error.
    pub(crate) fn new<'a>(
        program: &std::path::Path,
        reads: impl IntoIterator<Item = &'a std::path::Path>,
    ) -> Result<Self, String> {
        let scratch = tempfile::Builder::new()
            .prefix("quarry-parse-")
            .tempdir()
            .map_err(|e| format!("cannot make the parse workers' temporary folder: {e}"))?;
        #[cfg(target_os = "linux")]
        {
            let mut read_paths: Vec<std::path::PathBuf> = SYSTEM_READ_FOLDERS.iter().map(Into::into).collect();
            read_paths.push(program_path(program));
            if let Some(paths) = std::env::var_os("LD_LIBRARY_PATH") {
                read_paths.extend(std::env::split_paths(&paths));
            }
            read_paths.extend(reads.into_iter().map(std::path::Path::to_path_buf));
            let ruleset = landlock_ruleset(&read_paths, scratch.path())
                .map_err(|e| format!("cannot build the parse workers' file sandbox (Landlock): {e}"))?;
            Ok(FileSandbox { ruleset, proc_guard: proc_guard_paths(), scratch })
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (program, reads.into_iter().count());
            Ok(FileSandbox { scratch })
        }
    }

    /// The folder workers may write in; their `TMPDIR`.
    pub(crate) fn scratch(&self) -> &std::path::Path {
        self.scratch.path()
    }

    /// The ruleset's descriptor for [`restrict_to`]; `None` when nothing is enforced.
    #[cfg(target_os = "linux")]
    pub(crate) fn ruleset_fd(&self) -> Option<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        self.ruleset.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// The paths of the per-worker `/proc` guard (see [`restrict_to`]).
    #[cfg(target_os = "linux")]
    pub(crate) fn proc_guard(&self) -> &[(std::ffi::CString, bool)] {
        &self.proc_guard
    }
}

/// `program` as a path: itself when it names a folder, else the first match on `PATH`.
#[cfg(target_os = "linux")]
fn program_path(program: &std::path::Path) -> std::path::PathBuf {
    if program.components().count() > 1 {
        return program.to_path_buf();
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| program.to_path_buf())
}

/// Creates the ruleset: every file-system right of ABI 6 handled (so refused unless a rule grants it),
/// read and execute beneath `reads`, everything beneath `scratch`, reading and writing `/dev/null`;
/// signals and abstract Unix sockets scoped to the sandbox. `Ok(None)`: this kernel has no Landlock.
#[cfg(target_os = "linux")]
fn landlock_ruleset(
    reads: &[std::path::PathBuf],
    scratch: &std::path::Path,
) -> Result<Option<std::os::fd::OwnedFd>, landlock::RulesetError> {
    use landlock::{
        path_beneath_rules, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope, ABI,
    };
    let abi = ABI::V6;
    let created = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))?
        .handle_access(AccessNet::from_all(abi))?
        .scope(Scope::from_all(abi))?
        .create()?
        .add_rules(path_beneath_rules(reads, AccessFs::from_read(abi)))?
        .add_rules(path_beneath_rules([scratch], AccessFs::from_all(abi)))?
        .add_rules(path_beneath_rules(["/dev/null"], AccessFs::ReadFile | AccessFs::WriteFile))?;
    Ok(created.into())
}

/// Every top-level folder but `/proc`, and [`PROC_SYSTEM_FILES`], as NUL-terminated paths with whether
/// each is a folder (symbolic links such as `/bin` are followed).
#[cfg(target_os = "linux")]
fn proc_guard_paths() -> Vec<(std::ffi::CString, bool)> {
    let mut paths: Vec<(std::path::PathBuf, bool)> = std::fs::read_dir("/")
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p != std::path::Path::new("/proc"))
                .filter_map(|p| std::fs::metadata(&p).ok().map(|m| (p, m.is_dir())))
                .collect()
        })
        .unwrap_or_default();
    paths.extend(PROC_SYSTEM_FILES.iter().filter_map(|p| std::fs::metadata(p).ok().map(|m| (p.into(), m.is_dir()))));
    paths
        .into_iter()
        .filter_map(|(path, is_dir)| {
            use std::os::unix::ffi::OsStrExt;
            std::ffi::CString::new(path.as_os_str().as_bytes()).ok().map(|c| (c, is_dir))
        })
        .collect()
}

/// `struct landlock_ruleset_attr` of ABI 1 (the kernel takes a shorter attribute as the older ABI's).
#[cfg(target_os = "linux")]
#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
}

/// `struct landlock_path_beneath_attr` (packed, as the kernel declares it).
#[cfg(target_os = "linux")]
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

#[cfg(target_os = "linux")]
const ACCESS_READ_FILE: u64 = 1 << 2;
#[cfg(target_os = "linux")]
const ACCESS_READ_DIR: u64 = 1 << 3;
#[cfg(target_os = "linux")]
const RULE_PATH_BENEATH: libc::c_int = 1;

/// Restricts the calling process with the batch's ruleset `ruleset` (after `PR_SET_NO_NEW_PRIVS`, which
/// Landlock requires), then with a second, stacked ruleset of its own that handles reading only and
/// grants it beneath `proc_guard` and the process's own `/proc/self` (opened here, before `exec`, so it
/// is this worker's pid): the worker reads no other process's `/proc` entries. Runs between `fork` and
/// `exec`: system calls only over memory prepared before the fork, no allocation; the error is the OS
/// error number alone.
#[cfg(target_os = "linux")]
pub(crate) fn restrict_to(
    ruleset: std::os::fd::RawFd,
    proc_guard: &[(std::ffi::CString, bool)],
) -> std::io::Result<()> {
    let fail = || Err(std::io::Error::last_os_error());
    // SAFETY: plain system calls; the attributes live on this stack frame and the paths in memory the
    // fork copied; every descriptor opened here is closed before returning.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return fail();
        }
        let attr = RulesetAttr { handled_access_fs: ACCESS_READ_FILE | ACCESS_READ_DIR };
        let guard = libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const RulesetAttr,
            std::mem::size_of::<RulesetAttr>(),
            0u32,
        );
        if guard < 0 {
            return fail();
        }
        let guard = guard as libc::c_int;
        let own_proc = c"/proc/self".as_ptr();
        let paths = proc_guard.iter().map(|(path, is_dir)| (path.as_ptr(), *is_dir)).chain([(own_proc, true)]);
        for (path, is_dir) in paths {
            let fd = libc::open(path, libc::O_PATH | libc::O_CLOEXEC);
            if fd < 0 {
                continue; // gone since the list was made: nothing to grant
            }
            let access = if is_dir { ACCESS_READ_FILE | ACCESS_READ_DIR } else { ACCESS_READ_FILE };
            let beneath = PathBeneathAttr { allowed_access: access, parent_fd: fd };
            let added = libc::syscall(
                libc::SYS_landlock_add_rule,
                guard,
                RULE_PATH_BENEATH,
                &beneath as *const PathBeneathAttr,
                0u32,
            );
            libc::close(fd);
            if added != 0 {
                libc::close(guard);
                return fail();
            }
        }
        let restricted = libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) == 0
            && libc::syscall(libc::SYS_landlock_restrict_self, guard, 0u32) == 0;
        libc::close(guard);
        if !restricted {
            return fail();
        }
    }
    Ok(())
}

/// The Landlock ABI version this kernel offers, `None` when it has no Landlock (or it is turned off).
#[cfg(target_os = "linux")]
pub fn landlock_abi() -> Option<i64> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: asking the version passes no ruleset attribute: a null pointer and size 0, as documented.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    (version > 0).then_some(version)
}

/// One line on how parse workers are confined on this machine, for `quarry parse` and the status.
pub fn landlock_status() -> String {
    #[cfg(target_os = "linux")]
    {
        match landlock_abi() {
            None => "parse workers: no network (seccomp); files NOT sandboxed: this kernel has no Landlock \
                     (Linux 5.13+ with landlock among its LSMs), so a parser can read and write what you can"
                .to_string(),
            Some(abi) if abi < 6 => format!(
                "parse workers: no network (seccomp); Landlock ABI {abi}: they write only to a private temporary \
                 folder and read only system, model and input files; signals to other processes not scoped (needs ABI 6)"
            ),
            Some(abi) => format!(
                "parse workers: no network (seccomp); Landlock ABI {abi}: they write only to a private temporary \
                 folder, read only system, model and input files, and signal no other process"
            ),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        "parse workers: time and memory limits only; no network or file sandbox on this system".to_string()
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #[test]
    fn the_filter_compiles_for_this_machine() {
        let filter = super::worker_filter().expect("a filter for this architecture");
        assert!(filter.len() > super::REFUSED.len(), "one jump per refused call at least");
    }

    /// A call through its x32 number is refused like the x86_64 one: the filter is installed in a child
    /// between fork and exec, which then calls `socket` with the x32 bit and hands back the error number.
    /// Before the x32 numbers were listed the kernel answered ENOSYS (no x32) or made the socket.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn a_socket_asked_for_through_its_x32_number_is_refused() {
        use std::os::unix::process::CommandExt;
        let filter = super::worker_filter().expect("a filter for this architecture");
        let mut command = std::process::Command::new("true");
        // SAFETY: the hook only makes system calls.
        unsafe {
            command.pre_exec(move || {
                super::install(filter)?;
                let result =
                    libc::syscall(super::X32_SYSCALL_BIT | libc::SYS_socket, libc::AF_INET, libc::SOCK_STREAM, 0);
                Err(if result >= 0 { std::io::Error::from_raw_os_error(0) } else { std::io::Error::last_os_error() })
            });
        }
        let error = command.spawn().expect_err("the hook always hands back the call's outcome");
        assert_eq!(error.raw_os_error(), Some(libc::EACCES), "x32 socket: {error}");
    }
}
