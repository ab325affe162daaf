//! Timestamps: CLOCK_MONOTONIC, the clock of `bpf_ktime_get_ns`, so KV ops
//! and kernel events line up; records carry µs since the workload's epoch.

/// CLOCK_MONOTONIC now, in ns.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

/// The instant telemetry time is counted from.
#[derive(Debug, Clone, Copy)]
pub struct Epoch {
    start_ns: u64,
}

impl Epoch {
    /// An epoch starting now.
    pub fn now() -> Epoch {
        Epoch {
            start_ns: monotonic_ns(),
        }
    }

    /// The epoch as CLOCK_MONOTONIC ns.
    pub fn start_ns(&self) -> u64 {
        self.start_ns
    }

    /// µs from the epoch to the monotonic time `ns` (0 if earlier).
    pub fn us_at(&self, ns: u64) -> u64 {
        ns.saturating_sub(self.start_ns) / 1000
    }

    /// µs from the epoch to now.
    pub fn us_now(&self) -> u64 {
        self.us_at(monotonic_ns())
    }
}

/// This thread's id.
pub fn gettid() -> u32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as u32 }
}
