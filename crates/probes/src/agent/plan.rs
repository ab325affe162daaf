//! Choosing how the syscall probe attaches ([`SyscallAttach`]) for a
//! selection, and saying why when `Auto` cannot take its first choice.

use std::fmt;

use super::fentry::{self, FentryTarget};
use super::{SyscallAttach, SyscallSelection, PER_SYSCALL_MAX};
use crate::ProbeError;

/// The attachment chosen for the syscall probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyscallPlan {
    /// The mode (never `Auto`).
    pub mode: SyscallAttach,
    /// With `Fentry`: the function each listed syscall attaches to.
    pub fentry: Vec<FentryTarget>,
    /// Why `Auto` did not take fentry for a list (`None`: first choice).
    pub fallback: Option<String>,
    /// Whether the mode was chosen by `Auto` (a failed fentry load may then
    /// still fall back).
    pub auto: bool,
}

impl SyscallPlan {
    fn plain(mode: SyscallAttach, auto: bool) -> SyscallPlan {
        SyscallPlan {
            mode,
            fentry: Vec::new(),
            fallback: None,
            auto,
        }
    }

    /// `Auto`'s choice once fentry is out, for `why`.
    pub fn without_fentry(list_len: usize, why: String) -> SyscallPlan {
        let mode = if list_len <= PER_SYSCALL_MAX {
            SyscallAttach::PerSyscall
        } else {
            SyscallAttach::Raw
        };
        SyscallPlan {
            fallback: Some(why),
            ..SyscallPlan::plain(mode, true)
        }
    }
}

impl fmt::Display for SyscallPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.mode {
            SyscallAttach::Fentry => write!(f, "fentry ({} syscalls)", self.fentry.len())?,
            SyscallAttach::PerSyscall => f.write_str("per-syscall tracepoints")?,
            SyscallAttach::Raw | SyscallAttach::Auto => f.write_str("raw_syscalls")?,
        }
        if let Some(why) = &self.fallback {
            write!(f, ", not fentry: {why}")?;
        }
        Ok(())
    }
}

/// The attachment for `sel` when `asked`: `Auto` takes fentry for a list
/// the kernel's BTF has every function of (at most [`fentry::FENTRY_SLOTS`]),
/// else per-syscall tracepoints for up to [`PER_SYSCALL_MAX`] names, else
/// raw tracepoints; every syscall always takes raw tracepoints. An explicit
/// `Fentry` the list does not fit is refused with the reason.
pub fn plan(sel: &SyscallSelection, asked: SyscallAttach) -> Result<SyscallPlan, ProbeError> {
    match (asked, sel) {
        (SyscallAttach::Fentry, SyscallSelection::All) => Err(ProbeError::InvalidConfig(format!(
            "--syscall-attach fentry needs a syscall list (at most {})",
            fentry::FENTRY_SLOTS
        ))),
        (SyscallAttach::Fentry, SyscallSelection::List(l)) => fentry::resolve(l)
            .map(|targets| SyscallPlan {
                fentry: targets,
                ..SyscallPlan::plain(SyscallAttach::Fentry, false)
            })
            .map_err(|why| ProbeError::InvalidConfig(format!("--syscall-attach fentry: {why}"))),
        (SyscallAttach::Auto, SyscallSelection::List(l)) => Ok(match fentry::resolve(l) {
            Ok(targets) => SyscallPlan {
                fentry: targets,
                ..SyscallPlan::plain(SyscallAttach::Fentry, true)
            },
            Err(why) => SyscallPlan::without_fentry(l.len(), why),
        }),
        (SyscallAttach::Auto, SyscallSelection::All) => {
            Ok(SyscallPlan::plain(SyscallAttach::Raw, true))
        }
        (SyscallAttach::PerSyscall, SyscallSelection::All) => Err(ProbeError::InvalidConfig(
            "per-syscall tracepoints need a syscall list".into(),
        )),
        (m, _) => Ok(SyscallPlan::plain(m, false)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(n: u32) -> SyscallSelection {
        SyscallSelection::List((0..n).collect())
    }

    #[test]
    fn auto_takes_raw_for_every_syscall_and_falls_back_with_the_limit_for_long_lists() {
        let all = plan(&SyscallSelection::All, SyscallAttach::Auto).unwrap();
        assert_eq!((all.mode, all.fallback), (SyscallAttach::Raw, None));
        let over = plan(&list(33), SyscallAttach::Auto).unwrap();
        assert_eq!(over.mode, SyscallAttach::PerSyscall);
        let why = over.fallback.expect("a reason");
        assert!(
            why.contains("at most 32") && why.contains("has 33"),
            "{why}"
        );
        let long = plan(&list(PER_SYSCALL_MAX as u32 + 1), SyscallAttach::Auto).unwrap();
        assert_eq!(long.mode, SyscallAttach::Raw);
        assert!(long.to_string().starts_with("raw_syscalls, not fentry: "));
    }

    #[test]
    fn explicit_modes_are_kept_or_refused_with_the_reason() {
        for sel in [SyscallSelection::All, list(33)] {
            let e = plan(&sel, SyscallAttach::Fentry).unwrap_err().to_string();
            assert!(
                e.contains("--syscall-attach fentry") && e.contains("32"),
                "{e}"
            );
        }
        assert!(plan(&SyscallSelection::All, SyscallAttach::PerSyscall).is_err());
        let raw = plan(&list(3), SyscallAttach::Raw).unwrap();
        assert_eq!((raw.mode, raw.auto), (SyscallAttach::Raw, false));
    }
}
