//! The single ingest thread: owns the engine writer, declares each source
//! by its data-model schema on first sight, maps record times onto the
//! epoch, pushes every record, publishes to readers every few ms and makes
//! data durable every persist interval.
//!
//! A record's time is its own: a record older than its source's newest
//! stored record (it came later than the reorder window allows) is stored
//! at its own time in a late sibling of its source and counted as `late
//! stored` (`source_state`); only past the bound of late siblings is it
//! refused and counted as `late`, never stored at another time. With durable
//! acknowledgements, OTLP requests are logged raw in the intake log by
//! their handlers and `/write` records by this thread (see `intake_log`),
//! so that their requests can be answered once durable.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use endpoint::{AckBook, BufferPool};
use loom::{SourceId, SourceSchema, Writer};
use rustc_hash::FxHashMap;
use telemetry::raw::SourceKey;

use crate::counters::Counters;
use crate::intake_log::{FileNo, IntakeLog, Leftover};
use crate::otlp_ingest::OtlpStage;
use crate::receive::{Msg, Taken};
use crate::reorder::{Reorder, Timed, WireRecord};
use crate::source_table::SourceTable;
use crate::sources::schema_of;

mod acks;
mod frames;
#[cfg(test)]
mod tests;

use crate::source_state::{Source, Tally};
use acks::AckTracker;

/// Which timestamp records are stored under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TimestampMode {
    /// Arrival time of the batch at this app: wall clock, µs since the Unix
    /// epoch, as the ingest thread takes it (never earlier than the batch
    /// it took before).
    Arrival,
    /// The record's own timestamp (start time for KV ops and syscalls) plus
    /// a fixed offset onto the epoch.
    Event,
}

/// How long the senders must be quiet before the reorder stage releases
/// everything it holds.
const REORDER_IDLE_RELEASE: Duration = Duration::from_secs(1);
/// Longest wait for a message when nothing is waiting to be published.
const IDLE_WAIT: Duration = Duration::from_millis(20);
/// Least time between two publishes when the queue runs empty.
const MIN_SYNC_GAP: Duration = Duration::from_millis(1);

/// Ingest settings.
pub struct IngestConfig {
    /// Which timestamp to store.
    pub timestamps: TimestampMode,
    /// Event mode: the fixed offset, or `None` to choose it at the first record.
    pub event_offset_us: Option<u64>,
    /// Newest timestamp already in the store (a restarted endpoint continues after it).
    pub resume_after_us: u64,
    /// Publish to readers at least this often.
    pub sync_interval: Duration,
    /// Make data durable at least this often.
    pub persist_interval: Duration,
    /// End after this many connections have ended.
    pub stop_after_connections: Option<u64>,
    /// Event mode: hold records this long (µs of event time) to store each
    /// source in time order; 0 stores them as they come.
    pub reorder_window_us: u64,
    /// Stop ingesting once this much data time (µs since the run's first
    /// stored record) has been ingested; ablation.
    pub stop_after_data_us: Option<u64>,
    /// Acknowledged TCP senders: the book their durable marks go to.
    pub acks: Option<Arc<AckBook>>,
    /// While frames of acknowledged senders wait for a persist, persist
    /// at least this often (their acknowledgement latency).
    pub ack_interval: Duration,
    /// The receive queue's byte limit (`--queue-max-bytes`): with its
    /// message capacity, what the queue's fill told to the store's flusher
    /// is measured against.
    pub queue_max_bytes: u64,
}

/// Why ingest ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IngestEnd {
    /// Shutdown requested (Ctrl-C).
    Shutdown,
    /// The requested number of connections ended.
    ConnectionsEnded,
    /// The data time reached the ablation cut-off.
    CutOff,
}

/// Wall-clock time, µs since the Unix epoch.
pub fn epoch_us() -> u64 {
    endpoint::epoch_us()
}

