//! The `/write` hook: the query API knows nothing of ingest, so whoever
//! serves writes (loom-app) hands the server a [`WriteSink`]; without one
//! `/write` answers 501.
//!
//! The server reads the body (up to [`super::HttpConfig::max_write_bytes`]),
//! checks credentials exactly as for `/query`, and then awaits the sink on
//! its own runtime, outside the query threads: a write waiting for its
//! points to become durable never holds a query slot.

use std::future::Future;
use std::pin::Pin;

use super::message::Response;

/// One `/write` request, credentials already checked.
#[derive(Debug, Clone, Default)]
pub struct WriteRequest {
    /// Decoded query-string parameters (`db`, `rp`, `precision`, `u`, `p`, …).
    pub params: Vec<(String, String)>,
    /// Headers (names lowercase), e.g. `content-encoding`.
    pub headers: Vec<(String, String)>,
    /// The body as sent (possibly gzip-compressed), at most
    /// `max_write_bytes` long.
    pub body: Vec<u8>,
}

impl WriteRequest {
    /// The first parameter named `name`.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The first header named `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The future a sink answers with.
pub type WriteFuture<'a> = Pin<Box<dyn Future<Output = Response> + Send + 'a>>;

/// Takes `/write` bodies (line protocol) and answers them the way InfluxDB
/// 1.x does (204 when every point is stored, 400 with `{"error": …}` for
/// bad or refused points, …). Must not panic on any body.
pub trait WriteSink: Send + Sync {
    /// Stores what it can of `req` and answers.
    fn write(&self, req: WriteRequest) -> WriteFuture<'_>;
}
