//! Counters shared by receivers, the ingest thread and the reporter.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use loom::ConnectionGate;

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
    /// record and than each of its late siblings' (all
    /// `loom::MAX_LATE_GENERATIONS` exist); a record's time is never moved.
    pub records_late: AtomicU64,
    /// Records older than their source's newest stored record (later than
    /// the reorder window) stored at their own time in a late sibling of
    /// the source; also counted in `records_ingested`.
    pub records_late_stored: AtomicU64,
    /// Records of acknowledged senders sent again after a restart and
    /// found stored already (stored once; see `ingest::acks`). Frames
    /// recognised as resent by their sequence number are counted by the
    /// receivers (`recv.duplicate_records`).
    pub records_duplicate: AtomicU64,
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
    /// `/write`'s counters (points stored, refused by reason, late).
    pub write: Arc<WriteCounters>,
    /// Each listener's connection bound, with its counts of connections
    /// refused and closed for idling.
    pub gates: Gates,
}

/// One [`ConnectionGate`] per listener (`--max-connections` each: a flood
/// on one way in cannot lock out the others).
#[derive(Debug)]
pub struct Gates {
    /// The telemetry stream (TCP ingest).
    pub ingest: Arc<ConnectionGate>,
    /// The InfluxDB API.
    pub http: Arc<ConnectionGate>,
    /// OTLP/gRPC.
    pub otlp_grpc: Arc<ConnectionGate>,
    /// OTLP/HTTP.
    pub otlp_http: Arc<ConnectionGate>,
}

impl Gates {
    /// Gates of `max` connections each.
    pub fn new(max: usize) -> Self {
        Gates {
            ingest: ConnectionGate::new("telemetry stream", max),
            http: ConnectionGate::new("InfluxDB API", max),
            otlp_grpc: ConnectionGate::new("OTLP/gRPC", max),
            otlp_http: ConnectionGate::new("OTLP/HTTP", max),
        }
    }

    /// All four, in the order above.
    pub fn all(&self) -> [&Arc<ConnectionGate>; 4] {
        [&self.ingest, &self.http, &self.otlp_grpc, &self.otlp_http]
    }

    /// Connections refused (limit reached) on every listener.
    pub fn refused(&self) -> u64 {
        self.all().iter().map(|g| g.refused_total()).sum()
    }

    /// Connections closed for idling or sending too slowly on every listener.
    pub fn timed_out(&self) -> u64 {
        self.all().iter().map(|g| g.timed_out_total()).sum()
    }
}

/// `--max-connections` unless given: a host's agents and dashboards need
/// far fewer, and 64 receiving threads plus loom-app's own stay under 100.
/// Here rather than in `cli` so the counters (which every ingest path
/// uses) depend on no flag parsing.
pub const DEFAULT_MAX_CONNECTIONS: usize = 64;

impl Default for Gates {
    fn default() -> Self {
        Gates::new(DEFAULT_MAX_CONNECTIONS)
    }
}

impl Counters {
    /// Reads a counter.
    pub fn get(c: &AtomicU64) -> u64 {
        endpoint::Counters::get(c)
    }
}

/// What `/write` counted since start (loom-app's progress, `Final /write`
/// and `STATS` lines print them).
#[derive(Debug, Default)]
pub struct WriteCounters {
    /// Requests answered 204 (every point stored).
    pub requests_ok: AtomicU64,
    /// Requests refused whole (bad parameters, body, token, nothing parsed).
    pub requests_refused: AtomicU64,
    /// Requests answered "retry later" (503: queue full, stopping, not
    /// durable in time).
    pub requests_throttled: AtomicU64,
    /// Lines that were not line protocol (or not UTF-8), each refused alone.
    pub bad_lines: AtomicU64,
    /// Points refused alone, every reason (the sum of the next five).
    pub points_refused: AtomicU64,
    /// Of those: fields that do not fit the measurement's (type or set).
    pub refused_conflict: AtomicU64,
    /// Of those: over the one series limit (`--max-series`).
    pub refused_series_limit: AtomicU64,
    /// Of those: not storable as sent (boolean, sub-µs or pre-1970 time,
    /// names, size, reserved measurement).
    pub refused_unstorable: AtomicU64,
    /// Of those: too late for the reorder window (older than their
    /// series' newest stored point; never stored at another time).
    pub refused_late: AtomicU64,
    /// Of those: refused by the engine.
    pub refused_not_stored: AtomicU64,
    /// Points stored (durable with durable acknowledgements).
    pub points_stored: AtomicU64,
}

impl WriteCounters {
    /// Every counter as (`STATS` key after `write_`, `Final /write` label,
    /// value): the one list both lines print, so neither can leave one out.
    pub fn table(&self) -> [(&'static str, &'static str, u64); 11] {
        let get = Counters::get;
        [
            ("requests_ok", "requests ok", get(&self.requests_ok)),
            (
                "requests_refused",
                "requests refused",
                get(&self.requests_refused),
            ),
            (
                "requests_throttled",
                "requests throttled (retry later)",
                get(&self.requests_throttled),
            ),
            ("bad_lines", "lines unable to parse", get(&self.bad_lines)),
            ("points_stored", "points stored", get(&self.points_stored)),
            (
                "points_refused",
                "points refused",
                get(&self.points_refused),
            ),
            (
                "refused_conflict",
                "refused for a field conflict",
                get(&self.refused_conflict),
            ),
            (
                "refused_series_limit",
                "refused over the series limit",
                get(&self.refused_series_limit),
            ),
            (
                "refused_unstorable",
                "refused as not storable as sent",
                get(&self.refused_unstorable),
            ),
            ("refused_late", "refused late", get(&self.refused_late)),
            (
                "refused_not_stored",
                "refused by the engine",
                get(&self.refused_not_stored),
            ),
        ]
    }
}
