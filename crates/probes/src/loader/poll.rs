//! The consumer's loop: ring-buffer records decoded into events, batched
//! onto the channel without ever blocking, new exclusions applied and drop
//! counters read between polls.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender, TrySendError};
use libbpf_rs::RingBufferBuilder;

use super::attach::Probes;
use super::{SharedStats, DROP_COUNTER_INTERVAL, MAX_EXCLUDED_TIDS};
use crate::event::{PacketEvent, PageCacheEvent, ProbeEvent, RawEvent, SyscallEvent};
use crate::{ProbeConfig, ProbeError};

/// Collects decoded events into batches for the channel.
struct Batcher<'a> {
    out: Sender<Vec<ProbeEvent>>,
    batch: Vec<ProbeEvent>,
    batch_size: usize,
    stats: &'a SharedStats,
}

impl Batcher<'_> {
    fn push(&mut self, event: ProbeEvent) {
        self.batch.push(event);
        if self.batch.len() >= self.batch_size {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(self.batch_size));
        match self.out.try_send(batch) {
            Ok(()) => {}
            Err(TrySendError::Full(b)) | Err(TrySendError::Disconnected(b)) => {
                self.stats
                    .channel_drops
                    .fetch_add(b.len() as u64, Ordering::Relaxed);
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn poll_loop(
    config: &ProbeConfig,
    probes: &Probes<'_>,
    out: Sender<Vec<ProbeEvent>>,
    stats: &SharedStats,
    stop: &AtomicBool,
    exclude: &Receiver<u32>,
    excluded: &mut Vec<u32>,
    on_ready: impl FnOnce(),
) -> Result<(), ProbeError> {
    let batcher = Rc::new(RefCell::new(Batcher {
        out,
        batch: Vec::with_capacity(config.batch_size),
        batch_size: config.batch_size,
        stats,
    }));
    let mut builder = RingBufferBuilder::new();
    if let Some(s) = &probes.syscall {
        let b = batcher.clone();
        builder
            .add(&s.maps.events, move |data: &[u8]| {
                if let Some(e) = SyscallEvent::read(data) {
                    let mut b = b.borrow_mut();
                    b.stats.syscall_events.fetch_add(1, Ordering::Relaxed);
                    b.push(ProbeEvent::Syscall(e));
                }
                0
            })
            .map_err(|e| ProbeError::libbpf("adding the syscall ring buffer", e))?;
    }
    if let Some(s) = &probes.page_cache {
        let b = batcher.clone();
        builder
            .add(&s.maps.events, move |data: &[u8]| {
                if let Some(e) = PageCacheEvent::read(data) {
                    let mut b = b.borrow_mut();
                    b.stats.page_cache_events.fetch_add(1, Ordering::Relaxed);
                    b.push(ProbeEvent::PageCache(e));
                }
                0
            })
            .map_err(|e| ProbeError::libbpf("adding the page-cache ring buffer", e))?;
    }
    if let Some(s) = &probes.packet {
        let b = batcher.clone();
        builder
            .add(&s.skel.maps.events, move |data: &[u8]| {
                if let Some(e) = PacketEvent::read(data) {
                    let mut b = b.borrow_mut();
                    b.stats.packet_events.fetch_add(1, Ordering::Relaxed);
                    b.push(ProbeEvent::Packet(e));
                }
                0
            })
            .map_err(|e| ProbeError::libbpf("adding the packet ring buffer", e))?;
    }
    let ring = builder
        .build()
        .map_err(|e| ProbeError::libbpf("creating the ring buffer consumer", e))?;
    on_ready();

    let mut last_drop_read = Instant::now();
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        // The kernel wakes us only past `wakeup_bytes`, so poll returning on
        // timeout is normal; consume picks up whatever is waiting.
        let rc = ring.poll_raw(config.poll_interval);
        if rc < 0 && rc != -libc::EINTR {
            return Err(ProbeError::Libbpf {
                step: "polling the ring buffers".to_string(),
                detail: std::io::Error::from_raw_os_error(-rc).to_string(),
            });
        }
        let rc = ring.consume_raw();
        if rc < 0 && rc != -libc::EINTR {
            return Err(ProbeError::Libbpf {
                step: "consuming the ring buffers".to_string(),
                detail: std::io::Error::from_raw_os_error(-rc).to_string(),
            });
        }
        batcher.borrow_mut().flush();

        let new: Vec<u32> = exclude.try_iter().collect();
        if !new.is_empty() {
            let room = MAX_EXCLUDED_TIDS.saturating_sub(excluded.len());
            let take = new.len().min(room);
            probes.exclude(&new[..take])?;
            excluded.extend_from_slice(&new[..take]);
        }
        if stopping || last_drop_read.elapsed() >= DROP_COUNTER_INTERVAL {
            probes.read_drops(stats)?;
            last_drop_read = Instant::now();
        }
        if stopping {
            return Ok(());
        }
    }
}
