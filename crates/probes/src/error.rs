//! The probes crate's error type.

use thiserror::Error;

/// Why probes could not be loaded, attached or run. Every variant that stems
/// from the environment names the fix.
#[derive(Debug, Error)]
pub enum ProbeError {
    /// The configuration asks for nothing or for impossible sizes.
    #[error("invalid probe configuration: {0}")]
    InvalidConfig(String),
    /// The kernel exposes no BTF, which CO-RE programs need.
    #[error("kernel BTF not found at {path}: the kernel needs CONFIG_DEBUG_INFO_BTF=y")]
    KernelBtfMissing {
        /// Path that was checked.
        path: String,
    },
    /// Tracepoints are not reachable because tracefs is not mounted.
    #[error(
        "tracefs is not mounted (no {checked}): run as root `mount -t tracefs tracefs /sys/kernel/tracing`{mount_error}"
    )]
    TracefsMissing {
        /// Directory that was looked for.
        checked: String,
        /// Why the automatic mount failed, if it was tried.
        mount_error: String,
    },
    /// The kernel refused: loading eBPF needs privileges.
    #[error(
        "permission denied while {step}: run as root (or with CAP_BPF and CAP_PERFMON): {detail}"
    )]
    PermissionDenied {
        /// What was being done.
        step: String,
        /// libbpf's message.
        detail: String,
    },
    /// libbpf failed in `step` (open, load, attach, map access, ring buffer).
    #[error("{step} failed: {detail}")]
    Libbpf {
        /// What was being done.
        step: String,
        /// libbpf's message.
        detail: String,
    },
    /// The consumer thread could not be started.
    #[error("cannot start the probe consumer thread: {0}")]
    Thread(#[from] std::io::Error),
    /// The consumer thread ended without reporting (it panicked).
    #[error("the probe consumer thread died unexpectedly")]
    ConsumerDied,
}

impl ProbeError {
    /// Wraps a libbpf error, recognising permission problems.
    pub(crate) fn libbpf(step: impl Into<String>, err: libbpf_rs::Error) -> ProbeError {
        let step = step.into();
        let detail = format!("{err:#}");
        if err.kind() == libbpf_rs::ErrorKind::PermissionDenied {
            ProbeError::PermissionDenied { step, detail }
        } else {
            ProbeError::Libbpf { step, detail }
        }
    }
}
