//! The per-second progress line of the live workloads (parsed by `figures/`).

use std::fmt;

/// Counts of one progress interval (about a second) of a measured run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Interval number, from 1.
    pub second: u64,
    /// KV op records sent in the interval.
    pub app: u64,
    /// Syscall records sent in the interval.
    pub syscall: u64,
    /// Page-cache records sent in the interval.
    pub page_cache: u64,
    /// Packet records sent in the interval; `None` for a workload without a
    /// packet probe (the line then has no `Packets:` part).
    pub packet: Option<u64>,
    /// All records sent in the interval.
    pub total: u64,
    /// Records dropped in the interval (full channels and kernel ring buffers).
    pub dropped: u64,
    /// Operations (requests) the application completed in the interval.
    pub ops: u64,
}

impl fmt::Display for Progress {
    /// `Count: i App: a, Syscall: s, Page cache: p, Count: total, Dropped: d`,
    /// then `, Packets: k` when the workload has a packet probe.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Count: {} App: {}, Syscall: {}, Page cache: {}, Count: {}, Dropped: {}",
            self.second, self.app, self.syscall, self.page_cache, self.total, self.dropped
        )?;
        match self.packet {
            Some(k) => write!(f, ", Packets: {k}"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_shapes() {
        let mut p = Progress {
            second: 3,
            app: 10,
            syscall: 20,
            page_cache: 0,
            packet: None,
            total: 30,
            dropped: 1,
            ops: 10,
        };
        assert_eq!(
            p.to_string(),
            "Count: 3 App: 10, Syscall: 20, Page cache: 0, Count: 30, Dropped: 1"
        );
        p.packet = Some(5);
        assert!(p.to_string().ends_with("Dropped: 1, Packets: 5"));
    }
}
