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

/// A worker's batch is sent once its records span this much of their own
/// time (µs), even when not full: a record then waits at most about this
/// long in its worker's buffer, which bounds how far behind other workers'
/// records it arrives (the disorder an event-time endpoint must reorder).
/// At the default 256 records a batch of a worker doing 2 000 ops/s would
/// otherwise span 128 ms.
pub const MAX_BATCH_SPAN_US: u64 = 10_000;

/// Application batches already waiting are merged into one frame of up to
/// this many records: fewer, larger frames, and no batch waits for it.
pub const MERGE_MAX_RECORDS: usize = 4096;

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

    /// Adds a record; sends the batch when full or when it spans
    /// [`MAX_BATCH_SPAN_US`] (never blocks).
    #[inline]
    pub fn push(&mut self, record: Record) {
        if self.records.first().is_some_and(|f| {
            record.timestamp_us().saturating_sub(f.timestamp_us()) >= MAX_BATCH_SPAN_US
        }) {
            self.flush();
        }
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
                Ok(mut records) => {
                    // Merge what other workers queued meanwhile: one frame.
                    while records.len() < MERGE_MAX_RECORDS {
                        match app_ref.try_recv() {
                            Ok(more) => records.extend_from_slice(&more),
                            Err(_) => break,
                        }
                    }
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
    fn a_batch_spans_at_most_the_bound_of_its_records_time() {
        let (tx, rx) = crossbeam_channel::unbounded();
        let counters = Arc::new(Counters::default());
        let mut buf = RecordBuffer::new(tx, 1000, counters);
        // One record every 3 ms: a batch closes before it spans 10 ms.
        for i in 0..10 {
            buf.push(kv(i * 3_000));
        }
        drop(buf);
        let batches: Vec<Vec<Record>> = rx.try_iter().collect();
        assert_eq!(batches.iter().map(Vec::len).sum::<usize>(), 10);
        for b in &batches {
            let span = b.last().unwrap().timestamp_us() - b[0].timestamp_us();
            assert!(span < MAX_BATCH_SPAN_US, "{span} µs");
        }
        assert_eq!(batches.len(), 3, "records 0-3, 4-7, 8-9");
    }

    #[test]
    fn queued_app_batches_leave_as_one_frame() {
        let (app_tx, app_rx) = crossbeam_channel::unbounded();
        let (probe_tx, probe_rx) = crossbeam_channel::unbounded::<Vec<ProbeEvent>>();
        for b in 0..5u64 {
            app_tx
                .send((0..10).map(|i| kv(b * 10 + i)).collect())
                .unwrap();
        }
        drop((app_tx, probe_tx));
        struct Collect(Arc<std::sync::Mutex<Vec<Batch>>>);
        impl Sink for Collect {
            fn write(&mut self, batch: &Batch) -> Result<(), PipelineError> {
                if let Ok(mut v) = self.0.lock() {
                    v.push(batch.clone());
                }
                Ok(())
            }
            fn flush(&mut self) -> Result<(), PipelineError> {
                Ok(())
            }
            fn finish(self: Box<Self>) -> Result<(), PipelineError> {
                Ok(())
            }
        }
        let got = Arc::new(std::sync::Mutex::new(Vec::new()));
        let counters = Arc::new(Counters::default());
        let sink = Box::new(Collect(got.clone()));
        run_sender(sink, app_rx, probe_rx, Epoch::now(), counters.clone()).unwrap();
        let batches = got.lock().unwrap().clone();
        assert_eq!(batches.len(), 1);
        let times: Vec<u64> = batches[0]
            .records
            .iter()
            .map(|r| r.timestamp_us())
            .collect();
        assert_eq!(times, (0..50).collect::<Vec<_>>());
        assert_eq!(counters.kv_sent.load(Ordering::Relaxed), 50);
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
