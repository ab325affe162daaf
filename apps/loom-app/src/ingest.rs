//! The single ingest thread: owns the engine writer, declares each source
//! by its data-model schema on first sight, maps record times onto the
//! epoch, pushes every record, publishes to readers every few ms and makes
//! data durable every persist interval.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use endpoint::{BufferPool, Frames, SeriesContext};
use loom::{SourceHandle, SourceId, SourceSchema, Writer};
use rustc_hash::FxHashMap;
use telemetry::raw::{self, SourceKey};

use crate::counters::Counters;
use crate::otlp_ingest::OtlpStage;
use crate::receive::Msg;
use crate::reorder::{Reorder, Timed, WireRecord};
use crate::source_table::SourceTable;
use crate::sources::schema_of;

/// Which timestamp records are stored under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TimestampMode {
    /// Arrival time of the batch at this app: wall clock, µs since the Unix epoch.
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

/// What an ingest path keeps of a declared source: its handle and the
/// newest time pushed (the engine takes each source in time order).
pub struct Source {
    handle: SourceHandle,
    last_ts: u64,
}

impl Source {
    /// A source whose newest stored record is at `last_ts` (0: none).
    pub fn new(handle: SourceHandle, last_ts: u64) -> Self {
        Source { handle, last_ts }
    }

