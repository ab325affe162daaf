//! Load-time settings of the probes.

use std::time::Duration;

/// What to load and how to deliver events.
#[derive(Debug, Clone)]
pub struct ProbeConfig {
    /// Attach the syscall-latency probe (`raw_syscalls/sys_enter` + `sys_exit`).
    pub syscalls: bool,
    /// Attach the page-cache probe (`filemap/mm_filemap_add_to_page_cache`).
    pub page_cache: bool,
    /// Attach the packet probe (tcx ingress of `packet_interface`) and keep
    /// packets from or to this port; `Some(0)` keeps every TCP/UDP packet.
    pub packets: Option<u16>,
    /// Interface whose ingress the packet probe watches (default `lo`).
    pub packet_interface: String,
    /// Trace only this process (tgid); `None` traces every process.
    pub target_tgid: Option<u32>,
    /// Threads never traced (e.g. telemetry sender threads). The consumer
    /// thread of the probes excludes itself in any case.
    pub excluded_tids: Vec<u32>,
    /// Size of each probe's ring buffer in bytes: a power of two, at least one page.
    pub ring_buffer_bytes: u32,
    /// The kernel wakes the consumer only when this many bytes are waiting;
    /// below that the consumer picks events up every `poll_interval`.
    pub wakeup_bytes: u64,
    /// Longest time events wait in the ring buffer before being consumed.
    pub poll_interval: Duration,
    /// Events per batch sent to the channel (a partial batch is sent after each poll).
    pub batch_size: usize,
    /// Mount tracefs at `/sys/kernel/tracing` if it is missing (needs root).
    pub mount_tracefs: bool,
}

impl Default for ProbeConfig {
    fn default() -> Self {
        ProbeConfig {
            syscalls: true,
            page_cache: false,
            packets: None,
            packet_interface: "lo".to_string(),
            target_tgid: None,
            excluded_tids: Vec::new(),
            ring_buffer_bytes: 64 * 1024 * 1024,
            wakeup_bytes: 256 * 1024,
            poll_interval: Duration::from_millis(10),
            batch_size: 256,
            mount_tracefs: true,
        }
    }
}
