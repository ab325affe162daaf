//! The single ingest thread: owns the engine writer, declares each source
//! by its data-model schema on first sight, maps record times onto the
//! epoch, pushes every record, publishes to readers every few ms and makes
//! data durable every persist interval.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use loom::{SourceHandle, SourceId, Writer};

use crate::counters::Counters;
use crate::otlp_ingest::OtlpStage;
use crate::receive::Msg;
use crate::reorder::Reorder;
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

struct Source {
    handle: SourceHandle,
    last_ts: u64,
}

/// Wall-clock time, µs since the Unix epoch.
pub fn epoch_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
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

/// What happened to the records of one batch.
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) ingested: u64,
    pub(crate) clamped: u64,
    pub(crate) refused: u64,
    pub(crate) skipped: u64,
    pub(crate) newest: Option<u64>,
}

struct Ingest {
    writer: Writer,
    counters: Arc<Counters>,
    cfg: IngestConfig,
    sources: HashMap<u64, Source>,
    buf: Vec<u8>,
    offset: Option<u64>,
    first_stored: Option<u64>,
    errors: u64,
    health: StorageHealth,
    reorder: Option<Reorder>,
    ready: Vec<(u64, telemetry::Record)>,
    otlp: OtlpStage,
}

impl Ingest {
    /// The source of `r`, whose id is `id`, declared on first sight.
    fn source(&mut self, id: u64, r: &telemetry::Record) -> Option<&mut Source> {
        if !self.sources.contains_key(&id) {
            let schema = schema_of(&r.series());
            match self.writer.declare(SourceId(id), schema) {
                Ok(handle) => {
                    log::info!(
                        "declared source {} ({id:#x})",
                        telemetry::source::describe(id).unwrap_or_default()
                    );
                    self.sources.insert(id, Source { handle, last_ts: 0 });
                }
                Err(e) => {
                    self.errors += 1;
                    if self.errors <= 10 {
                        log::error!("cannot declare source {id:#x}: {e}");
                    }
                    return None;
                }
            }
        }
        self.sources.get_mut(&id)
    }

    /// Takes one batch: event mode with a reorder window holds its records
    /// until their time is released; everything else is stored at once.
    fn batch(&mut self, arrival_us: u64, batch: &telemetry::Batch) {
        if self.cfg.timestamps == TimestampMode::Event && self.offset.is_none() {
            if let Some(first) = batch.records.first() {
                let o = self.cfg.event_offset_us.unwrap_or_else(|| {
                    event_offset(first.timestamp_us(), epoch_us(), self.cfg.resume_after_us)
                });
                log::info!("event times are stored + {o} µs");
                self.offset = Some(o);
            }
        }
        let offset = self.offset.unwrap_or(0);
        let mode = self.cfg.timestamps;
        let time = |r: &telemetry::Record| match mode {
            TimestampMode::Arrival => arrival_us,
            TimestampMode::Event => r.timestamp_us().saturating_add(offset),
        };
        match self.reorder.as_mut() {
            Some(stage) => {
                for r in &batch.records {
                    stage.add(time(r), *r);
                }
                let mut ready = std::mem::take(&mut self.ready);
                stage.release(&mut ready);
                self.store_all(&ready);
                ready.clear();
                self.ready = ready;
            }
            None => {
                let mut t = Tally::default();
                for r in &batch.records {
                    self.store(time(r), r, &mut t);
                }
                self.account(t);
            }
        }
    }

    /// Stores records released by the reorder stage.
    fn store_all(&mut self, ready: &[(u64, telemetry::Record)]) {
        let mut t = Tally::default();
        for (ts, r) in ready {
            self.store(*ts, r, &mut t);
        }
        self.account(t);
    }

    /// Releases everything the reorder stages hold (end of ingest).
    fn flush_reorder(&mut self) {
        if let Some(stage) = self.reorder.as_mut() {
            let mut ready = Vec::new();
            stage.flush(&mut ready);
            self.store_all(&ready);
        }
        let t = self.otlp.flush(&mut self.writer);
        self.account(t);
    }