    /// Pushes one record at `ts`, raised to the source's newest time when
    /// older (a record that came after its time was released), and counts
    /// it into `t`; a refused record is counted and its error returned for
    /// the caller to report.
    #[inline]
    pub fn push(
        &mut self,
        w: &mut Writer,
        ts: u64,
        bytes: &[u8],
        t: &mut Tally,
    ) -> Result<(), loom::Error> {
        let mut ts = ts;
        if ts < self.last_ts {
            ts = self.last_ts;
            t.clamped += 1;
        }
        match w.push(self.handle, ts, bytes) {
            Ok(_) => {
                self.last_ts = ts;
                t.ingested += 1;
                t.newest = t.newest.max(ts);
                Ok(())
            }
            Err(e) => {
                t.refused += 1;
                Err(e)
            }
        }
    }
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

/// What happened to the records of one message.
#[derive(Default)]
pub struct Tally {
    pub(crate) ingested: u64,
    pub(crate) clamped: u64,
    pub(crate) refused: u64,
    pub(crate) skipped: u64,
    pub(crate) newest: u64,
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
    /// Slots of tagged sources (version-2 senders) by (tag set, source key).
    tagged: FxHashMap<(u64, SourceKey), usize>,
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
            cfg,
            sources: SourceTable::default(),
            offset: None,
            first_stored: None,
            errors: 0,
            health: StorageHealth::default(),
            reorder: (reorder_us > 0).then(|| Reorder::new(reorder_us)),
            ready: Vec::new(),
            otlp,
            tagged: FxHashMap::default(),
        }
    }

    /// Declares source `id` with `schema`; its slot, or `None` (counted,
    /// logged) when the engine refuses it.
    #[cold]
    fn declare(&mut self, id: u64, key: Option<SourceKey>, schema: SourceSchema) -> Option<usize> {
        // A source the store holds was counted at start; a new one takes
        // room under the one series limit or is refused (counted).
        if self.writer.handle_of(SourceId(id)).is_none() && !self.counters.series.try_take() {
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
                Some(self.sources.insert(id, key, Source::new(handle, 0)))
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

    /// The slot of source `key` under the tags of `ctx`, declared on first
    /// sight.
    fn tagged_slot(&mut self, ctx: &SeriesContext, key: SourceKey) -> Option<usize> {
        if let Some(&i) = self.tagged.get(&(ctx.key, key)) {
            return Some(i);
        }
        let id = ctx.source_id(&key.tag());
        let i = match self.sources.lookup_id(id) {
            Some(i) => i,
            None => self.declare(id, None, schema_of(&ctx.series(key.series())))?,
        };
        self.tagged.insert((ctx.key, key), i);
        Some(i)
    }

    /// Takes one group of frames, run by run of series context: records
    /// of untagged runs go by the app's timestamp mode; tagged runs
    /// (version-2 senders) get their tags, and their own times when the
    /// sender stamps wall-clock time. Event times go through the reorder
    /// stage when it is on; everything else is pushed straight from the
    /// wire bytes.
    fn frames(&mut self, f: &Frames) {
        let mut t = Tally::default();
        let mut records = f.records();
        let mut held = false;
        for run in f.runs() {
            let part = records.by_ref().take(run.records as usize);
            match run.context {
                None => held |= self.untagged(f.arrival_us, part, &mut t),
                Some(ctx) => held |= self.tagged(&ctx, f.arrival_us, part, &mut t),
            }
        }
        if held {
            let mut ready = std::mem::take(&mut self.ready);
            if let Some(stage) = self.reorder.as_mut() {
                stage.release(&mut ready);
            }
            self.store_all(&ready, &mut t);
            ready.clear();
            self.ready = ready;
        }
        self.account(t);
    }

    /// Records without added tags; true when some went to the reorder stage.
    fn untagged<'a>(
        &mut self,
        arrival_us: u64,
        mut part: impl Iterator<Item = (telemetry::Kind, &'a [u8])>,
        t: &mut Tally,
    ) -> bool {
        let Some(first) = part.next() else {
            return false;
        };
        self.anchor(raw::event_time(first.0, first.1));
        let offset = self.offset.unwrap_or(0);
        let event = self.cfg.timestamps == TimestampMode::Event;
        for (kind, body) in std::iter::once(first).chain(part) {
            let Some(i) = self.slot_of(SourceKey::of(kind, body)) else {
                t.skipped += 1;
                continue;
            };
            if event {
                let ts = raw::event_time(kind, body).saturating_add(offset);
                self.place(i, ts, kind, body, t);
            } else {
                self.push(i, arrival_us, body, t);
            }
        }
        event && self.reorder.is_some()
    }

    /// Records of one series context; true when some went to the reorder stage.
    fn tagged<'a>(
        &mut self,
        ctx: &SeriesContext,
        arrival_us: u64,
        part: impl Iterator<Item = (telemetry::Kind, &'a [u8])>,
        t: &mut Tally,
    ) -> bool {
        let event = ctx.wall_clock || self.cfg.timestamps == TimestampMode::Event;
        for (kind, body) in part {
            let Some(i) = self.tagged_slot(ctx, SourceKey::of(kind, body)) else {
                t.skipped += 1;
                continue;
            };
            if ctx.wall_clock {
                self.place(i, raw::event_time(kind, body), kind, body, t);
            } else if event {
                self.anchor(raw::event_time(kind, body));
                let ts = raw::event_time(kind, body).saturating_add(self.offset.unwrap_or(0));
                self.place(i, ts, kind, body, t);
            } else {
                self.push(i, arrival_us, body, t);
            }
        }
        event && self.reorder.is_some()
    }

    /// A record at its event time: into the reorder stage when it is on,
    /// else pushed.
    #[inline]
    fn place(&mut self, slot: usize, ts: u64, kind: telemetry::Kind, body: &[u8], t: &mut Tally) {
        match self.reorder.as_mut() {
            Some(stage) => stage.add(ts, WireRecord::new(slot, kind, body)),
            None => self.push(slot, ts, body, t),
        }
    }

    /// Stores records released by the reorder stage.
    fn store_all(&mut self, ready: &[Timed<WireRecord>], t: &mut Tally) {
        for (ts, r) in ready {
            self.push(r.slot(), *ts, r.bytes(), t);
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
        let t = self.otlp.flush(&mut self.writer);
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
        c.records_clamped.fetch_add(t.clamped, Ordering::Relaxed);
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

    fn persist(&mut self) {
        if let Err(e) = self.writer.persist() {
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

/// Runs until shutdown, the connection limit or the cut-off; persists before
/// it returns the writer. OTLP records go through `otlp`, their own stage.
pub fn run(
    writer: Writer,
    rx: Receiver<Msg>,
    pool: BufferPool,
    counters: Arc<Counters>,
    shutdown: Arc<AtomicBool>,
    (cfg, otlp): (IngestConfig, OtlpStage),
) -> (Writer, IngestEnd) {
    let mut ing = Ingest::new(writer, Arc::clone(&counters), cfg, otlp);
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
                ing.frames(&f);
                pool.give(f.into_payload());
                dirty = true;
                if let (Some(cut), Some(first)) = (ing.cfg.stop_after_data_us, ing.first_stored) {
                    if counters.now_us.load(Ordering::Relaxed) - first >= cut {
                        break IngestEnd::CutOff;
                    }
                }
            }
            Ok(Msg::Otlp(records)) => {
                last_batch = Instant::now();
                let t = ing.otlp.take(&mut ing.writer, records);
                ing.account(t);
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
        if last_persist.elapsed() >= ing.cfg.persist_interval {
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
            Msg::Otlp(records) => records.len() as u64,
            Msg::ConnectionEnded => 0,
        };
        endpoint::Counters::add(&counters.recv.records_skipped, n);
    }
    ing.persist();
    if ing.errors > 0 {
        log::warn!("{} records could not be stored", ing.errors);
    }
    (ing.writer, end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> IngestConfig {
        IngestConfig {
            timestamps: TimestampMode::Arrival,
            event_offset_us: None,
            resume_after_us: 0,
            sync_interval: Duration::from_millis(5),
            persist_interval: Duration::from_secs(1),
            stop_after_connections: None,
            reorder_window_us: 0,
            stop_after_data_us: None,
        }
    }

    /// Wire-form frames land in their record's source; a frame that
    /// arrives stamped earlier than the source's newest record is raised
    /// to it and counted.
    #[test]
    fn framed_records_are_pushed_in_order_per_source() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, reader) = loom::open(dir.path(), loom::Config::default()).unwrap();
        let counters = Arc::new(Counters::default());
        let otlp = OtlpStage::new(Arc::new(otlp::Registry::new(16, [])), 0);
        let mut ing = Ingest::new(writer, counters.clone(), config(), otlp);
        let read = SourceKey::Kv(false);
        let mut payload = vec![telemetry::Kind::KvOp as u8];
        telemetry::Record::KvOp(telemetry::KvOp {
            thread_id: 1,
            op: telemetry::KvOpKind::Read,
            start_us: 5,
            duration_us: 9,
        })
        .encode_into(&mut payload);
        for arrival in [100, 90, 200] {
            ing.frames(&Frames::new(arrival, payload.clone(), 1, 1));
        }
        ing.writer.sync();
        let snap = reader.snapshot();
        assert_eq!(snap.sources(), vec![SourceId(read.id())]);
        assert_eq!(snap.retained_count(SourceId(read.id())), 3);
        assert_eq!(snap.time_span(SourceId(read.id())), Some((100, 200)));
        assert_eq!(Counters::get(&counters.records_ingested), 3);
        assert_eq!(Counters::get(&counters.records_clamped), 1);
    }

    #[test]
    fn event_offset_lands_at_now_or_after_the_store() {
        assert_eq!(event_offset(1_000, 5_000_000, 0), 4_999_000);
        assert_eq!(event_offset(1_000, 5_000_000, 9_000_000), 8_999_001);
        assert_eq!(event_offset(10_000_000, 5_000, 0), 0);
    }
}
