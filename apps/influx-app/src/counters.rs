//! Counters shared by receivers, the encoder, the writers and the reporter.

use std::sync::atomic::{AtomicU64, Ordering};

/// Monotonic counters since app start. "Received" counts every record of every
/// valid frame; "dropped" counts records lost on the way to influxd: batches
/// discarded on a full queue and points of /write requests that failed.
#[derive(Default)]
pub struct Counters {
    /// Connections accepted.
    pub connections: AtomicU64,
    /// Connections closed because of a bad frame.
    pub bad_connections: AtomicU64,
    /// Batches in valid frames.
    pub batches_received: AtomicU64,
    /// Records in valid frames.
    pub records_received: AtomicU64,
    /// Batches discarded on a full queue.
    pub batches_dropped: AtomicU64,
    /// Records dropped: on a full queue or in a failed write.
    pub records_dropped: AtomicU64,
    /// Records dropped because their /write failed (part of `records_dropped`).
    pub write_failed_points: AtomicU64,
    /// /write requests that failed.
    pub write_errors: AtomicU64,
    /// Points influxd acknowledged (204).
    pub points_written: AtomicU64,
    /// /write requests acknowledged.
    pub writes: AtomicU64,
    /// Points encoded and queued for the writers.
    pub points_encoded: AtomicU64,
    /// Wall-clock arrival of the first batch, µs since the Unix epoch (0 = none yet).
    pub first_arrival_us: AtomicU64,
    /// Newest stored time, µs since the Unix epoch.
    pub now_us: AtomicU64,
}

impl Counters {
    /// Reads a counter.
    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }

    /// Adds to a counter.
    pub fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }
}