/// The event-time offset for a run whose first record has event time
/// `first_event_us`: its first record lands at the wall-clock time, or just
/// after the newest stored record when that is later.
pub fn event_offset(first_event_us: u64, now_us: u64, resume_after_us: u64) -> u64 {
    let anchor = now_us.max(resume_after_us.saturating_add(1));
    anchor.saturating_sub(first_event_us)
}

/// Logs a failing disk once per episode, and when it recovers.
#[derive(Default)]
struct StorageHealth {
    failing: bool,
}

impl StorageHealth {
    fn refused(&mut self, why: &str) {
        if !self.failing {
            self.failing = true;
            log::error!(
                "records are not stored: {why} (counted as `not stored` in the progress lines)"
            );
        }
    }

    fn stored(&mut self) {
        if self.failing {
            self.failing = false;
            log::warn!("storing records again: writing to disk works");
        }
    }
}

/// The ingest thread's state: the writer, the declared sources, the
/// reorder stage and the OTLP stage.
pub struct Ingest {
    writer: Writer,
    counters: Arc<Counters>,
    cfg: IngestConfig,
    sources: SourceTable<Source>,
    offset: Option<u64>,
    first_stored: Option<u64>,
    errors: u64,
    health: StorageHealth,
    reorder: Option<Reorder<WireRecord>>,
    ready: Vec<Timed<WireRecord>>,
    otlp: OtlpStage,
    /// Arrival mode: the newest arrival time given (arrival times never go back).
    arrival_clock: u64,
    /// Durable OTLP acknowledgements: the log OTLP records go to first.
    intake: Option<IntakeLog>,
    /// Slots of tagged sources (version-2 senders) by (tag set, source key).
    tagged: FxHashMap<(u64, SourceKey), usize>,
    /// Acknowledged senders' frames on their way to durable.
    acks: Option<AckTracker>,
}

impl Ingest {
    /// Ingest state around `writer`; OTLP records go through `otlp`.
    pub fn new(
        writer: Writer,
        counters: Arc<Counters>,
        cfg: IngestConfig,
        otlp: OtlpStage,
    ) -> Self {
        // Senders whose records carry wall-clock times (version 2) are
        // stored at those times in either mode, so the stage exists
        // whenever a window is set; arrival-time records bypass it.
        let reorder_us = cfg.reorder_window_us;
        Ingest {
            writer,
            counters,
            sources: SourceTable::default(),
            offset: None,
            first_stored: None,
            errors: 0,
            health: StorageHealth::default(),
            reorder: (reorder_us > 0).then(|| Reorder::new(reorder_us)),
            ready: Vec::new(),
            otlp,
            arrival_clock: cfg.resume_after_us,
            intake: None,
            acks: cfg.acks.clone().map(AckTracker::new),
            cfg,
            tagged: FxHashMap::default(),
        }
    }

    /// Declares source `id` with `schema`; its slot, or `None` (counted,
    /// logged) when the engine refuses it.
    #[cold]
    fn declare(&mut self, id: u64, key: Option<SourceKey>, schema: SourceSchema) -> Option<usize> {
        // A source the store holds was counted at start; a new one takes
        // room under the one series limit or is refused (counted).
        let stored = self.writer.handle_of(SourceId(id)).is_some();
        if !stored && !self.counters.series.try_take() {
            if self.counters.series.refused() <= 10 {
                log::warn!(
                    "series {} refused: the limit of {} series is reached (--max-series)",
                    crate::sources::describe(&schema),
                    self.counters.series.max()
                );
            }
            return None;
        }
        match self.writer.declare(SourceId(id), schema) {
            Ok(handle) => {
                log::info!(
                    "declared source {} ({id:#x})",
                    telemetry::source::describe(id).unwrap_or_default()
                );
                let source = if stored {
                    self.resumed(handle, SourceId(id))
                } else {
                    Source::new(SourceId(id), handle, 0)
                };
                Some(self.sources.insert(id, key, source))
            }
            Err(e) => {
                self.errors += 1;
                if self.errors <= 10 {
                    log::error!("cannot declare source {id:#x}: {e}");
                }
                None
            }
        }
    }

