//! Loads and attaches the probes and streams their events in batches.
//!
//! One consumer thread owns the BPF objects: it loads them (with the target
//! process and wakeup threshold as `const volatile` settings), excludes its own
//! thread id and the configured ones, attaches, and then polls both ring
//! buffers, sending `Vec<ProbeEvent>` batches to a crossbeam channel. A full
//! channel never blocks the consumer (that would overflow the ring buffers):
//! the batch is dropped and counted.

mod attach;
mod poll;

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};

use crate::environment::{check_kernel_btf, ensure_tracefs};
use crate::event::ProbeEvent;
use crate::{ProbeConfig, ProbeError};

use attach::{Objects, Probes};
use poll::poll_loop;

/// How often kernel drop counters are read while running.
const DROP_COUNTER_INTERVAL: Duration = Duration::from_millis(200);
/// Must match MAX_EXCLUDED_TIDS in `src/bpf/events.h`.
const MAX_EXCLUDED_TIDS: usize = 1024;

/// Counters of a running probe set. All counts are events, not batches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProbeStats {
    /// Syscall events received from the kernel.
    pub syscall_events: u64,
    /// Page-cache events received from the kernel.
    pub page_cache_events: u64,
    /// Packet events received from the kernel.
    pub packet_events: u64,
    /// Syscall events the kernel dropped because the ring buffer was full.
    pub syscall_kernel_drops: u64,
    /// Page-cache events the kernel dropped because the ring buffer was full.
    pub page_cache_kernel_drops: u64,
    /// Packet events the kernel dropped because the ring buffer was full.
    pub packet_kernel_drops: u64,
    /// Events received but dropped because the output channel was full.
    pub channel_drops: u64,
}

impl ProbeStats {
    /// Events lost in the kernel (every probe).
    pub fn kernel_drops(&self) -> u64 {
        self.syscall_kernel_drops + self.page_cache_kernel_drops + self.packet_kernel_drops
    }
}

#[derive(Default)]
struct SharedStats {
    syscall_events: AtomicU64,
    page_cache_events: AtomicU64,
    packet_events: AtomicU64,
    syscall_kernel_drops: AtomicU64,
    page_cache_kernel_drops: AtomicU64,
    packet_kernel_drops: AtomicU64,
    channel_drops: AtomicU64,
}

impl SharedStats {
    fn snapshot(&self) -> ProbeStats {
        ProbeStats {
            syscall_events: self.syscall_events.load(Ordering::Relaxed),
            page_cache_events: self.page_cache_events.load(Ordering::Relaxed),
            packet_events: self.packet_events.load(Ordering::Relaxed),
            syscall_kernel_drops: self.syscall_kernel_drops.load(Ordering::Relaxed),
            page_cache_kernel_drops: self.page_cache_kernel_drops.load(Ordering::Relaxed),
            packet_kernel_drops: self.packet_kernel_drops.load(Ordering::Relaxed),
            channel_drops: self.channel_drops.load(Ordering::Relaxed),
        }
    }
}

/// Running probes. Dropping the handle detaches them (like [`ProbeHandle::stop`]
/// without the final statistics).
pub struct ProbeHandle {
    stop: Arc<AtomicBool>,
    stats: Arc<SharedStats>,
    exclude: Sender<u32>,
    consumer_tid: u32,
    thread: Option<JoinHandle<Result<(), ProbeError>>>,
}

