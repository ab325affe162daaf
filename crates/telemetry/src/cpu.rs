//! CPU time an endpoint process used, for its exit line.
//!
//! An endpoint's CPU-seconds per million records received is the probe
//! effect's cost on a host with spare cores, and it is stable where the
//! monitored workload's throughput on a small machine is mostly noise; so
//! every endpoint (loom-app, influx-app, file-writer-app) prints
//! [`CpuUsage::exit_line`] as its last line and `figures/` parses it.

use std::fmt::Write as _;

/// User and system CPU time of the calling process (all its threads, ended
/// ones included), from `getrusage(RUSAGE_SELF)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CpuUsage {
    /// User-mode CPU seconds.
    pub user_s: f64,
    /// Kernel-mode CPU seconds.
    pub sys_s: f64,
}

impl CpuUsage {
    /// The process's usage so far; `None` if the kernel refuses (it does not
    /// on Linux for `RUSAGE_SELF`).
    pub fn of_process() -> Option<CpuUsage> {
        // SAFETY: getrusage only writes into the zeroed struct we own.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointer to a rusage for the duration of the call.
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
            return None;
        }
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        Some(CpuUsage {
            user_s: secs(ru.ru_utime),
            sys_s: secs(ru.ru_stime),
        })
    }

    /// User plus system seconds.
    pub fn total_s(&self) -> f64 {
        self.user_s + self.sys_s
    }

    /// `Endpoint CPU: user U s, sys S s, total T s, records received R, CPU s per M records C`
    /// (`C` is `-` when no record arrived).
    pub fn exit_line(&self, records_received: u64) -> String {
        let mut line = format!(
            "Endpoint CPU: user {:.3} s, sys {:.3} s, total {:.3} s, records received {records_received}, CPU s per M records ",
            self.user_s,
            self.sys_s,
            self.total_s()
        );
        if records_received > 0 {
            let _ = write!(
                line,
                "{:.4}",
                self.total_s() * 1e6 / records_received as f64
            );
        } else {
            line.push('-');
        }
        line
    }
}

/// [`CpuUsage::exit_line`] of this process, or a line saying why there is none.
pub fn exit_line(records_received: u64) -> String {
    match CpuUsage::of_process() {
        Some(u) => u.exit_line(records_received),
        None => format!(
            "Endpoint CPU: unavailable (getrusage failed), records received {records_received}"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_usage_grows_with_work() {
        let before = CpuUsage::of_process().expect("getrusage");
        let mut x = 0u64;
        let start = std::time::Instant::now();
        while start.elapsed().as_millis() < 50 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let after = CpuUsage::of_process().expect("getrusage");
        assert!(after.total_s() > before.total_s());
        assert!(after.user_s >= before.user_s && after.sys_s >= before.sys_s);
    }

    #[test]
    fn exit_line_format() {
        let u = CpuUsage {
            user_s: 1.5,
            sys_s: 0.5,
        };
        assert_eq!(
            u.exit_line(4_000_000),
            "Endpoint CPU: user 1.500 s, sys 0.500 s, total 2.000 s, records received 4000000, CPU s per M records 0.5000"
        );
        assert!(u.exit_line(0).ends_with("CPU s per M records -"));
    }
}