    /// A source the store held at start: it continues after its newest
    /// stored record, and knows how many records sit at that time (an
    /// acknowledged sender's resends are matched against them).
    #[cold]
    fn resumed(&self, handle: loom::SourceHandle, id: SourceId) -> Source {
        let reader = self.writer.reader();
        match reader.snapshot().latest_timestamp(id) {
            Some(last) => {
                Source::resumed(id, handle, last, reader.count(id, last, last).unwrap_or(0))
            }
            None => Source::new(id, handle, 0),
        }
    }

    /// Where the reorder stage has released everything: every record it
    /// holds is later (`None`: it holds nothing).
    fn released_through(&self) -> Option<u64> {
        self.reorder.as_ref().and_then(|r| r.released_through())
    }

    /// The slot of the telemetry source `key`, declared on first sight.
    #[inline]
    fn slot_of(&mut self, key: SourceKey) -> Option<usize> {
        match self.sources.lookup(key) {
            Some(i) => Some(i),
            None => match self.sources.lookup_id(key.id()) {
                Some(i) => {
                    self.sources.bind(key, i);
                    Some(i)
                }
                None => self.declare(key.id(), Some(key), schema_of(&key.series())),
            },
        }
    }

    /// Sets the event-time offset at the first record of the run.
    fn anchor(&mut self, first_event_us: u64) {
        if self.cfg.timestamps == TimestampMode::Event && self.offset.is_none() {
            let o = self.cfg.event_offset_us.unwrap_or_else(|| {
                event_offset(first_event_us, epoch_us(), self.cfg.resume_after_us)
            });
            log::info!("event times are stored + {o} µs");
            self.offset = Some(o);
        }
    }
    /// Releases everything the reorder stages hold (end of ingest).
    fn flush_reorder(&mut self) {
        if let Some(stage) = self.reorder.as_mut() {
            let mut ready = Vec::new();
            stage.flush(&mut ready);
            let mut t = Tally::default();
            self.store_all(&ready, &mut t);
            self.account(t);
        }
        if let Some(acks) = self.acks.as_mut() {
            acks.settle(None);
        }
        let t = self.otlp.flush(&mut self.writer, self.intake.as_mut());
        self.account(t);
    }

    /// Takes one OTLP request's records: refuses late ones, answers the
    /// request's handler, then holds or stores them. A request its
    /// handler logged raw (in intake-log file `logged`) is in the log
    /// already: its count there becomes its records'. Otherwise (`/write`)
    /// the records taken are logged now, when acknowledgements are
    /// durable, and the answer names the position covering them.
    /// `not_stored` in the answer counts what admission refused; a held
    /// record the engine refuses later is counted in the progress line.
    fn otlp(
        &mut self,
        records: Vec<otlp::Shaped>,
        answer: Option<tokio::sync::oneshot::Sender<Taken>>,
        logged: Option<FileNo>,
    ) {
        let mut t = Tally::default();
        let records = self.otlp.admit(&mut self.writer, records, &mut t);
        let (file, position): (FileNo, Option<u64>) = match (self.intake.as_mut(), logged) {
            (Some(log), Some(f)) => {
                log.taken(f, records.len() as u64);
                (f, None)
            }
            (Some(log), None) if !records.is_empty() => {
                let (f, p) = log.append(&records);
                (f, Some(p))
            }
            _ => (0, None),
        };
        let taken = Taken {
            position,
            late: t.late,
            not_stored: t.skipped + t.refused,
        };
        if let Some(a) = answer {
            // A handler that gave up meanwhile drops its end: fine.
            let _ = a.send(taken);
        }
        self.otlp.add(
            &mut self.writer,
            records,
            file,
            &mut t,
            self.intake.as_mut(),
        );
        self.otlp.published(&self.writer);
        self.account(t);
    }