impl ProbeHandle {
    /// Loads and attaches the probes chosen in `config` and starts streaming
    /// their events to `out` in batches of up to `config.batch_size`.
    ///
    /// Returns once the probes are attached: events of anything the target
    /// does afterwards are captured. Fails with an error naming the fix when
    /// the machine cannot load them (not root, no BTF, no tracefs, no such
    /// interface).
    pub fn start(
        config: ProbeConfig,
        out: Sender<Vec<ProbeEvent>>,
    ) -> Result<ProbeHandle, ProbeError> {
        validate(&config)?;
        check_kernel_btf()?;
        // Only the tracepoint probes need tracefs; the packet probe is a tcx link.
        if config.syscalls || config.page_cache {
            ensure_tracefs(config.mount_tracefs)?;
        }

        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(SharedStats::default());
        let (exclude_tx, exclude_rx) = crossbeam_channel::unbounded();
        let (ready_tx, ready_rx) = crossbeam_channel::bounded(1);
        let thread = {
            let stop = stop.clone();
            let stats = stats.clone();
            std::thread::Builder::new()
                .name("probe-consumer".to_string())
                .spawn(move || consume(config, out, stats, stop, exclude_rx, ready_tx))?
        };
        match ready_rx.recv() {
            Ok(Ok(consumer_tid)) => Ok(ProbeHandle {
                stop,
                stats,
                exclude: exclude_tx,
                consumer_tid,
                thread: Some(thread),
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => match thread.join() {
                Ok(Err(e)) => Err(e),
                _ => Err(ProbeError::ConsumerDied),
            },
        }
    }

    /// Current counters.
    pub fn stats(&self) -> ProbeStats {
        self.stats.snapshot()
    }

    /// Thread id of the consumer thread (excluded from tracing).
    pub fn consumer_tid(&self) -> u32 {
        self.consumer_tid
    }

    /// Stops tracing thread `tid` from the consumer's next poll on (at most
    /// `poll_interval` later). Ignored once 1024 threads are excluded.
    pub fn exclude_tid(&self, tid: u32) {
        // The receiver lives as long as the consumer; after it ended there is
        // nothing left to exclude from.
        let _ = self.exclude.send(tid);
    }

    /// Detaches the probes, delivers the events still in the ring buffers and
    /// returns the final counters.
    pub fn stop(mut self) -> Result<ProbeStats, ProbeError> {
        self.shutdown()?;
        Ok(self.stats.snapshot())
    }

    fn shutdown(&mut self) -> Result<(), ProbeError> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take() {
            Some(t) => t.join().map_err(|_| ProbeError::ConsumerDied)?,
            None => Ok(()),
        }
    }
}

impl Drop for ProbeHandle {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            log::warn!("probes stopped with an error: {e}");
        }
    }
}

fn validate(config: &ProbeConfig) -> Result<(), ProbeError> {
    if !config.syscalls && !config.page_cache && config.packets.is_none() {
        return Err(ProbeError::InvalidConfig("no probe selected".to_string()));
    }
    let rb = config.ring_buffer_bytes;
    if !rb.is_power_of_two() || rb < 4096 {
        return Err(ProbeError::InvalidConfig(format!(
            "ring_buffer_bytes must be a power of two >= 4096, got {rb}"
        )));
    }
    if config.batch_size == 0 {
        return Err(ProbeError::InvalidConfig(
            "batch_size must be > 0".to_string(),
        ));
    }
    if config.excluded_tids.len() + 1 > MAX_EXCLUDED_TIDS {
        return Err(ProbeError::InvalidConfig(format!(
            "at most {} excluded tids",
            MAX_EXCLUDED_TIDS - 1
        )));
    }
    Ok(())
}

fn gettid() -> u32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() as u32 }
}

/// Thread body: set up, report readiness, then poll until stopped.
fn consume(
    config: ProbeConfig,
    out: Sender<Vec<ProbeEvent>>,
    stats: Arc<SharedStats>,
    stop: Arc<AtomicBool>,
    exclude: Receiver<u32>,
    ready: Sender<Result<u32, ProbeError>>,
) -> Result<(), ProbeError> {
    let tid = gettid();
    let mut syscall_obj = MaybeUninit::uninit();
    let mut page_cache_obj = MaybeUninit::uninit();
    let mut packet_obj = MaybeUninit::uninit();
    let mut excluded = config.excluded_tids.clone();
    excluded.push(tid);
    let objects = Objects {
        syscall: &mut syscall_obj,
        page_cache: &mut page_cache_obj,
        packet: &mut packet_obj,
    };
    let probes = match Probes::attach(&config, &excluded, objects) {
        Ok(p) => p,
        Err(e) => {
            // The caller waits on `ready`; if it is gone there is no one to tell.
            let _ = ready.send(Err(e));
            return Ok(());
        }
    };
    let result = poll_loop(
        &config,
        &probes,
        out,
        &stats,
        &stop,
        &exclude,
        &mut excluded,
        || {
            let _ = ready.send(Ok(tid));
        },
    );
    if let Err(e) = &result {
        let _ = ready.send(Err(ProbeError::Libbpf {
            step: "ring buffer setup".to_string(),
            detail: e.to_string(),
        }));
    }
    result
}
