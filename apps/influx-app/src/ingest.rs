//! The encoder thread: takes frames from the receive queue, decodes them, stamps every
//! record with its stored time, encodes it as a point and hands bodies of
//! `--batch-size` points to the writers. One thread, because the per-series
//! timestamp state ([`crate::points::Encoder`]) must see every record.
//!
//! When the writers fall behind, sending a body blocks this thread; the
//! receive queue then fills and receivers drop batches (default mode), or
//! the queue, unbounded, grows until the backlog is written (`--complete-data`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use crossbeam_channel::{Receiver, RecvTimeoutError};
use endpoint::BufferPool;
use tokio::sync::mpsc;

use crate::counters::Counters;
use crate::points::Encoder;
use crate::receive::{wall_clock_us, Msg};
use crate::writer::Body;

/// Which time a record is stored under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TimestampMode {
    /// The batch's wall-clock arrival time, µs since the Unix epoch.
    Arrival,
    /// The record's own time plus an offset fixed at the run's first record.
    Event,
}

/// Encoder settings.
#[derive(Debug, Clone)]
pub struct IngestConfig {
    /// Which time to store.
    pub timestamps: TimestampMode,
    /// Event mode: offset added to every record's time, µs; `None` = wall
    /// clock at the first record minus that record's time (data lands now).
    pub event_offset_us: Option<i64>,
    /// Points per /write body.
    pub batch_size: usize,
    /// Longest time a point waits for its body to fill before a shorter body
    /// is sent.
    pub max_linger: Duration,
    /// End after this many connections have ended.
    pub stop_after_connections: Option<u64>,
}

/// Why ingest ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IngestEnd {
    /// Shutdown requested (Ctrl-C).
    Shutdown,
    /// The requested number of connections ended.
    ConnectionsEnded,
}

/// What the encoder did.
#[derive(Debug, Clone)]
pub struct IngestReport {
    /// Why it ended.
    pub end: IngestEnd,
    /// When the last counted connection ended (the sender finished).
    pub last_connection_end: Option<Instant>,
    /// Event offset used, µs (`None` in arrival mode or without records).
    pub event_offset_us: Option<i64>,
    /// Records raised to keep their series in time order.
    pub raised: u64,
    /// Points moved to the next µs (more than 1000 in one µs of a series).
    pub spilled: u64,
    /// Field values saturated at `i64::MAX`.
    pub saturated: u64,
}

/// `t + offset`, clamped to the representable range.
pub fn offset_time(t_us: u64, offset_us: i64) -> u64 {
    (i128::from(t_us) + i128::from(offset_us)).clamp(0, i128::from(u64::MAX)) as u64
}

struct Pending {
    buf: Vec<u8>,
    points: u64,
    /// When the first point of the body was encoded.
    since: Option<Instant>,
}

impl Pending {
    fn flush(&mut self, tx: &mpsc::Sender<Body>, counters: &Counters) {
        if self.points == 0 {
            return;
        }
        let body = Body {
            bytes: Bytes::from(std::mem::take(&mut self.buf)),
            points: self.points,
        };
        Counters::add(&counters.points_encoded, self.points);
        if let Err(e) = tx.blocking_send(body) {
            // Writers are gone only when the runtime shut down.
            Counters::add(&counters.recv.records_dropped, e.0.points);
        }
        self.points = 0;
        self.since = None;
    }

    fn older_than(&self, d: Duration) -> bool {
        self.since.is_some_and(|t| t.elapsed() >= d)
    }
}

/// Runs until shutdown or the connection limit; flushes the last body before
/// it returns (dropping `tx` lets the writers finish).
pub fn run(
    rx: Receiver<Msg>,
    pool: BufferPool,
    tx: mpsc::Sender<Body>,
    counters: Arc<Counters>,
    shutdown: Arc<AtomicBool>,
    cfg: IngestConfig,
) -> IngestReport {
    let mut enc = Encoder::new();
    let mut pending = Pending {
        buf: Vec::new(),
        points: 0,
        since: None,
    };
    let mut offset: Option<i64> = match cfg.timestamps {
        TimestampMode::Event => cfg.event_offset_us,
        TimestampMode::Arrival => None,
    };
    let mut ended = 0u64;
    let mut last_end = None;
    let batch_size = cfg.batch_size.max(1) as u64;
    let mut records = Vec::new();
    let end = loop {
        if shutdown.load(Ordering::Relaxed) {
            break IngestEnd::Shutdown;
        }
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(Msg::Frames(f)) => {
                f.decode_into(&mut records);
                let arrival_us = f.arrival_us;
                pool.give(f.into_payload());
                let mut newest = 0u64;
                for r in &records {
                    let t = match cfg.timestamps {
                        TimestampMode::Arrival => arrival_us,
                        TimestampMode::Event => {
                            let off = *offset.get_or_insert_with(|| {
                                wall_clock_us() as i64 - r.timestamp_us() as i64
                            });
                            offset_time(r.timestamp_us(), off)
                        }
                    };
                    pending.since.get_or_insert_with(Instant::now);
                    let ns = enc.encode(r, t, &mut pending.buf);
                    newest = newest.max(ns / 1000);
                    pending.points += 1;
                    if pending.points >= batch_size {
                        pending.flush(&tx, &counters);
                    }
                }
                counters.now_us.fetch_max(newest, Ordering::Relaxed);
                // Bodies are sent full, except that a slow stream must not
                // leave points waiting: each /write costs influxd a WAL fsync,
                // so many small bodies would slow it down.
                if pending.older_than(cfg.max_linger) {
                    pending.flush(&tx, &counters);
                }
            }
            Ok(Msg::ConnectionEnded { at }) => {
                ended += 1;
                last_end = Some(at);
                if cfg.stop_after_connections.is_some_and(|n| ended >= n) {
                    break IngestEnd::ConnectionsEnded;
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                if pending.older_than(cfg.max_linger) {
                    pending.flush(&tx, &counters);
                }
            }
            Err(RecvTimeoutError::Disconnected) => break IngestEnd::Shutdown,
        }
    };
    pending.flush(&tx, &counters);
    IngestReport {
        end,
        last_connection_end: last_end,
        event_offset_us: offset.filter(|_| cfg.timestamps == TimestampMode::Event),
        raised: enc.raised(),
        spilled: enc.spilled(),
        saturated: enc.saturated(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_clamp() {
        assert_eq!(offset_time(10, 5), 15);
        assert_eq!(offset_time(10, -20), 0);
        assert_eq!(offset_time(u64::MAX, 1), u64::MAX);
    }
}
