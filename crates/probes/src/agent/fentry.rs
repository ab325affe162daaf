//! The syscall probe's fentry/fexit attachment: which kernel function
//! implements each listed syscall, checked against the running kernel's BTF.
//!
//! A syscall enters the kernel through a per-architecture wrapper,
//! `__x64_sys_NAME` on x86-64 (taking the saved registers), and that is what
//! the slots attach to. Only x86-64 is mapped: other architectures name the
//! wrappers differently (`__arm64_sys_NAME`, …), and there `Auto` falls back
//! to per-syscall tracepoints. 32-bit (compat) calls on x86-64 enter through
//! `__ia32_sys_NAME` / `__ia32_compat_sys_NAME`, with their own numbers, so
//! the fentry mode does not see them (the tracepoints do, under the 32-bit
//! number).

use libbpf_rs::btf::types::Func;
use libbpf_rs::btf::Btf;

/// fentry/fexit program pairs in `agent.bpf.c` (`FENTRY_SLOTS` there): the
/// longest list the fentry mode attaches.
pub const FENTRY_SLOTS: usize = 32;

/// One listed syscall and the kernel function its slot attaches to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FentryTarget {
    /// Syscall number (x86-64).
    pub nr: u32,
    /// Kernel function (`__x64_sys_pread64`).
    pub function: String,
}

/// The kernel's names that may be syscall `name`'s, most likely first: its
/// own, then the kernel's renamed ones (`stat` is `newstat`, `umount2` is
/// `umount`, `sendfile` is `sendfile64`). The functions are
/// `__x64_sys_` + one, the tracepoints `sys_enter_` + one.
pub fn kernel_names(name: &str) -> Vec<String> {
    let mut names = vec![name.to_string(), format!("new{name}")];
    match name {
        "umount2" => names.push("umount".into()),
        "sendfile" => names.push("sendfile64".into()),
        _ => {}
    }
    names
}

fn candidates(name: &str) -> Vec<String> {
    kernel_names(name)
        .into_iter()
        .map(|n| format!("__x64_sys_{n}"))
        .collect()
}

/// The fentry targets of `list`, or why the fentry mode cannot take it
/// (the reason names the syscall or the limit).
pub fn resolve(list: &[u32]) -> Result<Vec<FentryTarget>, String> {
    if !cfg!(target_arch = "x86_64") {
        return Err("the fentry mode maps syscalls to x86-64's __x64_sys_ functions only".into());
    }
    if list.len() > FENTRY_SLOTS {
        return Err(format!(
            "the fentry mode attaches at most {FENTRY_SLOTS} syscalls, the list has {}",
            list.len()
        ));
    }
    let btf = Btf::from_vmlinux()
        .map_err(|e| format!("the kernel's BTF (/sys/kernel/btf/vmlinux) cannot be read: {e}"))?;
    list.iter()
        .map(|&nr| {
            let name = telemetry::model::syscall_name(nr);
            candidates(&name)
                .into_iter()
                .find(|f| btf.type_by_name::<Func<'_>>(f).is_some())
                .map(|function| FentryTarget { nr, function })
                .ok_or_else(|| {
                    format!("the kernel has no function __x64_sys_{name} for syscall {name}")
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renamed_syscalls_have_their_kernel_names_among_the_candidates() {
        assert_eq!(candidates("pread64")[0], "__x64_sys_pread64");
        assert!(candidates("stat").contains(&"__x64_sys_newstat".to_string()));
        assert!(candidates("umount2").contains(&"__x64_sys_umount".to_string()));
        assert!(candidates("sendfile").contains(&"__x64_sys_sendfile64".to_string()));
    }
}