    /// Records held by the reorder stages.
    fn held(&self) -> usize {
        self.reorder.as_ref().map_or(0, |r| r.held()) + self.otlp.held()
    }

    /// Pushes one record of the source in `slot` at `ts` (see [`Source::push`]).
    #[inline]
    fn push(&mut self, slot: usize, ts: u64, bytes: &[u8], t: &mut Tally) {
        let Some(src) = self.sources.get_mut(slot) else {
            t.skipped += 1;
            return;
        };
        match src.push(&mut self.writer, ts, bytes, t) {
            Ok(()) => {}
            Err(loom::Error::StorageFailing(why)) => self.health.refused(&why),
            Err(e) => {
                self.errors += 1;
                if self.errors <= 10 {
                    log::error!("push failed: {e}");
                }
            }
        }
    }

    /// Adds a tally to the shared counters.
    pub fn account(&mut self, t: Tally) {
        if t.ingested > 0 {
            self.health.stored();
        }
        let c = &self.counters;
        c.records_ingested.fetch_add(t.ingested, Ordering::Relaxed);
        c.records_late.fetch_add(t.late, Ordering::Relaxed);
        c.records_late_stored
            .fetch_add(t.late_stored, Ordering::Relaxed);
        c.records_duplicate
            .fetch_add(t.duplicates, Ordering::Relaxed);
        c.records_refused.fetch_add(t.refused, Ordering::Relaxed);
        c.recv
            .records_skipped
            .fetch_add(t.skipped, Ordering::Relaxed);
        if t.ingested > 0 {
            let n = t.newest;
            c.now_us.fetch_max(n, Ordering::Relaxed);
            if self.first_stored.is_none() {
                self.first_stored = Some(n);
                c.first_us.store(n, Ordering::Relaxed);
            }
        }
    }

    /// Makes everything pushed durable; then the intake-log files whose
    /// records were all pushed before are deleted.
    fn persist(&mut self) {
        let stored = self.intake.as_mut().map(|l| l.stored_files());
        let marks = self.acks.as_ref().map(|a| a.marks());
        match self.writer.persist() {
            Ok(()) => {
                if let (Some(acks), Some(marks)) = (self.acks.as_mut(), marks) {
                    acks.persisted(marks);
                }
                if let (Some(log), Some(files)) = (self.intake.as_mut(), stored) {
                    log.delete(files);
                }
            }
            Err(e) => {
                self.counters
                    .persist_failures
                    .fetch_add(1, Ordering::Relaxed);
                match e {
                    loom::Error::StorageFailing(why) => self.health.refused(&why),
                    e => log::error!("persist failed: {e}"),
                }
            }
        }
    }
}

impl Ingest {
    /// Tells the store how full the receive queue is (the larger of its
    /// messages and bytes against their limits), so that its flusher
    /// compresses cheaper before the queue overflows and records are
    /// dropped.
    fn tell_backlog(&self, rx: &Receiver<Msg>) {
        let by_msgs = rx.capacity().map_or(0, |cap| rx.len() * 100 / cap.max(1));
        let queued = self.counters.recv.queued_bytes.load(Ordering::Relaxed);
        let by_bytes = queued.saturating_mul(100) / self.cfg.queue_max_bytes.max(1);
        let percent = (by_msgs as u64).max(by_bytes).min(100) as u8;
        self.writer.set_ingest_backlog(percent);
    }
}

