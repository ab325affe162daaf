//! The totals of a finished run, and the summary lines the binaries print
//! (parsed by `figures/`).

use probes::ProbeStats;

/// Totals of a finished run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Summary {
    /// Measured time (after warmup), s.
    pub seconds: f64,
    /// Operations (requests) the application completed in the measured time.
    pub ops: u64,
    /// Operations turned into KV op records (each was sent or dropped).
    pub recorded: u64,
    /// KV op records handed to the destination.
    pub kv_sent: u64,
    /// Of `kv_sent`, the reads.
    pub kv_reads_sent: u64,
    /// Syscall records handed to the destination.
    pub syscall_sent: u64,
    /// Page-cache records handed to the destination.
    pub page_cache_sent: u64,
    /// Packet records handed to the destination.
    pub packet_sent: u64,
    /// KV op records dropped because the channel to the sender was full.
    pub app_dropped: u64,
    /// Probe statistics (events, kernel drops, probe channel drops).
    pub probes: ProbeStats,
}

impl Summary {
    /// Operations per second over the measured time.
    pub fn ops_per_sec(&self) -> f64 {
        if self.seconds > 0.0 {
            self.ops as f64 / self.seconds
        } else {
            0.0
        }
    }

    /// Records handed to the destination.
    pub fn sent(&self) -> u64 {
        self.kv_sent + self.syscall_sent + self.page_cache_sent + self.packet_sent
    }

    /// Records lost anywhere (app channel, probe channel, kernel ring buffers).
    pub fn dropped(&self) -> u64 {
        self.app_dropped + self.probes.channel_drops + self.probes.kernel_drops()
    }

    /// `Total sent: N records (App: a, Syscall: s, Page cache: p), Dropped: …`;
    /// with `packets` the third kind is `Packets: k` (the Valkey workload's
    /// probes) instead of the page cache.
    pub fn total_line(&self, packets: bool) -> String {
        let third = if packets {
            format!("Packets: {}", self.packet_sent)
        } else {
            format!("Page cache: {}", self.page_cache_sent)
        };
        format!(
            "Total sent: {} records (App: {}, Syscall: {}, {third}), Dropped: {} (app channel: {}, probe channel: {}, kernel: {})",
            self.sent(),
            self.kv_sent,
            self.syscall_sent,
            self.dropped(),
            self.app_dropped,
            self.probes.channel_drops,
            self.probes.kernel_drops()
        )
    }

    /// `Average NAME rate per sec: X` (`figures/` reads the probe effect from it).
    pub fn average_line(&self, name: &str) -> String {
        format!("Average {name} rate per sec: {:.1}", self.ops_per_sec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_keep_the_shapes_figures_parse() {
        let s = Summary {
            seconds: 2.0,
            ops: 5,
            kv_sent: 200,
            syscall_sent: 400,
            page_cache_sent: 6,
            ..Summary::default()
        };
        assert_eq!(
            s.total_line(false),
            "Total sent: 606 records (App: 200, Syscall: 400, Page cache: 6), Dropped: 0 (app channel: 0, probe channel: 0, kernel: 0)"
        );
        assert!(s.total_line(true).contains("Syscall: 400, Packets: 0)"));
        assert_eq!(
            s.average_line("rocksdb"),
            "Average rocksdb rate per sec: 2.5"
        );
    }
}
