//! Telemetry path: per-thread record buffers → bounded channel → one sender
//! thread → sink. Workers never block on telemetry: a full channel drops the
//! batch and counts it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{never, select, Receiver, Sender, TrySendError};
use probes::ProbeEvent;
use telemetry::{Batch, KvOpKind, Record};

use crate::clock::Epoch;
use crate::sink::Sink;
use crate::PipelineError;

/// The sender flushes its sink after this long without new batches.
const IDLE_FLUSH: Duration = Duration::from_millis(20);

/// Telemetry counters shared by workers, sender and progress reporting.
#[derive(Debug, Default)]
pub struct Counters {
    /// KV op records handed to the sink.
    pub kv_sent: AtomicU64,
    /// Of `kv_sent`, the reads (the records the P1 question is about).
    pub kv_reads_sent: AtomicU64,
    /// Syscall records handed to the sink.
    pub syscall_sent: AtomicU64,
    /// Page-cache records handed to the sink.
    pub page_cache_sent: AtomicU64,
    /// Packet records handed to the sink.
    pub packet_sent: AtomicU64,
    /// Application records dropped because the channel was full.
    pub app_dropped: AtomicU64,
}

impl Counters {
    /// Records handed to the sink so far.
    pub fn sent(&self) -> u64 {
        self.kv_sent.load(Ordering::Relaxed)
            + self.syscall_sent.load(Ordering::Relaxed)
            + self.page_cache_sent.load(Ordering::Relaxed)
            + self.packet_sent.load(Ordering::Relaxed)
    }
}

/// A worker thread's batch under construction.
pub struct RecordBuffer {
    records: Vec<Record>,
    batch_size: usize,
    tx: Sender<Vec<Record>>,
    counters: Arc<Counters>,
}

impl RecordBuffer {
    /// A buffer sending batches of `batch_size` records to `tx`.
    pub fn new(
        tx: Sender<Vec<Record>>,
        batch_size: usize,
        counters: Arc<Counters>,
    ) -> RecordBuffer {
        RecordBuffer {
            records: Vec::with_capacity(batch_size),
            batch_size,
            tx,
            counters,
        }
    }

    /// Adds a record; sends the batch when full (never blocks).
    #[inline]
    pub fn push(&mut self, record: Record) {
        self.records.push(record);
        if self.records.len() >= self.batch_size {
            self.flush();
        }
    }

    /// Sends what is buffered; a full or closed channel drops it, counted.
    pub fn flush(&mut self) {
        if self.records.is_empty() {
            return;
        }
        let batch = std::mem::replace(&mut self.records, Vec::with_capacity(self.batch_size));
        if let Err(TrySendError::Full(b) | TrySendError::Disconnected(b)) = self.tx.try_send(batch)
        {
            self.counters
                .app_dropped
                .fetch_add(b.len() as u64, Ordering::Relaxed);
        }
    }
}

impl Drop for RecordBuffer {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Converts a probe event into its telemetry record, with times relative to `epoch`.
pub fn probe_record(event: &ProbeEvent, epoch: &Epoch) -> Record {
    event.to_record(epoch.start_ns())
}

/// Sender thread body: forwards app batches and converted probe batches to
/// the sink until both channels are closed, then finishes the sink.
pub fn run_sender(
    mut sink: Box<dyn Sink>,
    app: Receiver<Vec<Record>>,
    probes: Receiver<Vec<ProbeEvent>>,
    epoch: Epoch,
    counters: Arc<Counters>,
) -> Result<(), PipelineError> {
    let mut app_rx = Some(app);
    let mut probe_rx = Some(probes);
    let closed = never();
    let mut batch = Batch::default();
    while app_rx.is_some() || probe_rx.is_some() {
        let app_ref = app_rx.as_ref().unwrap_or(&closed);
        let closed_probes = never();
        let probe_ref = probe_rx.as_ref().unwrap_or(&closed_probes);
        select! {
            recv(app_ref) -> msg => match msg {
                Ok(records) => {
                    let kv = records.len() as u64;
                    let reads = records
                        .iter()
                        .filter(|r| matches!(r, Record::KvOp(op) if op.op == KvOpKind::Read))
                        .count() as u64;
                    batch.arrival_us = epoch.us_now();
                    batch.records = records;
                    sink.write(&batch)?;
                    counters.kv_sent.fetch_add(kv, Ordering::Relaxed);
                    counters.kv_reads_sent.fetch_add(reads, Ordering::Relaxed);
                }
                Err(_) => app_rx = None,
            },
            recv(probe_ref) -> msg => match msg {
                Ok(events) => {
                    batch.arrival_us = epoch.us_now();
                    batch.records.clear();
                    let (mut sys, mut pc, mut pk) = (0u64, 0u64, 0u64);
                    for e in &events {
                        match e {
                            ProbeEvent::Syscall(_) => sys += 1,
                            ProbeEvent::PageCache(_) => pc += 1,
                            ProbeEvent::Packet(_) => pk += 1,
                        }
                        batch.records.push(probe_record(e, &epoch));
                    }
                    sink.write(&batch)?;
                    counters.syscall_sent.fetch_add(sys, Ordering::Relaxed);
                    counters.page_cache_sent.fetch_add(pc, Ordering::Relaxed);
                    counters.packet_sent.fetch_add(pk, Ordering::Relaxed);
                }
                Err(_) => probe_rx = None,
            },
            default(IDLE_FLUSH) => sink.flush()?,
        }
    }
    sink.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use probes::{PageCacheEvent, SyscallEvent};
    use telemetry::KvOp;

    fn kv(i: u64) -> Record {
        Record::KvOp(KvOp {
            thread_id: 1,
            op: KvOpKind::Read,
            start_us: i,
            duration_us: 1,
        })
    }

    #[test]
    fn full_channel_drops_and_counts_without_blocking() {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let counters = Arc::new(Counters::default());
        let mut buf = RecordBuffer::new(tx, 2, counters.clone());
        for i in 0..6 {
            buf.push(kv(i));
        }
        buf.push(kv(6));
        drop(buf); // flushes the last, partial batch: dropped too
        assert_eq!(rx.try_iter().map(|b| b.len()).sum::<usize>(), 2);
        assert_eq!(counters.app_dropped.load(Ordering::Relaxed), 5);
    }

    #[test]
    fn probe_events_become_records_relative_to_the_epoch() {
        let epoch = Epoch::now();
        let base = epoch.start_ns();
        let mut s = SyscallEvent::default();
        (s.pid, s.tid, s.nr) = (10, 11, 17);
        (s.start_ns, s.duration_ns) = (base + 5_000, 2_999);
        match probe_record(&ProbeEvent::Syscall(s), &epoch) {
            Record::Syscall(r) => {
                assert_eq!(
                    (r.pid, r.tid, r.nr, r.start_us, r.duration_us),
                    (10, 11, 17, 5, 2)
                )
            }
            other => panic!("{other:?}"),
        }
        let p = PageCacheEvent {
            pid: 1,
            tid: 2,
            time_ns: base.saturating_sub(1),
            pfn: 3,
            inode: 4,
            index: 5,
            device: 6,
            order: 0,
        };
        match probe_record(&ProbeEvent::PageCache(p), &epoch) {
            Record::PageCache(r) => {
                assert_eq!(
                    (r.timestamp_us, r.pfn, r.inode, r.index, r.device),
                    (0, 3, 4, 5, 6)
                )
            }
            other => panic!("{other:?}"),
        }
    }
}