/// Runs until shutdown, the connection limit or the cut-off; persists before
/// it returns the writer. OTLP records go through `otlp`, their own stage,
/// and, with durable acknowledgements, through `intake` first (whose
/// leftover records from an earlier run are stored again first).
pub fn run(
    writer: Writer,
    rx: Receiver<Msg>,
    pool: BufferPool,
    counters: Arc<Counters>,
    shutdown: Arc<AtomicBool>,
    (cfg, otlp, intake): (IngestConfig, OtlpStage, Option<(IntakeLog, Leftover)>),
) -> (Writer, IngestEnd) {
    let mut ing = Ingest::new(writer, Arc::clone(&counters), cfg, otlp);
    if let Some((mut log, left)) = intake {
        if !left.is_empty() {
            let n = left.len();
            let (taken, t) = ing.otlp.replay(&mut ing.writer, left, &mut log);
            ing.account(t);
            println!(
                "intake log: {n} OTLP records from before a crash, {taken} not stored yet and taken again, {} stored already",
                n as u64 - taken
            );
        }
        ing.intake = Some(log);
    }
    let mut ended = 0u64;
    let mut last_batch = Instant::now();
    let mut last_sync = Instant::now();
    let mut last_persist = Instant::now();
    let mut dirty = false;
    let end = loop {
        if shutdown.load(Ordering::Relaxed) {
            break IngestEnd::Shutdown;
        }
        // Wake up when a sync is due even if nothing arrives.
        let wait = if dirty {
            ing.cfg.sync_interval.saturating_sub(last_sync.elapsed())
        } else {
            IDLE_WAIT
        };
        match rx.recv_timeout(wait) {
            Ok(Msg::Frames(f)) => {
                last_batch = Instant::now();
                ing.tell_backlog(&rx);
                ing.frames(&f);
                pool.give(f.into_payload());
                dirty = true;
                if let (Some(cut), Some(first)) = (ing.cfg.stop_after_data_us, ing.first_stored) {
                    if counters.now_us.load(Ordering::Relaxed) - first >= cut {
                        break IngestEnd::CutOff;
                    }
                }
            }
            Ok(Msg::Otlp(records, answer, logged)) => {
                last_batch = Instant::now();
                ing.otlp(records, answer, logged);
                dirty = true;
            }
            Ok(Msg::ConnectionEnded) => {
                ended += 1;
                if ing.cfg.stop_after_connections.is_some_and(|n| ended >= n) {
                    break IngestEnd::ConnectionsEnded;
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                // Nothing newer will push held records past the window while
                // the senders are quiet: release them so they become visible
                // (and durable) instead of waiting for the next batch.
                if ing.held() > 0 && last_batch.elapsed() >= REORDER_IDLE_RELEASE {
                    ing.flush_reorder();
                    dirty = true;
                }
            }
            Err(RecvTimeoutError::Disconnected) => break IngestEnd::Shutdown,
        }
        let acks_due = ing.acks.as_ref().is_some_and(|a| a.due());
        if last_persist.elapsed() >= ing.cfg.persist_interval
            || (acks_due && last_persist.elapsed() >= ing.cfg.ack_interval)
        {
            ing.persist();
            last_persist = Instant::now();
            last_sync = last_persist;
            dirty = false;
        } else if dirty {
            // Publish when the interval is up, or early when the queue is
            // empty (the data is then as fresh as it gets) but not more than
            // once per MIN_SYNC_GAP: each sync pins the active buffers.
            let since = last_sync.elapsed();
            if since >= ing.cfg.sync_interval || (rx.is_empty() && since >= MIN_SYNC_GAP) {
                ing.writer.sync();
                last_sync = Instant::now();
                dirty = false;
            }
        }
    };
    ing.flush_reorder();
    counters.recv.ingest_stopped.store(true, Ordering::SeqCst);
    // Frames still queued will not be ingested: count them as skipped.
    for msg in rx.try_iter() {
        let n = match msg {
            Msg::Frames(f) => f.records,
            Msg::Otlp(records, _, _) => records.len() as u64,
            Msg::ConnectionEnded => 0,
        };
        endpoint::Counters::add(&counters.recv.records_skipped, n);
    }
    ing.persist();
    // Every commit written (acknowledged) before the writer goes.
    if let Some(mut log) = ing.intake.take() {
        log.close();
    }
    if ing.errors > 0 {
        log::warn!("{} records could not be stored", ing.errors);
    }
    (ing.writer, end)
}
