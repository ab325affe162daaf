//! `influx-app`: the InfluxDB baseline endpoint. It receives the same framed
//! TCP telemetry stream as loom-app and writes every record as a point of the
//! shared data model ([`telemetry::model`]) to a real influxd through HTTP
//! `/write`, then asks the workload's questions as InfluxQL over `/query`.
//!
//! Pipeline: receiving threads ([`receive`]) → queue → one encoder thread
//! ([`ingest`], line protocol from [`points`]) → bodies → `N` async writers
//! ([`writer`], HTTP client in [`client`]) → influxd. Questions: [`queries`].

pub mod client;
pub mod counters;
mod error;
pub mod ingest;
pub mod points;
pub mod queries;
pub mod receive;
pub mod writer;

pub use error::{chain, Error, Result};

use std::time::Duration;

/// Tuning constants of the app, one place.
#[derive(Debug, Clone)]
pub struct Config {
    /// Batches the receive queue holds before receivers drop (default mode;
    /// loom-app's default too, so both endpoints buffer alike).
    pub queue_capacity: usize,
    /// Encoded bodies waiting for a writer, per writer connection.
    pub bodies_per_connection: usize,
    /// Longest time a point waits for its /write body to fill (then a
    /// shorter body is sent).
    pub max_linger: Duration,
    /// Timeout of one /query request (InfluxDB's percentile over tens of
    /// millions of points takes minutes on a busy machine).
    pub query_timeout: Duration,
    /// Timeout of one /write or /ping request to influxd.
    pub request_timeout: Duration,
    /// Pause of a writer after a failed write.
    pub failure_backoff: Duration,
    /// Least time between two "writes failing" log lines.
    pub error_log_interval: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            queue_capacity: 4096,
            bodies_per_connection: 2,
            max_linger: Duration::from_millis(200),
            request_timeout: Duration::from_secs(30),
            query_timeout: Duration::from_secs(600),
            failure_backoff: Duration::from_millis(50),
            error_log_interval: Duration::from_secs(1),
        }
    }
}
