//! Counters shared by receivers, the ingest thread and the reporter.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// Monotonic counters since app start: the receivers' (received, dropped on
/// a full queue, skipped after ingest stopped; see [`endpoint::Counters`])
/// and the ingest thread's.
#[derive(Default)]
pub struct Counters {
    /// The receiving side's counters.
    pub recv: Arc<endpoint::Counters>,
    /// The one series limit of every way in (telemetry stream and OTLP),
    /// with its count of refused series.
    pub series: Arc<endpoint::SeriesLimit>,
    /// Records pushed into the engine.
    pub records_ingested: AtomicU64,
    /// Records refused as late: older than their source's newest stored
    /// record (they came later than the reorder window allows; a record's
    /// time is never moved).
    pub records_late: AtomicU64,
    /// Records the engine refused (disk failing and memory full, or a
    /// rejected push): received but not stored.
    pub records_refused: AtomicU64,
    /// Persists that failed (the data stays in memory and is retried).
    pub persist_failures: AtomicU64,
    /// First timestamp stored in this run, µs.
    pub first_us: AtomicU64,
    /// Current time of the data, µs (arrival or newest event time).
    pub now_us: AtomicU64,
    /// OTLP export requests answered with success (durable, or queued
    /// with `--otlp-ack queued`).
    pub otlp_requests: AtomicU64,
    /// OTLP items (spans, log records, data points) acknowledged as
    /// stored; every item received is also counted in `recv.records_received`.
    pub otlp_accepted: AtomicU64,
    /// OTLP items refused and reported in a partial-success response
    /// (series limit, reserved measurement, invalid item, too large, late).
    pub otlp_rejected: AtomicU64,
    /// OTLP requests answered "retry later" (gRPC UNAVAILABLE, HTTP 503)
    /// because the ingest queue was full, ingest had stopped, or the
    /// records could not be made durable in time.
    pub otlp_throttled: AtomicU64,
    /// OTLP requests refused as bad (malformed, too large, unsupported
    /// content type, missing token).
    pub otlp_bad_requests: AtomicU64,
}

impl Counters {
    /// Reads a counter.
    pub fn get(c: &AtomicU64) -> u64 {
        endpoint::Counters::get(c)
    }
}
