//! Checks that the machine can load the probes, with fixes in the errors.

use std::ffi::CString;
use std::path::Path;

use crate::ProbeError;

/// Where the kernel exposes its BTF.
pub const KERNEL_BTF: &str = "/sys/kernel/btf/vmlinux";
/// Mount point used when tracefs has to be mounted.
pub const TRACEFS: &str = "/sys/kernel/tracing";
const TRACEFS_DEBUGFS: &str = "/sys/kernel/debug/tracing";

/// Fails unless the kernel exposes BTF (needed by the CO-RE programs).
pub fn check_kernel_btf() -> Result<(), ProbeError> {
    if Path::new(KERNEL_BTF).exists() {
        Ok(())
    } else {
        Err(ProbeError::KernelBtfMissing {
            path: KERNEL_BTF.to_string(),
        })
    }
}

fn tracefs_ready() -> bool {
    [TRACEFS, TRACEFS_DEBUGFS]
        .iter()
        .any(|d| Path::new(d).join("events/raw_syscalls").is_dir())
}

/// Makes sure tracepoints are reachable through tracefs; if `mount` is true
/// and tracefs is missing, mounts it at [`TRACEFS`] (needs root).
pub fn ensure_tracefs(mount: bool) -> Result<(), ProbeError> {
    if tracefs_ready() {
        return Ok(());
    }
    // tracefs is mode 0700: unprivileged users cannot even see that it is mounted.
    let denied = [TRACEFS, TRACEFS_DEBUGFS].iter().any(|d| {
        std::fs::read_dir(d).is_err_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied)
    });
    if denied {
        return Err(ProbeError::PermissionDenied {
            step: "looking up tracepoints".to_string(),
            detail: format!("{TRACEFS} is not readable"),
        });
    }
    let mut mount_error = String::new();
    if mount {
        match mount_tracefs() {
            Ok(()) if tracefs_ready() => return Ok(()),
            Ok(()) => mount_error = " (mounted, but no tracepoint events appeared)".to_string(),
            Err(e) => mount_error = format!(" (automatic mount failed: {e})"),
        }
    }
    Err(ProbeError::TracefsMissing {
        checked: format!("{TRACEFS}/events"),
        mount_error,
    })
}

fn mount_tracefs() -> std::io::Result<()> {
    let c = |s: &str| CString::new(s).map_err(std::io::Error::other);
    let (src, target, fstype) = (c("tracefs")?, c(TRACEFS)?, c("tracefs")?);
    // SAFETY: all pointers are valid NUL-terminated strings for the call.
    let rc = unsafe {
        libc::mount(
            src.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