    /// Records held by the reorder stages.
    fn held(&self) -> usize {
        self.reorder.as_ref().map_or(0, |r| r.held()) + self.otlp.held()
    }

    /// Pushes one record at `ts` (raised to its source's newest time when
    /// older: a record that came after its time was released).
    fn store(&mut self, ts: u64, r: &telemetry::Record, t: &mut Tally) {
        // Computed once per record: a syscall's id hashes a formatted tag.
        let id = r.source_id();
        let Some(src) = self.source(id, r) else {
            t.skipped += 1;
            return;
        };
        let mut ts = ts;
        if ts < src.last_ts {
            ts = src.last_ts;
            t.clamped += 1;
        }
        let handle = src.handle;
        self.buf.clear();
        r.encode_into(&mut self.buf);
        match self.writer.push(handle, ts, &self.buf) {
            Ok(_) => {
                if let Some(s) = self.sources.get_mut(&id) {
                    s.last_ts = ts;
                }
                t.ingested += 1;
                t.newest = Some(t.newest.map_or(ts, |n: u64| n.max(ts)));
            }
            Err(loom::Error::StorageFailing(why)) => {
                t.refused += 1;
                self.health.refused(&why);
            }
            Err(e) => {
                t.refused += 1;
                self.errors += 1;
                if self.errors <= 10 {
                    log::error!("push failed: {e}");
                }
            }
        }
    }

    fn account(&mut self, t: Tally) {
        if t.ingested > 0 {
            self.health.stored();
        }
        let c = &self.counters;
        c.records_ingested.fetch_add(t.ingested, Ordering::Relaxed);
        c.records_clamped.fetch_add(t.clamped, Ordering::Relaxed);
        c.records_refused.fetch_add(t.refused, Ordering::Relaxed);
        c.records_skipped.fetch_add(t.skipped, Ordering::Relaxed);
        if let Some(n) = t.newest {
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
    counters: Arc<Counters>,
    shutdown: Arc<AtomicBool>,
    cfg: IngestConfig,
    otlp: OtlpStage,
) -> (Writer, IngestEnd) {
    let cfg_reorder_us = match cfg.timestamps {
        TimestampMode::Event => cfg.reorder_window_us,
        TimestampMode::Arrival => 0,
    };
    let mut ing = Ingest {
        writer,
        counters: Arc::clone(&counters),
        cfg,
        sources: HashMap::new(),
        buf: Vec::with_capacity(64),
        offset: None,
        first_stored: None,
        errors: 0,
        health: StorageHealth::default(),
        reorder: (cfg_reorder_us > 0).then(|| Reorder::new(cfg_reorder_us)),
        ready: Vec::new(),
        otlp,
    };
    let mut ended = 0u64;
    let mut last_batch = Instant::now();
    let mut last_sync = Instant::now();
    let mut last_persist = Instant::now();
    let mut dirty = false;
    let end = loop {
        if shutdown.load(Ordering::Relaxed) {
            break IngestEnd::Shutdown;
        }
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(Msg::Batch { arrival_us, batch }) => {
                last_batch = Instant::now();
                ing.batch(arrival_us, &batch);
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
        } else if dirty && (rx.is_empty() || last_sync.elapsed() >= ing.cfg.sync_interval) {
            ing.writer.sync();
            last_sync = Instant::now();
            dirty = false;
        }
    };
    ing.flush_reorder();
    counters.ingest_stopped.store(true, Ordering::SeqCst);
    // Batches still queued will not be ingested: count them as skipped.
    for msg in rx.try_iter() {
        let n = match msg {
            Msg::Batch { batch, .. } => batch.records.len() as u64,
            Msg::Otlp(records) => records.len() as u64,
            Msg::ConnectionEnded => 0,
        };
        counters.records_skipped.fetch_add(n, Ordering::Relaxed);
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

    #[test]
    fn event_offset_lands_at_now_or_after_the_store() {
        assert_eq!(event_offset(1_000, 5_000_000, 0), 4_999_000);
        assert_eq!(event_offset(1_000, 5_000_000, 9_000_000), 8_999_001);
        assert_eq!(event_offset(10_000_000, 5_000, 0), 0);
    }
}
