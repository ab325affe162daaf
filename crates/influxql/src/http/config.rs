//! Settings of the HTTP endpoint.

use std::sync::Arc;
use std::time::Duration;

use loom::ConnectionGate;

use crate::parse::TextLimits;

/// Settings of the HTTP endpoint; `Default` gives the documented defaults.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// When set, every request must carry this token as InfluxDB 1.x
    /// credentials (`p=` parameter, Basic auth password, or
    /// `Authorization: Token …`).
    pub auth_token: Option<String>,
    /// Longest a query may run before it is stopped with an error.
    pub query_timeout: Duration,
    /// Most rows one statement may return.
    pub max_rows: usize,
    /// Largest request body accepted (bytes); larger gets 413.
    pub max_body_bytes: usize,
    /// Largest `/write` body accepted (bytes, as sent and once
    /// decompressed); larger gets 413. InfluxDB's default `max-body-size`.
    pub max_write_bytes: usize,
    /// Time allowed to read a request's headers and body.
    pub read_timeout: Duration,
    /// Queries run at once; more wait.
    pub query_threads: usize,
    /// Threads one statement's `GROUP BY time` buckets are answered on
    /// (`Limits::threads`): the query's own thread and lower-priority
    /// helpers.
    pub statement_threads: usize,
    /// Bounds on a query's text (length, statements); over them is a 400.
    pub text_limits: TextLimits,
    /// At most this many connections open at once; one more is closed
    /// as soon as it is accepted (counted and logged by the gate).
    /// `None`: unbounded.
    pub gate: Option<Arc<ConnectionGate>>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            auth_token: None,
            query_timeout: Duration::from_secs(10),
            max_rows: 100_000,
            max_body_bytes: 1 << 20,
            max_write_bytes: 25_000_000,
            read_timeout: Duration::from_secs(10),
            query_threads: 2,
            statement_threads: 2,
            text_limits: TextLimits::default(),
            gate: None,
        }
    }
}
