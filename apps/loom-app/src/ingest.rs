//! The single ingest thread: owns the engine writer, declares sources on
//! first sight and pushes every record.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use loom::{SourceHandle, SourceId, Writer};

use crate::counters::Counters;
use crate::receive::Msg;
use crate::sources::index_for;

/// Which timestamp records are stored under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TimestampMode {
    /// Arrival time of the batch at this app, µs since app start.
    Arrival,
    /// The record's own timestamp (start time for KV ops and syscalls).
    Event,
}

/// Ingest settings.
pub struct IngestConfig {
    /// Which timestamp to store.
    pub timestamps: TimestampMode,
    /// Publish to readers at least this often.
    pub sync_interval: Duration,
    /// End after this many connections have ended.
    pub stop_after_connections: Option<u64>,
    /// Stop ingesting once the data time reaches this (µs); ablation.
    pub stop_at_us: Option<u64>,
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

/// Runs until shutdown, the connection limit or the cut-off; syncs before it
/// returns the writer.
pub fn run(
    mut writer: Writer,
    rx: Receiver<Msg>,
    counters: Arc<Counters>,
    shutdown: Arc<AtomicBool>,
    cfg: IngestConfig,
) -> (Writer, IngestEnd) {
    let mut sources: HashMap<u64, Source> = HashMap::new();
    let mut buf = Vec::with_capacity(64);
    let mut ended = 0u64;
    let mut last_sync = Instant::now();
    let mut dirty = false;
    let mut push_errors = 0u64;
    let end = loop {
        if shutdown.load(Ordering::Relaxed) {
            break IngestEnd::Shutdown;
        }
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(Msg::Batch { arrival_us, batch }) => {
                let mut ingested = 0u64;
                let mut clamped = 0u64;
                let mut newest = 0u64;
                for r in &batch.records {
                    let id = r.source_id();
                    let src = match sources.get_mut(&id) {
                        Some(s) => s,
                        None => {
                            match writer.declare_source(SourceId(id), Some(index_for(r.kind()))) {
                                Ok(handle) => {
                                    log::info!(
                                        "declared source {} ({id:#x})",
                                        telemetry::source::describe(id).unwrap_or_default()
                                    );
                                    sources.entry(id).or_insert(Source { handle, last_ts: 0 })
                                }
                                Err(e) => {
                                    push_errors += 1;
                                    if push_errors <= 10 {
                                        log::error!("cannot declare source {id:#x}: {e}");
                                    }
                                    continue;
                                }
                            }
                        }
                    };
                    let mut ts = match cfg.timestamps {
                        TimestampMode::Arrival => arrival_us,
                        TimestampMode::Event => r.timestamp_us(),
                    };
                    if ts < src.last_ts {
                        ts = src.last_ts;
                        clamped += 1;
                    }
                    buf.clear();
                    r.encode_into(&mut buf);
                    match writer.push(src.handle, ts, &buf) {
                        Ok(_) => {
                            src.last_ts = ts;
                            ingested += 1;
                            newest = newest.max(ts);
                        }
                        Err(e) => {
                            push_errors += 1;
                            if push_errors <= 10 {
                                log::error!("push failed: {e}");
                            }
                        }
                    }
                }
                counters
                    .records_ingested
                    .fetch_add(ingested, Ordering::Relaxed);
                counters
                    .records_clamped
                    .fetch_add(clamped, Ordering::Relaxed);
                let skipped = batch.records.len() as u64 - ingested;
                counters
                    .records_skipped
                    .fetch_add(skipped, Ordering::Relaxed);
                counters.now_us.fetch_max(newest, Ordering::Relaxed);
                dirty = true;
                if let Some(cut) = cfg.stop_at_us {
                    if counters.now_us.load(Ordering::Relaxed) >= cut {
                        break IngestEnd::CutOff;
                    }
                }
            }
            Ok(Msg::ConnectionEnded) => {
                ended += 1;
                if cfg.stop_after_connections.is_some_and(|n| ended >= n) {
                    break IngestEnd::ConnectionsEnded;
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break IngestEnd::Shutdown,
        }
        if dirty && (rx.is_empty() || last_sync.elapsed() >= cfg.sync_interval) {
            writer.sync();
            last_sync = Instant::now();
            dirty = false;
        }
    };
    counters.ingest_stopped.store(true, Ordering::SeqCst);
    // Batches still queued will not be ingested: count them as skipped.
    for msg in rx.try_iter() {
        if let Msg::Batch { batch, .. } = msg {
            let n = batch.records.len() as u64;
            counters.records_skipped.fetch_add(n, Ordering::Relaxed);
        }
    }
    writer.sync();
    if push_errors > 0 {
        log::warn!("{push_errors} records could not be stored");
    }
    (writer, end)
}
