//! Counters of the receiving side, shared by receivers, the app's ingest
//! thread and its reporter.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Monotonic counters since app start. "Received" counts every record of
/// every valid frame; "dropped" the part of it discarded because the queue
/// was full (an app may add records it lost later, e.g. a failed write).
#[derive(Default)]
pub struct Counters {
    /// Connections accepted.
    pub connections: AtomicU64,
    /// Connections closed because of a bad frame.
    pub bad_connections: AtomicU64,
    /// Connections closed because their token was missing or wrong (not
    /// counted in `bad_connections`).
    pub auth_refused: AtomicU64,
    /// Valid frames (batches) received.
    pub batches_received: AtomicU64,
    /// Records in valid frames.
    pub records_received: AtomicU64,
    /// Frames dropped on a full queue.
    pub batches_dropped: AtomicU64,
    /// Records dropped on a full queue.
    pub records_dropped: AtomicU64,
    /// Records not ingested: they arrived after ingest stopped (receivers),
    /// or the app could not store them for a reason it counts here.
    pub records_skipped: AtomicU64,
    /// Frames of acknowledged senders received again after a reconnect
    /// and recognised as held already (not stored twice).
    pub duplicate_frames: AtomicU64,
    /// Records in those frames.
    pub duplicate_records: AtomicU64,
    /// Wall-clock arrival of the first frame, µs since the Unix epoch (0 = none yet).
    pub first_arrival_us: AtomicU64,
    /// Bytes of groups offered to the queue and not yet consumed.
    pub queued_bytes: AtomicU64,
    /// Set when ingest has stopped for good (ablation cut-off, shutdown):
    /// receivers then count arriving records as skipped, not dropped.
    pub ingest_stopped: AtomicBool,
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
