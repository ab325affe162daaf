//! Counters shared by receivers, the encoder, the writers and the reporter.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// Monotonic counters since app start: the receivers' (see
/// [`endpoint::Counters`]; here "dropped" also counts the points of /write
/// requests that failed) and the encoder's and writers'.
#[derive(Default)]
pub struct Counters {
    /// The receiving side's counters.
    pub recv: Arc<endpoint::Counters>,
    /// Records dropped because their /write failed (part of `recv.records_dropped`).
    pub write_failed_points: AtomicU64,
    /// /write requests that failed.
    pub write_errors: AtomicU64,
    /// Points influxd acknowledged (204).
    pub points_written: AtomicU64,
    /// /write requests acknowledged.
    pub writes: AtomicU64,
    /// Points encoded and queued for the writers.
    pub points_encoded: AtomicU64,
    /// Newest stored time, µs since the Unix epoch.
    pub now_us: AtomicU64,
}

impl Counters {
    /// Reads a counter.
    pub fn get(c: &AtomicU64) -> u64 {
        endpoint::Counters::get(c)
    }

    /// Adds to a counter.
    pub fn add(c: &AtomicU64, n: u64) {
        endpoint::Counters::add(c, n)
    }
}
